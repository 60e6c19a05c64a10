/**
 * Folder sessions/listing/: the session index behind store.list() (B7): listing it and
 * rebuilding it from the documents (this file), hiding an entry whose document is gone
 * (index-entry-checks.ts), and writing again an entry whose write failed (index-repairs.ts).
 */

import type { StorageAdapter } from '../../adapter/adapter.js';
import { adapterCall } from '../../adapter/adapter-call.js';
import { InvalidInputError } from '../../errors/input-errors.js';
import type { Clock } from '../../time/clock.js';
import { type SessionSummary, sessionSummarySchema } from '../../validation/schemas.js';
import { decodeSession, summaryOf } from '../documents/document-codec.js';
import type { ListOptions, SessionPage } from '../session-types.js';
import { removeEntryWithoutDocument, storedSessionIds } from './index-entry-checks.js';

/**
 * B7: lists summaries from the adapter's index, newest first. A missing or corrupt index
 * is rebuilt from the documents (without filling the session cache, C4). Rotated parents
 * (D2) are hidden unless asked for, and an entry whose document is gone is never shown (it
 * is removed from the index on the way), so a page may hold fewer than `limit` entries.
 * Entries carry the summary fields only (`sessionSummarySchema` drops anything else).
 */
export async function listSessions(
  adapter: StorageAdapter,
  clock: Clock,
  options: ListOptions,
): Promise<SessionPage> {
  const limit = options.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
    throw new InvalidInputError('list(): `limit` must be an integer from 1 to 1000');
  }
  if (
    options.cursor !== undefined &&
    options.cursor !== null &&
    typeof options.cursor !== 'string'
  ) {
    throw new InvalidInputError('list(): `cursor` must be a string from a previous page');
  }
  let cursor = options.cursor ?? null;
  for (let rebuilt = false; ; ) {
    const page = await adapterCall(adapter.name, 'read the session index', () =>
      adapter.listIndex({ cursor, limit }),
    );
    const entries = page.status === 'ok' ? parseEntries(page.entries) : null;
    if (page.status !== 'ok' || entries === null) {
      if (rebuilt) return { sessions: [], nextCursor: null };
      await rebuildIndex(adapter, clock);
      rebuilt = true;
      continue;
    }
    const shown = entries.filter(
      (entry) => options.includeRotated === true || entry.rotatedTo === null,
    );
    const visible = await withoutGhosts(adapter, clock, shown);
    if (visible.length > 0 || page.status !== 'ok' || page.nextCursor === null) {
      return { sessions: visible, nextCursor: page.nextCursor };
    }
    cursor = page.nextCursor;
  }
}

/**
 * B7: the entries whose document exists. The others (ghosts: a document removed out of band,
 * a crash between a removal and its entry's, a quarantine) are left out of the page and
 * removed from the index. A failure to remove one does not fail the listing: it is left out
 * all the same, and the next listing tries again.
 */
async function withoutGhosts(
  adapter: StorageAdapter,
  clock: Clock,
  entries: SessionSummary[],
): Promise<SessionSummary[]> {
  const stored = await storedSessionIds(
    adapter,
    entries.map((entry) => entry.id),
  );
  const ghosts = entries.filter((entry) => !stored.has(entry.id));
  for (const ghost of ghosts) {
    await removeEntryWithoutDocument(adapter, clock, ghost.id).catch(() => undefined);
  }
  return ghosts.length === 0 ? entries : entries.filter((entry) => stored.has(entry.id));
}

function parseEntries(entries: unknown[]): SessionSummary[] | null {
  const parsed: SessionSummary[] = [];
  for (const entry of entries) {
    const result = sessionSummarySchema.safeParse(entry);
    if (!result.success) return null;
    parsed.push(result.data);
  }
  return parsed;
}

/** Rebuilds the index from every readable session document. */
export async function rebuildIndex(adapter: StorageAdapter, clock: Clock): Promise<void> {
  const summaries: SessionSummary[] = [];
  let cursor: string | null = null;
  do {
    const page = await adapterCall(adapter.name, 'list sessions', () =>
      adapter.listDocuments('sessions', { cursor, limit: 500 }),
    );
    for (const id of page.ids) {
      const stored = await adapterCall(adapter.name, 'read a session', () =>
        adapter.getDocument('sessions', id),
      );
      if (stored === null) continue;
      const decoded = decodeSession(id, stored, clock.now());
      // An unreadable document is quarantined when it is loaded, not by a scan.
      if (decoded.ok) summaries.push(summaryOf(decoded.session));
    }
    cursor = page.nextCursor;
  } while (cursor !== null);
  await adapterCall(adapter.name, 'rebuild the session index', () =>
    adapter.replaceIndex(summaries, { durable: true }),
  );
}
