/**
 * Runs in a process of its own (see sections/fs/recovery.ts): prepares a store left mid-run
 * by a crash, or cold-starts one and recovers every session, reporting time and peak memory.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SessionStore } from '@keepsake/core';
import { durableReplace } from '../baselines/durable-replace.js';
import { reportFromWorker, workerInput } from '../harness/child-process.js';
import { mapConcurrently } from '../harness/measure.js';
import { openFsStore } from '../sections/fs/keepsake-fs.js';
import { plainMessages, text } from '../workload/messages.js';
import { type PlainPendingSession, TOKEN_TEXT_LENGTH } from '../workload/recovery-workload.js';

export type RecoveryWorkerInput =
  | {
      readonly mode: 'prepare-keepsake';
      readonly directory: string;
      readonly sessions: number;
      readonly messagesPerSession: number;
      readonly eventsPerRun: number;
    }
  | { readonly mode: 'idle' }
  | { readonly mode: 'recover-keepsake'; readonly directory: string; readonly concurrency: number }
  | { readonly mode: 'recover-baseline'; readonly directory: string; readonly concurrency: number };

export interface RecoveryWorkerResult {
  readonly milliseconds: number;
  readonly recovered: number;
  /** Peak resident set size of the whole process (Node itself included), in bytes. */
  readonly peakRssBytes: number;
}

const input = workerInput<RecoveryWorkerInput>();

switch (input.mode) {
  case 'prepare-keepsake': {
    await prepareKeepsake(input);
    // A crash mid-run: no close(), no flush, no completed run. SIGKILL loses nothing the
    // kernel holds, so once the parent syncs, the disk holds what the crash left.
    reportFromWorker({ milliseconds: 0, recovered: 0, peakRssBytes: 0 });
    process.kill(process.pid, 'SIGKILL');
    break;
  }
  case 'idle':
    // The floor under both contenders' peak: Node with this worker's modules loaded.
    reportFromWorker({
      milliseconds: 0,
      recovered: 0,
      peakRssBytes: process.resourceUsage().maxRSS * 1024,
    });
    break;
  case 'recover-keepsake':
    reportFromWorker(await recoverKeepsake(input.directory, input.concurrency));
    break;
  case 'recover-baseline':
    reportFromWorker(await recoverBaseline(input.directory, input.concurrency));
    break;
}

async function prepareKeepsake(
  options: Extract<RecoveryWorkerInput, { mode: 'prepare-keepsake' }>,
): Promise<void> {
  // Token events are not fsynced one by one here (`terminal` durability): the disk ends up
  // the same once the parent flushes the page cache, in a fraction of the time.
  const store = openFsStore(options.directory, { journal: { durability: 'terminal' } });
  const indexes = Array.from({ length: options.sessions }, (_, index) => index);
  await mapConcurrently(indexes, 16, async (index) => {
    const session = await store.create({
      title: `session ${index}`,
      messages: plainMessages(options.messagesPerSession),
    });
    const run = await store.beginRun(session.id, {
      userMessage: { role: 'user', content: 'Summarize our conversation.' },
    });
    for (let event = 0; event < options.eventsPerRun; event++) {
      await run.append({ type: 'token', data: { text: text(TOKEN_TEXT_LENGTH, event) } });
    }
  });
}

async function recoverKeepsake(
  directory: string,
  concurrency: number,
): Promise<RecoveryWorkerResult> {
  const started = performance.now();
  // Default cache size: what a restarted server holds after loading every session.
  const store: SessionStore = openFsStore(directory, { recovery: { graceMs: 0 } });
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await store.list({ cursor, limit: 500 });
    ids.push(...page.sessions.map((summary) => summary.id));
    cursor = page.nextCursor;
  } while (cursor !== null);
  let recovered = 0;
  await mapConcurrently(ids, concurrency, async (id) => {
    const session = await store.load(id);
    if (session.pending !== null) throw new Error(`session ${id} still has a pending turn`);
    recovered++;
  });
  const milliseconds = performance.now() - started;
  const peakRssBytes = process.resourceUsage().maxRSS * 1024;
  await store.close();
  return { milliseconds, recovered, peakRssBytes };
}

/**
 * The hand-rolled equivalent: read every session file; for each with a pending turn, read
 * its journal (JSON lines), fold the tokens into an assistant message after the user turn,
 * add an interruption marker, clear the pending turn and replace the file durably.
 */
async function recoverBaseline(
  directory: string,
  concurrency: number,
): Promise<RecoveryWorkerResult> {
  const started = performance.now();
  const sessionsDirectory = join(directory, 'sessions');
  const names = await readdir(sessionsDirectory);
  let recovered = 0;
  await mapConcurrently(names, concurrency, async (name) => {
    const path = join(sessionsDirectory, name);
    const session = JSON.parse(await readFile(path, 'utf8')) as PlainPendingSession;
    if (session.pending === null) return;
    const journal = await readFile(
      join(directory, 'journals', `${session.pending.runId}.jsonl`),
      'utf8',
    );
    const tokens: string[] = [];
    for (const line of journal.split('\n')) {
      if (line === '') continue;
      const record = JSON.parse(line) as { type: string; data: { text?: string } };
      if (record.type === 'token' && typeof record.data.text === 'string')
        tokens.push(record.data.text);
    }
    const now = Date.now();
    const base = session.messages.length;
    session.messages.push(
      { id: `r${base}`, createdAt: now, ...session.pending.userMessage },
      { id: `r${base + 1}`, createdAt: now, role: 'assistant', content: tokens.join('') },
      { id: `r${base + 2}`, createdAt: now, role: 'assistant', content: '[interrupted]' },
    );
    session.pending = null;
    session.updatedAt = now;
    await durableReplace(path, JSON.stringify(session));
    recovered++;
  });
  const milliseconds = performance.now() - started;
  return { milliseconds, recovered, peakRssBytes: process.resourceUsage().maxRSS * 1024 };
}
