import { InvalidInputError, SummaryOnlyError } from '../errors/input-errors.js';
import type { Session } from '../validation/schemas.js';
import { summaryViewOf } from './documents/document-codec.js';
import { retainedRevisionId } from './retained-revisions.js';
import type { SessionCache } from './session-cache.js';
import type { SessionPersistence } from './session-persistence.js';

/**
 * Session objects the store hands out that are not the live instance: summary-only views
 * and retained revisions. Saving one would overwrite the session with a partial or an old
 * copy, so the store remembers them (weakly: they live as long as the caller keeps them)
 * and save() refuses them. A copy spread from a summary view is refused too, by the
 * document encoders (see `summaryViewOf`).
 */
export class DetachedCopies {
  private readonly summaryViews = new WeakSet<Session>();
  private readonly retainedRevisions = new WeakSet<Session>();

  constructor(
    private readonly cache: SessionCache,
    private readonly persistence: SessionPersistence,
  ) {}

  async loadSummaryView(id: string): Promise<Session> {
    const entry = this.cache.peek(id) ?? (await this.persistence.read(id));
    // A4, B7: the summary only; metadata, provider state and the transcript stay private.
    const view = summaryViewOf(entry.session);
    this.summaryViews.add(view);
    return view;
  }

  async loadRetainedRevision(id: string, revision: number): Promise<Session> {
    const entry = await this.persistence.readRetained(retainedRevisionId(id, revision), id);
    this.retainedRevisions.add(entry.session);
    return entry.session;
  }

  assertSavable(session: Session): void {
    if (this.summaryViews.has(session)) throw new SummaryOnlyError(session.id);
    if (this.retainedRevisions.has(session)) {
      throw new InvalidInputError(
        `This copy of session "${session.id}" is a retained revision; copy what you need into the live session and save that`,
      );
    }
  }
}
