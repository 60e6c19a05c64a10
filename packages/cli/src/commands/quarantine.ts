import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import {
  assertValidId,
  type Collection,
  decodeStoredSession,
  encodeSessionDocument,
  lifecycleStateSchema,
  type QuarantinedDocument,
  type StorageAdapter,
  type StoredDocument,
} from '@keepsake/core';
import { CliError, NothingThereError, TargetNotEmptyError, UsageError } from '../cli-errors.js';
import type { CommandContext } from '../command-context.js';
import { sessionSummary } from '../session-summary.js';
import { formatTime, oneLine, table } from '../text-format.js';

/**
 * `keepsake quarantine ls <store>`: what was moved aside because it did not parse (A2),
 * newest first, with whether a document of that id is stored again now.
 */
export async function quarantineLsCommand(
  context: CommandContext,
  url: string,
  options: { json?: boolean },
): Promise<void> {
  const spec = context.backend(url);
  await context.withAdapter(spec, 'read', async (adapter) => {
    const entries = [...(await adapter.listQuarantined())].sort(
      (left, right) => right.quarantinedAt - left.quarantinedAt,
    );
    const rows = [];
    for (const entry of entries) {
      rows.push({ ...entry, storedAgain: await adapter.hasDocument(entry.collection, entry.id) });
    }
    if (options.json === true) {
      await context.printJson({ quarantined: rows });
      return;
    }
    if (rows.length === 0) {
      await context.note(`nothing is quarantined in ${spec.display}`);
      return;
    }
    const lines = table([
      ['QUARANTINED', 'DOCUMENT', 'STORED AGAIN', 'REASON', 'LOCATION'],
      ...rows.map((row) => [
        formatTime(row.quarantinedAt),
        `${row.collection}/${row.id}`,
        row.storedAgain ? 'yes' : 'no',
        oneLine(row.reason, 60),
        row.location,
      ]),
    ]);
    for (const line of lines) await context.print(line);
  });
}

export interface RestoreOptions {
  as?: string;
  file?: string;
}

/**
 * `keepsake quarantine restore <store> <location>`: puts a quarantined document back, from
 * its quarantined bytes or, when those do not parse, from a repaired copy (`--file`). It is
 * written as a new document (never over one: a session stored again under that id meanwhile
 * stays, use `--as` to restore beside it), and the quarantined bytes stay where they are.
 */
export async function quarantineRestoreCommand(
  context: CommandContext,
  url: string,
  location: string,
  options: RestoreOptions,
): Promise<void> {
  const spec = context.backend(url);
  await context.withAdapter(spec, 'write', async (adapter) => {
    const entry = (await adapter.listQuarantined()).find((item) => item.location === location);
    if (entry === undefined) {
      throw new NothingThereError(
        `Nothing is quarantined at ${location} in ${spec.display} (see keepsake quarantine ls)`,
      );
    }
    if (options.as !== undefined && entry.collection !== 'sessions') {
      throw new UsageError('--as renames a session; any other document keeps its id');
    }
    const id = options.as ?? entry.id;
    if (options.as !== undefined) assertValidId(options.as);
    const stored = await restoredBytes(context, adapter, entry, options.file);
    const revision = await restore(adapter, entry, id, stored, options.file ?? entry.location);
    await context.print(
      `restored ${entry.collection}/${id} at revision ${revision} from ${options.file ?? location}; the quarantined copy stays at ${location}`,
    );
  });
}

