/**
 * Runs in a process of its own with --expose-gc (see sections/fs/memory.ts): loads every
 * session of a directory into memory and reports the heap it took per session.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { reportFromWorker, workerInput } from '../harness/child-process.js';
import { openFsStore } from '../sections/fs/keepsake-fs.js';
import type { PlainSessionDocument } from '../workload/messages.js';

export interface MemoryWorkerInput {
  readonly mode: 'keepsake' | 'plain-objects';
  readonly directory: string;
  readonly sessions: number;
}

export interface MemoryWorkerResult {
  /** Heap and off-heap bytes retained per loaded session, after garbage collection. */
  readonly bytesPerSession: number;
  readonly loaded: number;
}

const collect = (globalThis as { gc?: () => void }).gc;
if (collect === undefined) throw new Error('the memory worker needs node --expose-gc');

/** Heap plus off-heap memory in use once everything unreachable is collected. */
function retainedBytes(): number {
  collect?.();
  collect?.();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.external + usage.arrayBuffers;
}

const input = workerInput<MemoryWorkerInput>();

if (input.mode === 'keepsake') {
  const store = openFsStore(input.directory, { cache: { maxSessions: input.sessions * 2 } });
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await store.list({ cursor, limit: 500 });
    ids.push(...page.sessions.map((summary) => summary.id));
    cursor = page.nextCursor;
  } while (cursor !== null);
  // Load and drop one session first, so the store's lazily built parts are in the baseline.
  await store.load(ids[0] as string);
  const before = retainedBytes();
  for (const id of ids.slice(1)) await store.load(id);
  const after = retainedBytes();
  const loaded = ids.length - 1;
  reportFromWorker({
    bytesPerSession: (after - before) / loaded,
    loaded,
  } satisfies MemoryWorkerResult);
  await store.close();
} else {
  const names = await readdir(input.directory);
  const cache = new Map<string, PlainSessionDocument>();
  const first = JSON.parse(await readFile(join(input.directory, names[0] as string), 'utf8'));
  cache.set(first.id, first);
  const before = retainedBytes();
  for (const name of names.slice(1)) {
    const session = JSON.parse(
      await readFile(join(input.directory, name), 'utf8'),
    ) as PlainSessionDocument;
    cache.set(session.id, session);
  }
  const after = retainedBytes();
  const loaded = cache.size - 1;
  reportFromWorker({
    bytesPerSession: (after - before) / loaded,
    loaded,
  } satisfies MemoryWorkerResult);
}
