import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { type AgentInputItem, MemorySession, Runner } from '@openai/agents-core';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeepsakeSession, loadRunState, pausedRunOf } from '../src/index.js';
import { travelAgents } from './helpers/agents.js';
import { type Backend, createBackend } from './helpers/backends.js';

/**
 * F1, B3 with a real crash: a child process runs three streamed turns of a session on the fs
 * backend (the last pauses for approval) and is killed with SIGKILL at a random point. Then
 * this process, another server instance, reads the session: every batch of items whose
 * `addItems` resolved in the child is there, once and in order; what follows them is the
 * history of a turn the child was in (its input, the text it streamed, a marker) or nothing;
 * a run the child paused resumes here and completes.
 */
const KILLS = 24;
const seed = Number(process.env.KEEPSAKE_TEST_SEED ?? Date.now() % 2 ** 31);
const fixture = fileURLToPath(new URL('./fixtures/producer-process.ts', import.meta.url));
const packageDirectory = fileURLToPath(new URL('../', import.meta.url));

interface Producer {
  child: ChildProcess;
  output(): string;
  acked(): AgentInputItem[][];
  waitFor(predicate: () => boolean): Promise<void>;
  exited: Promise<unknown>;
}

function startProducer(backend: Backend, sessionId: string): Producer {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture], {
    cwd: packageDirectory,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      KEEPSAKE_TEST_DIRECTORY: backend.directory!,
      KEEPSAKE_TEST_SESSION: sessionId,
      KEEPSAKE_TEST_DELAY_MS: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const listeners = new Set<() => void>();
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    output += text;
    for (const listener of listeners) listener();
  });
  child.stderr.setEncoding('utf8').on('data', (text: string) => {
    output += text;
  });
  const exited = once(child, 'exit');
  return {
    child,
    output: () => output,
    exited,
    acked: () =>
      [...output.matchAll(/^ack (.*)$/gm)].map(
        (match) => JSON.parse(match[1]!) as AgentInputItem[],
      ),
    waitFor(predicate) {
      return new Promise<void>((resolve) => {
        const check = () => {
          if (predicate()) {
            listeners.delete(check);
            resolve();
          }
        };
        listeners.add(check);
        void exited.then(() => {
          listeners.delete(check);
          resolve();
        });
        check();
      });
    },
  };
}

/** The history the child's three turns give when nothing is killed (MemorySession). */
async function referenceHistory(): Promise<AgentInputItem[]> {
  const memory = new MemorySession();
  const runner = new Runner({ tracingDisabled: true });
  const { travel } = travelAgents();
  for (const input of ['hello there', 'weather please', 'please book a flight']) {
    const result = await runner.run(travel, input, { session: memory, stream: true });
    for await (const _event of result);
    await result.completed;
  }
  return memory.getItems();
}

describe('SIGKILL of the process running streamed agent turns (fs)', () => {
  let backend: Backend;
  beforeAll(async () => {
    backend = await createBackend('fs');
  });
  afterAll(() => backend.dispose());

  it(`${KILLS} random kill points: every acknowledged item present once, a cut turn ends with its input, its text and a marker, a paused run resumes (seed ${seed})`, async () => {
    const reference = JSON.parse(JSON.stringify(await referenceHistory())) as AgentInputItem[];
    const points = fc.sample(
      fc.record({
        afterAcks: fc.integer({ min: 0, max: 3 }),
        extraMs: fc.integer({ min: 0, max: 40 }),
      }),
      { seed, numRuns: KILLS },
    );
    const outcomes = { beforeAnything: 0, midTurn: 0, betweenTurns: 0, paused: 0, resumed: 0 };
    for (const [index, point] of points.entries()) {
      const sessionId = `killed-${index}`;
      const producer = startProducer(backend, sessionId);
      await producer.waitFor(() => /^ready$/m.test(producer.output()));
      await producer.waitFor(
        () => producer.acked().length >= point.afterAcks || /^done$/m.test(producer.output()),
      );
      await new Promise((resolve) => setTimeout(resolve, point.extraMs));
      producer.child.kill('SIGKILL');
      const [code, signal] = (await producer.exited) as [number | null, string | null];
      if (signal !== 'SIGKILL' && !(code === 0 && /^done$/m.test(producer.output()))) {
        throw new Error(`the producer exited with ${code ?? signal}:\n${producer.output()}`);
      }
      const acked = producer.acked().flat();
      const label = `kill ${index} (seed ${seed}, after ${point.afterAcks} acks + ${point.extraMs} ms; ${acked.length} items acknowledged)`;

      // Another instance after the crash: fs knows the owner is gone, so the load repairs now.
      const store = backend.open();
      try {
        const session = new KeepsakeSession({ store, sessionId });
        const history = JSON.parse(JSON.stringify(await session.getItems())) as AgentInputItem[];
        // Every acknowledged item is there once, in order, as the reference has it.
        const kept = history.filter((item) => !isUnfinished(item));
        expect(kept.slice(0, acked.length), label).toEqual(JSON.parse(JSON.stringify(acked)));
        expect(kept, label).toEqual(reference.slice(0, kept.length));
        const tail = history.slice(acked.length);
        if (history.length === 0) outcomes.beforeAnything++;
        else if (tail.length === 0) outcomes.betweenTurns++;
        else {
          // A turn cut mid-way: its input (once), maybe the text it streamed, one marker; or
          // only the marker, when the runner had stored the turn's items and the run was cut
          // before it ended (its items are the acknowledged ones above).
          outcomes.midTurn++;
          if (tail.length > 1) {
            expect(tail[0], label).toMatchObject({ type: 'message', role: 'user' });
          }
          expect(tail.at(-1), label).toMatchObject({ type: 'message', role: 'system' });
          expect(tail.length, label).toBeLessThanOrEqual(3);
          if (tail.length === 3) {
            expect(tail[1], label).toMatchObject({ role: 'assistant', status: 'incomplete' });
          }
        }
        const paused = await pausedRunOf(session);
        if (paused !== null && !paused.claimed) {
          outcomes.paused++;
          const { travel } = travelAgents();
          const state = await loadRunState(session, travel);
          state!.approve(state!.getInterruptions()[0]!);
          const resumed = await new Runner({ tracingDisabled: true }).run(travel, state!, {
            session,
          });
          expect(resumed.finalOutput, label).toBe('Done: booked 2 seats to Lisbon. Anything else?');
          outcomes.resumed++;
        }
      } finally {
        await store.close();
      }
    }
    console.log(`crash test (seed ${seed}): ${JSON.stringify(outcomes)}`);
    expect(outcomes.midTurn + outcomes.betweenTurns).toBeGreaterThan(0);
  }, 300_000);
});

/** What a crash repair adds: a turn's recovered text and its marker (not items the runner added). */
function isUnfinished(item: AgentInputItem): boolean {
  const record = item as { role?: string; status?: string; type?: string };
  return (
    (record.role === 'system' && record.type === 'message') ||
    (record.role === 'assistant' && record.status === 'incomplete')
  );
}
