import {
  decodeStoredSession,
  type ReadOnlyOverlay,
  type SessionStore,
  type SessionSummary,
} from '@keepsake/core';
import { UsageError } from '../cli-errors.js';
import type { CommandContext } from '../command-context.js';
import { listAll } from '../migration/list-all.js';
import { formatTime, oneLine, table } from '../text-format.js';

export interface LsOptions {
  limit: string;
  cursor?: string;
  all?: boolean;
  rotated?: boolean;
  json?: boolean;
}

/** A listed session; `unreadable` says why its document does not parse (A2). */
export type ListedSession = SessionSummary & { unreadable?: string };

/** Documents read at once to check a page. */
const CHECKS_AT_ONCE = 16;

/**
 * `keepsake ls <store>`: session summaries, newest first, one page at a time (B7). Read
 * through a read-only session store, so what is listed is what is stored, and nothing is
 * written: an index entry whose document is gone is left out, and a missing index is rebuilt
 * in memory. Each listed session's document is read: one that does not parse is flagged
 * (`unreadable`), not listed as if it were sound (`keepsake repair` quarantines it).
 */
export async function lsCommand(
  context: CommandContext,
  url: string,
  options: LsOptions,
): Promise<void> {
  const limit = Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
    throw new UsageError('--limit must be an integer from 1 to 1000');
  }
  if (options.all === true && options.cursor !== undefined) {
    throw new UsageError('--all lists every page: it does not take --cursor');
  }
  const spec = context.backend(url);
  await context.withStore(spec, 'read', async (store) => {
    let cursor: string | null = options.cursor ?? null;
    const sessions: ListedSession[] = [];
    do {
      const page = await store.list({ cursor, limit, includeRotated: options.rotated === true });
      sessions.push(...(await flagUnreadable(store, page.sessions)));
      cursor = page.nextCursor;
    } while (options.all === true && cursor !== null);
    const unreadable = sessions
      .filter((session) => session.unreadable !== undefined)
      .map((session) => ({ id: session.id, reason: session.unreadable! }));
    // B7: without an index the listing comes from the documents that parse; the others are
    // named here (on the first page), rather than left out as if they were not there.
    const rebuilt = indexRebuiltInMemory(store);
    if (rebuilt && options.cursor === undefined) unreadable.push(...(await unparsed(store)));
    if (options.json === true) {
      await context.printJson({ sessions, nextCursor: cursor, unreadable });
      return;
    }
    if (rebuilt) {
      await context.note(
        'there is no readable index: sessions are listed from their documents (keepsake repair rebuilds it, B7)',
      );
    }
    if (sessions.length === 0 && unreadable.length === 0) {
      await context.note(`no sessions in ${spec.display}`);
    } else {
      const rows = sessions.map((session) =>
        session.unreadable === undefined
          ? [
              session.id,
              formatTime(session.updatedAt),
              String(session.messageCount),
              session.pending ? 'pending' : '',
              oneLine(session.title, 60),
            ]
          : [
              session.id,
              formatTime(session.updatedAt),
              '?',
              'UNREADABLE',
              oneLine(`(does not parse: ${session.unreadable})`, 60),
            ],
      );
      const listed = new Set(sessions.map((session) => session.id));
      for (const { id, reason } of unreadable) {
        if (!listed.has(id))
          rows.push([id, '?', '?', 'UNREADABLE', oneLine(`(does not parse: ${reason})`, 60)]);
      }
      for (const line of table([['ID', 'UPDATED', 'MESSAGES', 'TURN', 'TITLE'], ...rows])) {
        await context.print(line);
      }
    }
    if (cursor !== null) {
      await context.note(`more sessions: run again with --cursor '${cursor}' (or --all)`);
    }
    if (unreadable.length > 0) {
      await context.note(
        `${unreadable.length} session(s) could not be read: ${unreadable.map((session) => session.id).join(', ')} (they do not parse; keepsake repair moves them to quarantine, A2)`,
      );
    }
  });
}

/** Reads each listed session's document: one that does not parse is flagged (A2). */
async function flagUnreadable(
  store: SessionStore,
  summaries: readonly SessionSummary[],
): Promise<ListedSession[]> {
  const listed: ListedSession[] = [];
  for (let start = 0; start < summaries.length; start += CHECKS_AT_ONCE) {
    const slice = summaries.slice(start, start + CHECKS_AT_ONCE);
    const checked = await Promise.all(
      slice.map(async (summary): Promise<ListedSession> => {
        const stored = await store.adapter.getDocument('sessions', summary.id);
        // Gone since the listing: listed as the index has it, as a listing would.
        if (stored === null) return summary;
        const decoded = decodeStoredSession(summary.id, stored, Date.now());
        return decoded.ok ? summary : { ...summary, unreadable: decoded.reason };
      }),
    );
    listed.push(...checked);
  }
  return listed;
}

/** Whether the read-only store's listing rebuilt a missing or unreadable index, in memory. */
function indexRebuiltInMemory(store: SessionStore): boolean {
  const held = (store.adapter as Partial<ReadOnlyOverlay>).heldWrites ?? [];
  return held.some((write) => write.kind === 'index' && write.item === 'index');
}

/** Every session document that does not parse (none of them is in a rebuilt index). */
async function unparsed(store: SessionStore): Promise<Array<{ id: string; reason: string }>> {
  const found: Array<{ id: string; reason: string }> = [];
  for await (const id of listAll(store.adapter, 'sessions')) {
    const stored = await store.adapter.getDocument('sessions', id);
    if (stored === null) continue;
    const decoded = decodeStoredSession(id, stored, Date.now());
    if (!decoded.ok) found.push({ id, reason: decoded.reason });
  }
  return found;
}