/** The document to restore: the quarantined bytes (base, then deltas, a line each), or a file. */
async function restoredBytes(
  context: CommandContext,
  adapter: StorageAdapter,
  entry: QuarantinedDocument,
  file: string | undefined,
): Promise<StoredDocument> {
  if (file !== undefined) {
    const path = resolve(context.io.cwd, file);
    const text = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') throw new NothingThereError(`No file at ${path}`);
      throw error;
    });
    try {
      // A repaired copy may be pretty-printed: stored, a document is one line of JSON.
      return { revision: 0, base: JSON.stringify(JSON.parse(text)), deltas: [] };
    } catch {
      throw new CliError('badInput', `${path} is not one JSON document`);
    }
  }
  if (adapter.readQuarantined === undefined) {
    throw new UsageError(
      `the ${adapter.name} adapter cannot read quarantined bytes back (it does not implement readQuarantined); the bytes are at ${entry.location}: save the document as JSON to a file and restore it with --file <path>`,
    );
  }
  const bytes = await adapter.readQuarantined(entry.location);
  if (bytes === null) throw new NothingThereError(`The bytes at ${entry.location} are gone`);
  // JSON text holds no raw newline, so the lines are the base and each delta.
  const [base = '', ...deltas] = bytes.split('\n').filter((line) => line !== '');
  return { revision: 0, base, deltas };
}

async function restore(
  adapter: StorageAdapter,
  entry: QuarantinedDocument,
  id: string,
  stored: StoredDocument,
  from: string,
): Promise<number> {
  const collection: Collection = entry.collection;
  if (collection === 'lifecycle') {
    let value: unknown;
    try {
      value = JSON.parse(stored.base);
    } catch {
      value = undefined;
    }
    const parsed = lifecycleStateSchema.safeParse(value);
    if (!parsed.success || parsed.data.sessionId !== id) {
      throw unreadable(from, 'it is not the lifecycle state of this session');
    }
    await write(adapter, collection, id, 1, JSON.stringify(parsed.data));
    return 1;
  }
  if (collection !== 'sessions' && collection !== 'revisions') {
    // Run records, checkpoints and checkpoint writes: JSON whose meaning belongs to core's
    // runs and to @keepsake/langgraph; restored as one JSON text, checked on their next read.
    let text: string;
    try {
      if (stored.deltas.length > 0) throw new Error('deltas');
      text = JSON.stringify(JSON.parse(stored.base));
    } catch {
      throw unreadable(from, `it is not one JSON document of the ${collection} collection`);
    }
    await write(adapter, collection, id, 1, text);
    return 1;
  }
  const sessionId =
    collection === 'sessions' ? entry.id : entry.id.slice(0, entry.id.lastIndexOf('.'));
  const decoded = decodeStoredSession(sessionId, stored, Date.now());
  if (!decoded.ok) throw unreadable(from, decoded.reason);
  // B5: above every revision retained for the id, so a later shrink never meets its own.
  const revision = collection === 'sessions' ? (await highestRetainedRevision(adapter, id)) + 1 : 1;
  const session = { ...decoded.session, id, revision };
  await write(adapter, collection, id, revision, encodeSessionDocument(session));
  if (collection === 'sessions') {
    await adapter.putIndexEntry(sessionSummary(session), { durable: true });
  }
  return revision;
}

async function write(
  adapter: StorageAdapter,
  collection: Collection,
  id: string,
  revision: number,
  text: string,
): Promise<void> {
  const result = await adapter.putDocument(
    collection,
    id,
    { kind: 'full', revision, text },
    { expectedRevision: null, durable: true },
  );
  if (!result.ok) {
    throw new TargetNotEmptyError(
      `${collection}/${id} is stored again (revision ${result.currentRevision}); nothing was overwritten.${collection === 'sessions' ? ' Restore beside it with --as <new-id>.' : ''}`,
    );
  }
}

async function highestRetainedRevision(
  adapter: StorageAdapter,
  sessionId: string,
): Promise<number> {
  let highest = 0;
  let cursor: string | null = null;
  do {
    const page = await adapter.listDocuments('revisions', {
      prefix: `${sessionId}.`,
      cursor,
      limit: 500,
    });
    for (const retainedId of page.ids) {
      highest = Math.max(highest, Number(retainedId.slice(sessionId.length + 1)) || 0);
    }
    cursor = page.nextCursor;
  } while (cursor !== null);
  return highest;
}

function unreadable(from: string, reason: string): CliError {
  return new CliError(
    'problemsFound',
    `${from} does not parse (${reason}). Write a repaired copy of the document to a file and restore it with --file <path>.`,
  );
}
