/**
 * E2, E6, F1, F3 with real processes and real kills (randomized): worker processes
 * (`harness/stream-worker.ts`) stream answers into two shared sessions and take each other's
 * answers over (a cancel from another instance, a repair past the grace period), while the
 * test SIGKILLs one at random now and then, often while another waits on what it holds (a
 * journal lock, a half-done append). The in-process model cannot do this: its instances
 * share one process, so nothing they hold is ever left by a dead one. An fs defect of this
 * kind (a takeover that broke a dead writer's stale lock opened the journal without the
 * appends it had acknowledged) was found by review, not by the suite; this section is
 * here so the suite finds that class.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { type Session, systemClock } from '@keepsake/core';
import { expect } from 'vitest';
import type { TestEnvironment } from '../harness/environment.js';
import { NO_SECOND_PROCESS_NOTE } from '../harness/not-verified.js';
import { seededRandom } from '../harness/seeded-random.js';
import type { SpecRegistrar } from '../harness/suite.js';

const WORKERS = 3;
/**
 * Kills per run: with the fs takeover defect put back, about one run in four of 16 kills
 * failed, so 24 by default; `KEEPSAKE_MODEL_SIZE=large` (the soak) makes it 200.
 */
const KILLS = process.env.KEEPSAKE_MODEL_SIZE === 'large' ? 200 : 24;
/** About a third of a second per kill on a loaded 2-core machine; generous on top. */
const TIMEOUT_MS = 30_000 + KILLS * 1_500;
/**
 * How long a kill waits for an append acknowledged since the previous kill. A worker takes
 * from a tenth of a second to over a second to start (Node, the initializer module, a
 * connection), and on a loaded machine a schedule of fixed pauses killed every worker before
 * it had appended anything (CI: 24 kills, 0 acknowledged appends). Waiting for progress
 * keeps every kill among streaming workers; none within this long is a stall, reported.
 */
const PROGRESS_LIMIT_MS = 20_000;

interface Ack {
  readonly sessionId: string;
  readonly runId: string;
  readonly sequence: number;
  readonly text: string;
}

interface Worker {
  readonly label: string;
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly stderr: string[];
  killed: boolean;
  /** When its last acknowledgement arrived: a worker mid-stream holds the most. */
  lastAck: number;
}

/** The compiled worker next to this file, or its source when the suite runs from src/. */
function workerScript(): string {
  const compiled = fileURLToPath(new URL('../harness/stream-worker.js', import.meta.url));
  return existsSync(compiled)
    ? compiled
    : fileURLToPath(new URL('../harness/stream-worker.ts', import.meta.url));
}

/** The run's answer in a transcript: its assistant messages that are not markers. */
function answerOf(session: Session, runId: string): string {
  return session.messages
    .filter(
      (message) =>
        message.runId === runId &&
        message.role === 'assistant' &&
        message.marker === undefined &&
        typeof message.content === 'string',
    )
    .map((message) => message.content as string)
    .join('');
}

/**
 * Seeds that failed on S3 in CI (issue 35): a turn repaired before its run's first record
 * (the worker's first append slower than the grace under load) left the run unfenced, and
 * its acknowledged tokens landed in a journal no answer folded. The seed replays the
 * choices, not the timing, so these keep the same schedule of kills and takeovers running.
 */
const REGRESSION_SEEDS = [1636885122, 214541501];

