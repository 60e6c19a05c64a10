import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createSessionStore, NotFoundError } from '@keepsake/core';
import { describe, expect, it } from 'vitest';
import { fsAdapter } from '../src/index.js';
import { spawnFixture, tempDirectory } from './helpers.js';

/**
 * B1/B3/E2/E3 with real crashes: a child process saves, runs, appends and checkpoints in a
 * loop (test/fixtures/crash-child.ts) and is SIGKILLed at a random instant, again and again.
 * After each kill a fresh store on the same directory checks that every write the child
 * acknowledged is there, every document parses, every journal is a gap-free prefix of what
 * was appended, and nothing but the two sessions is listed (no temp file, no stray).
 *
 * The next child is started while the current one runs and waits for "go", so process
 * start-up does not count against the time budget.
 */
const KILLS = Number(process.env.KEEPSAKE_CRASH_KILLS ?? 200);
/** Kills per pair of sessions: a new pair now and then keeps documents small and the test fast. */
const KILLS_PER_EPOCH = 50;
const epochOf = (child: number) => Math.floor(child / KILLS_PER_EPOCH);
const sessionsOf = (epoch: number) => [`crash-${epoch}`, `Crash-${epoch}`];
/** A child that acknowledges nothing for this long is stuck: fail instead of waiting forever. */
const CHILD_STALL_MS = 30_000;
/** Children started ahead of time, waiting for "go". */
const READY_AHEAD = 3;

interface Acknowledged {
  /** Message ids per session, in the order they were acknowledged. */
  messages: Map<string, string[]>;
  /** Highest acknowledged sequence per `<session>/<run>`. */
  records: Map<string, number>;
}

interface Child {
  process: ChildProcess;
  stderr: string[];
  /** Resolves once the child has started and waits for "go". */
  ready: Promise<void>;
  /** Resolves with the first acknowledged write (or the child's exit). */
  working: Promise<void>;
  lines: string[];
}

function startChild(directory: string, index: number): Child {
  const label = `k${index}`;
  const epoch = String(epochOf(index));
  const child = spawnFixture('crash-child.ts', [directory, label, epoch]);
  let markReady!: () => void;
  let markWorking!: () => void;
  const state: Child = {
    process: child,
    stderr: [],
    lines: [],
    ready: new Promise((resolve) => {
      markReady = resolve;
    }),
    working: new Promise((resolve) => {
      markWorking = resolve;
    }),
  };
  let buffered = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    const complete = buffered.split('\n');
    buffered = complete.pop() ?? '';
    for (const line of complete) {
      if (line === '{"kind":"ready"}') {
        markReady();
      } else {
        state.lines.push(line);
        markWorking();
      }
    }
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => state.stderr.push(chunk));
  child.on('exit', () => {
    markReady();
    markWorking();
  });
  return state;
}

function record(acknowledged: Acknowledged, line: string): void {
  const event = JSON.parse(line) as {
    kind: 'message' | 'record';
    sessionId: string;
    id?: string;
    runId?: string;
    sequence?: number;
  };
  if (event.kind === 'message') {
    const list = acknowledged.messages.get(event.sessionId) ?? [];
    list.push(event.id as string);
    acknowledged.messages.set(event.sessionId, list);
  } else {
    const key = `${event.sessionId}/${event.runId}`;
    acknowledged.records.set(
      key,
      Math.max(acknowledged.records.get(key) ?? 0, event.sequence ?? 0),
    );
  }
}

/** Whether `expected` appears in `actual` in order (other items may sit between). */
function isSubsequence(expected: string[], actual: string[]): boolean {
  let position = 0;
  for (const item of actual) if (item === expected[position]) position++;
  return position === expected.length;
}

const finishedRuns = new Set<string>();
const TERMINAL = new Set(['done', 'error', 'cancel', 'tool_limit', 'interrupted']);

