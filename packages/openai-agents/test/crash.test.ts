import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { Session } from '@keepsake/core';
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
 * `addItems` resolved in the child is there first, once and in order; what follows them is
 * nothing, or the turn the child was in, as `checkCutTurn` says: what it stored without
 * acknowledging, the output it streamed (text pieces and tool calls in stream order) and
 * exactly one marker; a run the child paused resumes here and completes.
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

  it(`${KILLS} random kill points: every acknowledged item present once, a cut turn ends with its input, its streamed output in order and one marker, a paused run resumes (seed ${seed})`, async () => {
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
        // B3: every acknowledged item is there once, in order, first, as the reference has it.
        expect(history.slice(0, acked.length), label).toEqual(JSON.parse(JSON.stringify(acked)));
        expect(acked, label).toEqual(reference.slice(0, acked.length));
        const tail = history.slice(acked.length);
        if (history.length === 0) outcomes.beforeAnything++;
        else if (tail.length === 0) outcomes.betweenTurns++;
        else {
          outcomes.midTurn++;
          const stored = await store.load(session.keepsakeId);
          checkCutTurn(tail, acked.length, reference, stored, label);
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

type Step = { text: string } | { call: string };

/**
 * F1, E1, E2, B1, B3 for a turn the kill cut: what follows the acknowledged items.
 * - Items the child stored but did not live to acknowledge (B3 promises durability of what
 *   was acknowledged, not the converse): the cut turn's input alone (E1, stored before the
 *   agent started), or the turn's whole batch as the runner added it (B1), or nothing.
 * - The output the turn streamed that the history does not hold as items, folded from its
 *   journal (F1, E2): one `incomplete` assistant message per stretch of text, a stretch
 *   ending at a tool call (the calls are kept in the Keepsake session's `toolCalls`, on the
 *   message before them). Text pieces and calls come in stream order, as the reference
 *   turn has them, each whole but the last, which may be cut.
 * - Exactly one marker, last (F1; README "Known limits": also after a stored batch).
 */
function checkCutTurn(
  tail: AgentInputItem[],
  ackedCount: number,
  reference: AgentInputItem[],
  stored: Session,
  label: string,
): void {
  expect(tail.at(-1), label).toMatchObject({ type: 'message', role: 'system' });
  const body = tail.slice(0, -1);
  const otherMarkers = body.filter((item) => role(item) === 'system');
  expect(otherMarkers, label).toEqual([]);
  const firstRecovered = body.findIndex(isRecovered);
  const kept = firstRecovered < 0 ? body : body.slice(0, firstRecovered);
  const recovered = body.slice(kept.length);
  const notRecovered = recovered.filter((item) => !isRecovered(item));
  expect(notRecovered, label).toEqual([]);

  // The cut turn in the reference: from its user message to the next one.
  const storedCount = ackedCount + kept.length;
  expect(kept, label).toEqual(reference.slice(ackedCount, storedCount));
  const turnStart = reference.slice(0, storedCount).findLastIndex((item) => role(item) === 'user');
  const next = reference.findIndex((item, index) => index > turnStart && role(item) === 'user');
  const turnEnd = next < 0 ? reference.length : next;
  expect(turnStart, label).toBeGreaterThanOrEqual(0);
  if (kept.length > 0) {
    expect(turnStart, label).toBe(ackedCount);
    expect([turnStart + 1, turnEnd], label).toContain(storedCount);
  }
  // The runner adds a streamed run's output in one batch: held whole or not at all.
  const held = storedCount - turnStart - 1;
  if (held > 0) {
    expect(held, label).toBe(turnEnd - turnStart - 1);
    expect(recovered, label).toEqual([]);
    return;
  }

  // What the turn streamed, in order, as the reference has it; and what the repair kept.
  const expected: Step[] = reference.slice(turnStart + 1, turnEnd).flatMap(stepsOf);
  const actual: Step[] = [];
  const userAt = stored.messages.findLastIndex((message) => message.role === 'user');
  for (const message of stored.messages.slice(userAt + 1)) {
    if (message.marker !== undefined || message.journal === undefined) continue;
    const text = typeof message.content === 'string' ? message.content : '';
    if (text !== '') actual.push({ text });
    for (const call of stored.toolCalls) {
      if (call.messageId === message.id) actual.push({ call: call.name });
    }
  }
  expect(
    recovered.map((item) => ({ text: textOf(item) })),
    label,
  ).toEqual(actual.filter((step) => 'text' in step));
  expect(actual.length, label).toBeLessThanOrEqual(expected.length);
  const whole = Math.max(actual.length - 1, 0);
  expect(actual.slice(0, whole), label).toEqual(expected.slice(0, whole));
  const last = actual.at(-1);
  if (last !== undefined) {
    const streamed = expected[whole]!;
    if ('call' in last) expect(last, label).toEqual(streamed);
    else expect('text' in streamed && streamed.text.startsWith(last.text), label).toBe(true);
  }
}

function stepsOf(item: AgentInputItem): Step[] {
  const record = item as { type?: string; name?: string };
  if (record.type === 'function_call') return [{ call: record.name ?? '' }];
  if (role(item) === 'assistant' && textOf(item) !== '') return [{ text: textOf(item) }];
  return [];
}

function role(item: AgentInputItem): string | undefined {
  const record = item as { type?: string; role?: string };
  return record.type === undefined || record.type === 'message' ? record.role : undefined;
}

/** Text a crash repair folded from the journal (F1): an `incomplete` assistant message. */
function isRecovered(item: AgentInputItem): boolean {
  return role(item) === 'assistant' && (item as { status?: string }).status === 'incomplete';
}

function textOf(item: AgentInputItem): string {
  const content = (item as { content?: unknown }).content;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (part as { text?: string }).text ?? '').join('');
}
