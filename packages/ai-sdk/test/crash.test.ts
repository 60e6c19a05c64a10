import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { UIMessageChunk } from 'ai';
import { validateUIMessages } from 'ai';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chunkOfRecord } from '../src/chunk-records.js';
import {
  createResumableStreamContext,
  loadChat,
  MARKER_PART_TYPE,
  sessionIdOfChat,
} from '../src/index.js';
import { readWholeJournal } from '../src/journal-pages.js';
import { messageFromChunks, OpenParts } from '../src/message-from-chunks.js';
import { answerWords, dataSchemas, readAll, scriptedAnswer } from './helpers/chunk-streams.js';
import { type Backend, createBackend } from './helpers/stores.js';

/**
 * F1, E2 with a real crash: a child process answers a chat on the fs backend and is killed
 * with SIGKILL at a random point (before the run began, between appends, in the middle of
 * one, after the answer was stored); then this process, another server, resumes the chat's
 * stream. Every chunk the child's store acknowledged as durable before the kill must be in
 * the resumed stream, in order, once; the stream must end (with the recovered partial answer
 * and an interrupted marker) instead of hanging; the chat must load as valid UI messages.
 */
const KILLS = 20;
const WORDS = 30;
const GRACE_MS = 250;
const seed = Number(process.env.KEEPSAKE_TEST_SEED ?? Date.now() % 2 ** 31);
const fixture = fileURLToPath(new URL('./fixtures/producer-process.ts', import.meta.url));
const packageDirectory = fileURLToPath(new URL('../', import.meta.url));

interface Producer {
  child: ChildProcess;
  acknowledged(): number;
  waitFor(predicate: () => boolean): Promise<void>;
  exited: Promise<unknown>;
  output(): string;
}