export function defineProcessKillTests(suite: SpecRegistrar): void {
  if (!suite.context.capabilities.sharedAcrossProcesses) return;
  const title =
    'randomized, real processes: workers stream into shared sessions and take over each other’s answers while one is SIGKILLed at random: every acknowledged append is in its journal at its sequence, once, and in the stored answer: an append after another instance repaired the turn is refused, never acknowledged (E6, F1, F3, D4)';
  const chosen = process.env.KEEPSAKE_MODEL_SEED;
  suite.test(
    'E2',
    title,
    (env) => runKills(env, Number(chosen ?? Math.floor(Math.random() * 2 ** 31))),
    { timeoutMs: TIMEOUT_MS },
  );
  // A seed given on the command line replays that one alone.
  if (chosen !== undefined) return;
  for (const seed of REGRESSION_SEEDS) {
    suite.test('E2', `${title}, regression seed ${seed}`, (env) => runKills(env, seed), {
      timeoutMs: TIMEOUT_MS,
    });
  }

  async function runKills(env: TestEnvironment, seed: number): Promise<void> {
    const moduleFile = suite.context.initializer.initializerModule;
    if (moduleFile === undefined) {
      env.notVerifiedNote = NO_SECOND_PROCESS_NOTE;
      return;
    }
    // The seed replays the choices (who dies when, what each worker does), not the timing.
    const context = `seed ${seed} (KEEPSAKE_MODEL_SEED)`;
    // The test's choices (which worker dies when, the workers' seeds) follow from `seed`.
    const next = seededRandom(seed);
    const creator = await env.openStore({ clock: systemClock });
    const ids = [env.id(), env.id()];
    for (const id of ids) await creator.store.create({ id }, { fsync: true });
    await creator.store.close();

    const acks: Ack[] = [];
    const errors: string[] = [];
    const startedLabels: string[] = [];
    // Acknowledged appends when the last kill landed: the next waits for one more.
    let acksAtKill = 0;
    const workers: Worker[] = [];
    const start = () => {
      const label = `w${workers.length}`;
      const workerSeed = String(Math.floor(next() * 2 ** 31));
      const child = spawn(
        process.execPath,
        [workerScript(), moduleFile, env.namespace, ids.join(','), workerSeed, label],
        // stdin stays open while this process lives: the worker ends when it closes, so
        // a test that times out or a runner that dies never leaves workers behind.
        { stdio: ['pipe', 'pipe', 'pipe'] },
      );
      const stderr: string[] = [];
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
        (resolve) => child.on('exit', (code, signal) => resolve({ code, signal })),
      );
      const worker: Worker = { label, child, exited, stderr, killed: false, lastAck: 0 };
      let pending = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        pending += chunk.toString();
        const lines = pending.split('\n');
        // A line cut by the kill has no newline: it never counts.
        pending = lines.pop()!;
        for (const line of lines) {
          const parsed = JSON.parse(line) as { ack?: Ack; error?: unknown; started?: unknown };
          if (parsed.started !== undefined) startedLabels.push(label);
          if (parsed.ack !== undefined) {
            acks.push(parsed.ack);
            worker.lastAck = performance.now();
          }
          if (parsed.error !== undefined) errors.push(`${label}: ${JSON.stringify(parsed.error)}`);
        }
      });
      child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
      workers.push(worker);
    };
    const kill = async (worker: Worker) => {
      worker.killed = true;
      worker.child.kill('SIGKILL');
      await worker.exited;
    };
    /** Resolves once an append was acknowledged after `count` of them; false on a stall. */
    const progressAfter = async (count: number): Promise<boolean> => {
      const deadline = performance.now() + PROGRESS_LIMIT_MS;
      while (acks.length <= count) {
        if (performance.now() > deadline) return false;
        await sleep(10);
      }
      return true;
    };
    let stalled: string | null = null;
    try {
      for (let index = 0; index < WORKERS; index++) start();
      for (let round = 0; round < KILLS; round++) {
        if (!(await progressAfter(acksAtKill))) {
          stalled = `no append acknowledged within ${PROGRESS_LIMIT_MS} ms of ${round === 0 ? 'the start' : `kill ${round}`} (${acks.length} so far; workers started: ${startedLabels.join(', ') || 'none'})`;
          break;
        }
        await sleep(100 + next() * 300);
        acksAtKill = acks.length;
        const alive = workers.filter((worker) => !worker.killed);
        // Mostly the one streaming right now (it holds what the others wait on), else any.
        const streaming = alive.reduce((latest, worker) =>
          worker.lastAck > latest.lastAck ? worker : latest,
        );
        await kill(next() < 0.7 ? streaming : alive[Math.floor(next() * alive.length)]!);
        start();
      }
      await sleep(300);
    } finally {
      await Promise.all(workers.filter((worker) => !worker.killed).map(kill));
    }
    for (const worker of workers) {
      const { code, signal } = await worker.exited;
      expect(
        signal,
        `${context}: worker ${worker.label} ended by itself (exit ${code}): ${worker.stderr.join('')}`,
      ).toBe('SIGKILL');
    }
    expect(errors, `${context}: rejections other than the contract's typed refusals`).toEqual([]);
    expect(stalled, `${context}: the workers stopped making progress`).toBeNull();
    expect(acks.length, `${context}: the workers acknowledged appends`).toBeGreaterThan(20);

    // Another instance, every worker dead: each session's dead run is repaired on load.
    const checker = await env.openStore({ clock: systemClock, recovery: { graceMs: 0 } });
    const sessions = new Map<string, Session>();
    for (const id of ids) sessions.set(id, await checker.store.load(id));
    const byRun = new Map<string, Ack[]>();
    for (const ack of acks) byRun.set(ack.runId, [...(byRun.get(ack.runId) ?? []), ack]);
    for (const [runId, runAcks] of byRun) {
      const { sessionId } = runAcks[0]!;
      const read = await checker.store.readJournal(sessionId, runId, { limit: 100_000 });
      const tokens = read.records.filter((record) => record.type === 'token');
      const stored = new Map(tokens.map((record) => [record.sequence, record.data.text]));
      for (const ack of runAcks) {
        expect(
          stored.get(ack.sequence),
          `${context}: run ${runId} of ${sessionId}, sequence ${ack.sequence}, acknowledged to its worker (E2)`,
        ).toBe(ack.text);
      }
      const texts = tokens.map((record) => String(record.data.text));
      expect(new Set(texts).size, `${context}: run ${runId}: each token once (E2)`).toBe(
        texts.length,
      );
      // D4: an append either lands before another instance's crash record (and the repair
      // folds it into the answer) or is refused (RunTakenOverError): every acknowledged
      // token is in the stored answer, never only in the journal — whether the turn was
      // repaired after the run's last record, before its first one, or never.
      const session = sessions.get(sessionId)!;
      const acknowledged = runAcks.map((ack) => ack.text).join('');
      const answer = answerOf(session, runId);
      if (!answer.startsWith(acknowledged)) {
        const journal = read.records.map((record) => `${record.sequence}:${record.type}`);
        const transcript = session.messages.map(
          (message) =>
            `${message.role}${message.marker === undefined ? '' : `[${message.marker.type}]`} ${message.runId ?? '-'} ${JSON.stringify(message.content).slice(0, 40)}`,
        );
        expect.fail(
          `${context}: run ${runId}: the stored answer ${JSON.stringify(answer)} does not start with every acknowledged token ${JSON.stringify(acknowledged)} (E6, F1)\njournal: ${journal.join(' ')}\ntranscript:\n  ${transcript.join('\n  ')}`,
        );
      }
      // E5, F1: every run ends. A kill between complete()'s save and its seal leaves an
      // answered turn with an open journal, which closeAnsweredRun ends as completed; every
      // other run's journal already says how it ended (its own ending, a cancel, a repair).
      const ending = await checker.store.closeAnsweredRun(sessionId, runId);
      const summary = await checker.store.runSummary(sessionId, runId);
      expect(
        ending ?? summary.terminalState,
        `${context}: run ${runId} of ${sessionId} never ended (journal: ${read.records.map((record) => record.type).join(' ')})`,
      ).not.toBeNull();
      expect(summary.terminalState).toBe(ending ?? summary.terminalState);
    }
  }
}