async function verify(directory: string, acknowledged: Acknowledged, epoch: number): Promise<void> {
  const known = Array.from({ length: epoch + 1 }, (_, index) => sessionsOf(index)).flat();
  const adapter = fsAdapter({ directory });
  const store = createSessionStore({ adapter, recovery: { graceMs: 3_600_000 } });
  try {
    for (const sessionId of sessionsOf(epoch)) {
      const expected = acknowledged.messages.get(sessionId) ?? [];
      let present: string[] = [];
      try {
        const session = await store.load(sessionId);
        present = session.messages.map((message) => message.id);
        if (session.pending) present.push(session.pending.userMessage.id);
      } catch (error) {
        if (!NotFoundError.isInstance(error)) throw error;
      }
      expect(isSubsequence(expected, present), `${sessionId}: acknowledged messages lost`).toBe(
        true,
      );
      for (const runId of await store.listRuns(sessionId)) {
        // A journal that ended in a terminal record was checked already and can no longer
        // change: the run that wrote it is dead, and recovery appends only to open journals.
        if (finishedRuns.has(`${sessionId}/${runId}`)) continue;
        const journal = await store.readJournal(sessionId, runId);
        const last = journal.records.at(-1)?.type ?? '';
        if (TERMINAL.has(last)) finishedRuns.add(`${sessionId}/${runId}`);
        const sequences = journal.records.map((entry) => entry.sequence);
        expect(sequences).toEqual(sequences.map((_, index) => index + 1));
        expect(journal.gap).toBeNull();
        const tokens = journal.records.filter((entry) => entry.type === 'token');
        expect(tokens.every((entry) => entry.data.text === 't')).toBe(true);
        const lastAcknowledged = acknowledged.records.get(`${sessionId}/${runId}`) ?? 0;
        expect(
          sequences.length,
          `${sessionId}/${runId} lost acknowledged events`,
        ).toBeGreaterThanOrEqual(lastAcknowledged);
      }
    }
    const listed = (await store.list({ limit: 100 })).sessions.map((entry) => entry.id);
    expect(listed.every((id) => known.includes(id))).toBe(true);
    const documents = await adapter.listDocuments('sessions', { cursor: null, limit: 100 });
    expect(documents.ids.every((id) => known.includes(id))).toBe(true);
    expect(await store.quarantined()).toEqual([]);
  } finally {
    await store.close();
  }
}

describe('crash test', () => {
  it(`B1: a writer SIGKILLed ${KILLS} times at random instants never loses an acknowledged write`, async () => {
    const directory = await tempDirectory();
    const acknowledged: Acknowledged = { messages: new Map(), records: new Map() };
    const waiting = Array.from({ length: READY_AHEAD }, (_, index) => startChild(directory, index));
    let totalAcknowledged = 0;
    for (let kill = 0; kill < KILLS; kill++) {
      const current = waiting.shift() as Child;
      waiting.push(startChild(directory, kill + READY_AHEAD));
      await current.ready;
      const exited = once(current.process, 'exit');
      current.process.stdin?.write('go\n');
      // The kill lands at a random instant of the child's work, not during its start-up.
      const stalled = await Promise.race([
        current.working.then(() => false),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(true), CHILD_STALL_MS).unref()),
      ]);
      expect(stalled, `child ${kill} made no progress: ${current.stderr.join('')}`).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 40));
      current.process.kill('SIGKILL');
      const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];
      const failure = current.stderr.join('');
      expect(failure, `child ${kill} failed on its own`).not.toContain('crash child failed');
      expect({ code, signal }).toEqual({ code: null, signal: 'SIGKILL' });
      for (const line of current.lines) record(acknowledged, line);
      totalAcknowledged += current.lines.length;
      await verify(directory, acknowledged, epochOf(kill));
    }
    for (const child of waiting) {
      const exited = once(child.process, 'exit');
      child.process.kill('SIGKILL');
      await exited;
    }
    // The children did real work between the kills.
    expect(totalAcknowledged).toBeGreaterThan(KILLS);
  }, 300_000);
});