function startProducer(backend: Backend, chatId: string, durability: string): Producer {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture], {
    cwd: packageDirectory,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      KEEPSAKE_TEST_DIRECTORY: backend.directory!,
      KEEPSAKE_TEST_CHAT: chatId,
      KEEPSAKE_TEST_WORDS: String(WORDS),
      KEEPSAKE_TEST_DELAY_MS: '2',
      KEEPSAKE_TEST_DURABILITY: durability,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let acknowledged = 0;
  const listeners = new Set<() => void>();
  const onData = (text: string) => {
    output += text;
    for (const match of text.matchAll(/^ack (\d+)$/gm)) {
      acknowledged = Math.max(acknowledged, Number(match[1]));
    }
    for (const listener of listeners) listener();
  };
  child.stdout.setEncoding('utf8').on('data', onData);
  child.stderr.setEncoding('utf8').on('data', (text: string) => {
    output += text;
  });
  const exited = once(child, 'exit');
  return {
    child,
    acknowledged: () => acknowledged,
    output: () => output,
    exited,
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

describe('SIGKILL of the producing process (fs)', () => {
  let backend: Backend;
  beforeAll(async () => {
    backend = await createBackend('fs');
  });
  afterAll(() => backend.dispose());

  it(`${KILLS} random kill points: no acknowledged chunk lost, none repeated, every stream ends (seed ${seed})`, async () => {
    const random = fc.sample(
      fc.record({
        // How many acknowledgements to wait for: 0 (before or during the first append) up to
        // past the end (the answer stored); then up to 3 ms more, to land inside an append.
        afterAcks: fc.integer({ min: 0, max: scriptedAnswer(answerWords(WORDS)).length + 6 }),
        extraMs: fc.integer({ min: 0, max: 3 }),
        durability: fc.constantFrom('group', 'each'),
      }),
      { seed, numRuns: KILLS },
    );
    const outcomes = { beforeRun: 0, midStream: 0, completed: 0, acknowledged: 0 };
    for (const [index, point] of random.entries()) {
      const chatId = `killed-${index}`;
      const producer = startProducer(backend, chatId, point.durability);
      await producer.waitFor(() => /^ready$/m.test(producer.output()));
      await producer.waitFor(
        () => producer.acknowledged() >= point.afterAcks || /^done$/m.test(producer.output()),
      );
      await new Promise((resolve) => setTimeout(resolve, point.extraMs));
      producer.child.kill('SIGKILL');
      const [code, signal] = (await producer.exited) as [number | null, string | null];
      // The child ends by the kill, or by itself after storing the answer: never by failing.
      if (signal !== 'SIGKILL' && !(code === 0 && /^done$/m.test(producer.output()))) {
        throw new Error(`the producer exited with ${code ?? signal}:\n${producer.output()}`);
      }
      const acknowledged = producer.acknowledged();
      outcomes.acknowledged += acknowledged;
      const label = `kill ${index} (seed ${seed}, after ${point.afterAcks} acks + ${point.extraMs} ms, ${point.durability}; ${acknowledged} acknowledged)`;

      // Another server instance, started after the crash.
      const store = backend.open({ recovery: { graceMs: GRACE_MS } });
      // Only an answer still in progress is resumed here (an ended one is checked in the
      // transcript below; resume.test.ts covers the replay of ended answers).
      const context = createResumableStreamContext({
        store,
        pollIntervalMs: 20,
        replayEndedWithinMs: 0,
      });
      try {
        const resumed = await context.resumeExistingStream(chatId);
        const sessionId = sessionIdOfChat(chatId);
        const runs = (await store.exists(sessionId)) ? await store.listRuns(sessionId) : [];
        expect(runs.length, label).toBeLessThanOrEqual(1);
        const journal =
          runs[0] === undefined ? [] : ((await readWholeJournal(store, sessionId, runs[0])) ?? []);
        const sequences = journal.map((record) => record.sequence);
        expect(sequences, label).toEqual(sequences.map((_, position) => position + 1));
        const journaled = journal.map(chunkOfRecord).filter((chunk) => chunk !== null);
        // Every acknowledged record is there (records are chunks, then core's terminal one).
        expect(journal.length, label).toBeGreaterThanOrEqual(acknowledged);
        const expected = expectedChunks(journaled);
        expect(journaled, label).toEqual(expected.slice(0, journaled.length));

        if (resumed === null) {
          // Killed before the run began or after the answer was stored, or dead long
          // enough that the load in resumeExistingStream already recovered it.
          const chat = await loadChat(store, chatId);
          const answer = chat.find((message) => message.role === 'assistant');
          if (journal.some((record) => record.type === 'done')) {
            outcomes.completed++;
            expect(journaled, label).toEqual(expected);
            expect(answer, label).toStrictEqual(await messageFromChunks(expected, 'unused'));
          } else if (answer !== undefined) {
            outcomes.midStream++;
            expect(answer.parts.at(-1), label).toMatchObject({ data: { type: 'interrupted' } });
            expect(answer.parts.slice(0, -1), label).toStrictEqual(
              (await messageFromChunks(closed(journaled), 'unused')).parts,
            );
          } else {
            outcomes.beforeRun++;
            expect(acknowledged, label).toBe(0);
          }
          continue;
        }
        outcomes.midStream++;
        const received = await readAll(resumed);
        // The journaled chunks, in order, once; then the ending: open parts closed, the
        // marker, finish.
        const recoveredJournal = (await readWholeJournal(store, sessionId, runs[0]!)) ?? [];
        const recovered = recoveredJournal.map(chunkOfRecord).filter((chunk) => chunk !== null);
        expect(recovered, label).toEqual(journaled);
        expect(received.slice(0, journaled.length), label).toEqual(journaled);
        const ending = received.slice(journaled.length);
        expect(ending.at(-1)?.type, label).toBe('finish');
        expect(
          ending.find((chunk) => chunk.type === MARKER_PART_TYPE),
          label,
        ).toMatchObject({
          data: { type: 'interrupted' },
        });
        const endingTypes = ['start', 'text-end', 'reasoning-end', MARKER_PART_TYPE, 'finish'];
        expect(
          ending.every((chunk) => endingTypes.includes(chunk.type)),
          label,
        ).toBe(true);
        // Recovery appended one interrupted record to a journal that existed (F3).
        expect(
          recoveredJournal.filter((record) => record.type === 'interrupted'),
          label,
        ).toHaveLength(journal.length > 0 ? 1 : 0);
        // After a reload: the same answer, recovered, valid for the AI SDK.
        const chat = await loadChat(store, chatId);
        expect(
          chat.map((message) => message.role),
          label,
        ).toEqual(['user', 'assistant']);
        expect(chat[1], label).toStrictEqual(await messageFromChunks(received, 'unused'));
        await validateUIMessages({ messages: chat, dataSchemas });
      } finally {
        context.close();
        await store.close();
      }
    }
    console.log(`crash test (seed ${seed}): ${JSON.stringify(outcomes)}`);
    expect(outcomes.midStream).toBeGreaterThanOrEqual(KILLS / 2);
  }, 180_000);
});

/** Chunks with the text and reasoning parts they left open ended, as a stopped answer's are. */
function closed(chunks: readonly UIMessageChunk[]): UIMessageChunk[] {
  const open = new OpenParts();
  for (const chunk of chunks) open.observe(chunk);
  return [...chunks, ...open.closingChunks()];
}

/**
 * The chunks the child's run journals, in order: its scripted answer, with the `start`
 * chunk carrying the message id the producer gave it (read back from the journal).
 */
function expectedChunks(journaled: readonly UIMessageChunk[]): UIMessageChunk[] {
  const chunks = scriptedAnswer(answerWords(WORDS));
  const start = journaled[0];
  const messageId = start?.type === 'start' ? start.messageId : undefined;
  return chunks.map((chunk) =>
    chunk.type === 'start' && messageId !== undefined ? { ...chunk, messageId } : chunk,
  );
}
