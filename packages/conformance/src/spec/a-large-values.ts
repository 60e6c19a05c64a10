/**
 * A3, issue 42 item 1: values larger than 64 KiB. An adapter that truncated every value over
 * 64 KiB (a `TEXT` column, a 16-bit length prefix) passed every test, because none stored
 * one. Documents, deltas and journal records at and around 64 KiB and 1 MiB are read back
 * whole, 16 MiB where the adapter declares it can (`capabilities.maxValueBytes`); a value
 * over a declared limit is refused with a typed `LimitExceededError` and nothing is stored.
 */
import {
  type AdapterCapabilities,
  KeepsakeError,
  LimitExceededError,
  type StorageAdapter,
} from '@keepsake/core';
import { expect } from 'vitest';
import type { TestEnvironment } from '../harness/environment.js';
import { contentsOf, textMessage, userInput } from '../harness/fixtures.js';
import type { SpecRegistrar } from '../harness/suite.js';

const KiB = 1024;
const MiB = 1024 * KiB;
/** Sizes every adapter stores (core's own limits allow them): at and around 64 KiB, and 1 MiB. */
const SIZES = [64 * KiB - 1, 64 * KiB, 64 * KiB + 1, MiB] as const;
/** Core's default `limits.maxDocumentBytes`: tried where the adapter declares it can. */
const LARGEST = 16 * MiB;

/**
 * The largest value (a document's base or delta text, a journal record's text, in UTF-8
 * bytes) the adapter declares it stores, or undefined when it declares none. Read by name,
 * so an adapter built against a core without the field can declare it too.
 */
export function declaredMaxValueBytes(capabilities: AdapterCapabilities): number | undefined {
  const declared = (capabilities as { readonly maxValueBytes?: unknown }).maxValueBytes;
  return typeof declared === 'number' ? declared : undefined;
}

/** The sizes this adapter is tried with: the common ones, 16 MiB if declared, and one over its limit. */
function sizesFor(capabilities: AdapterCapabilities): { kept: number[]; refused: number[] } {
  const limit = declaredMaxValueBytes(capabilities);
  const candidates: number[] = [...SIZES];
  if (limit !== undefined && limit >= LARGEST) candidates.push(LARGEST);
  if (limit !== undefined && limit < LARGEST) candidates.push(limit, limit + 1);
  const unique = [...new Set(candidates)].filter((size) => size >= 16).sort((a, b) => a - b);
  return {
    kept: unique.filter((size) => limit === undefined || size <= limit),
    refused: unique.filter((size) => limit !== undefined && size > limit),
  };
}

/**
 * JSON text of exactly `bytes` UTF-8 bytes whose every part differs from its neighbours,
 * so a value cut short, cut in the middle or padded never equals it.
 */
function textOfBytes(bytes: number, salt: string): string {
  const head = `{"v":"${salt}:`;
  const tail = '"}';
  const room = bytes - head.length - tail.length;
  let body = '';
  for (let block = 0; body.length < room; block++) body += `${block.toString(36)}.`;
  return `${head}${body.slice(0, room)}${tail}`;
}

/** Compares without printing megabytes: the length, then where the first difference is. */
function expectSameText(actual: string | undefined, expected: string, what: string): void {
  expect(actual, `${what}: missing`).toBeTypeOf('string');
  const text = actual!;
  let firstDifference = -1;
  const shorter = Math.min(text.length, expected.length);
  for (let index = 0; index < shorter; index++) {
    if (text.charCodeAt(index) !== expected.charCodeAt(index)) {
      firstDifference = index;
      break;
    }
  }
  expect(
    { length: text.length, firstDifference },
    `${what}: ${Buffer.byteLength(expected)} bytes written, read back differently`,
  ).toEqual({ length: expected.length, firstDifference: -1 });
}

async function expectRefusedAsLimit(promise: Promise<unknown>, what: string): Promise<void> {
  let outcome: unknown = 'resolved';
  try {
    await promise;
  } catch (error) {
    outcome = error;
  }
  expect(
    KeepsakeError.isInstance(outcome) && LimitExceededError.isInstance(outcome),
    `${what} is over the declared maxValueBytes: it must be refused with LimitExceededError (got ${outcome instanceof Error ? `${outcome.name}: ${outcome.message}` : String(outcome)})`,
  ).toBe(true);
}

interface Planted {
  size: number;
  id: string;
  runId: string;
  base: string;
  delta: string | null;
  record: string;
}

async function plantValues(
  env: TestEnvironment,
  raw: StorageAdapter,
  size: number,
): Promise<Planted> {
  const id = env.id('big');
  const runId = env.id('run');
  const base = textOfBytes(size, `base-${size}`);
  const full = await raw.putDocument(
    'sessions',
    id,
    { kind: 'full', revision: 1, text: base },
    { expectedRevision: null, durable: true },
  );
  expect(full.ok, `a ${size}-byte document is written`).toBe(true);
  let delta: string | null = null;
  if (env.capabilities.appendDeltas) {
    delta = textOfBytes(size, `delta-${size}`);
    const appended = await raw.putDocument(
      'sessions',
      id,
      { kind: 'delta', revision: 2, text: delta },
      { expectedRevision: 1, durable: true },
    );
    expect(appended.ok, `a ${size}-byte delta is written`).toBe(true);
  }
  const record = textOfBytes(size, `record-${size}`);
  const logged = await raw.appendLog(id, runId, [{ sequence: 1, text: record }], {
    durability: 'each',
  });
  expect(logged.ok, `a ${size}-byte journal record is appended`).toBe(true);
  return { size, id, runId, base, delta, record };
}

async function expectReadBack(raw: StorageAdapter, planted: Planted, where: string) {
  const { size } = planted;
  const stored = await raw.getDocument('sessions', planted.id);
  expectSameText(stored?.base, planted.base, `${where}: the ${size}-byte document`);
  if (planted.delta !== null) {
    expect(stored?.deltas.length, `${where}: one delta`).toBe(1);
    expectSameText(stored?.deltas[0], planted.delta, `${where}: the ${size}-byte delta`);
  }
  const journal = await raw.readLog(planted.id, planted.runId, { afterSequence: 0, limit: 10 });
  expect(
    journal.records.map((record) => record.sequence),
    `${where}: one record`,
  ).toEqual([1]);
  expectSameText(
    journal.records[0]?.text,
    planted.record,
    `${where}: the ${size}-byte journal record`,
  );
}

export function defineLargeValueTests(suite: SpecRegistrar): void {
  const { kept, refused } = sizesFor(suite.context.capabilities);
  const shown = (sizes: number[]) => sizes.map((size) => `${size}`).join(', ');

  suite.test(
    'A3',
    `adapter: documents, deltas and journal records of ${shown(kept)} bytes are read back whole, also by a new adapter`,
    async (env) => {
      const writer = await env.rawAdapter();
      const planted: Planted[] = [];
      for (const size of kept) planted.push(await plantValues(env, writer, size));
      for (const values of planted) await expectReadBack(writer, values, 'the writer');
      const reader = await env.rawAdapter();
      for (const values of planted) await expectReadBack(reader, values, 'a new adapter');
    },
    { timeoutMs: suite.context.testTimeoutMs * 2 },
  );

  if (refused.length > 0) {
    suite.test(
      'A3',
      `adapter: a value over the declared maxValueBytes (${shown(refused)} bytes) is refused with LimitExceededError and nothing is stored`,
      async (env) => {
        const raw = await env.rawAdapter();
        for (const size of refused) {
          const id = env.id('big');
          await expectRefusedAsLimit(
            raw.putDocument(
              'sessions',
              id,
              { kind: 'full', revision: 1, text: textOfBytes(size, 'over') },
              { expectedRevision: null, durable: true },
            ),
            `a ${size}-byte document`,
          );
          expect(await raw.getDocument('sessions', id), 'nothing stored').toBeNull();
          if (env.capabilities.appendDeltas) {
            const small = '{"v":"small"}';
            await raw.putDocument(
              'sessions',
              id,
              { kind: 'full', revision: 1, text: small },
              { expectedRevision: null, durable: true },
            );
            await expectRefusedAsLimit(
              raw.putDocument(
                'sessions',
                id,
                { kind: 'delta', revision: 2, text: textOfBytes(size, 'over') },
                { expectedRevision: 1, durable: true },
              ),
              `a ${size}-byte delta`,
            );
            expect(await raw.getDocument('sessions', id), 'the document as it was').toEqual({
              revision: 1,
              base: small,
              deltas: [],
            });
          }
          const runId = env.id('run');
          await expectRefusedAsLimit(
            raw.appendLog(id, runId, [{ sequence: 1, text: textOfBytes(size, 'over') }], {
              durability: 'each',
            }),
            `a ${size}-byte journal record`,
          );
          const journal = await raw.readLog(id, runId, { afterSequence: 0, limit: 10 });
          expect(journal.records, 'no record stored').toEqual([]);
        }
      },
    );
  }

  suite.test(
    'A3',
    'a message of 1 MiB saved in full, one over 64 KiB saved after it, and a streamed token near 1 MiB come back whole after a restart',
    async (env) => {
      const opened = await env.openStore({ limits: { maxJournalEventBytes: 2 * MiB } });
      const { store } = opened;
      const first = textOfBytes(MiB, 'first message');
      const second = textOfBytes(64 * KiB + 1, 'second message');
      const token = textOfBytes(MiB - KiB, 'streamed token');
      const session = await store.create(
        { id: env.id(), title: 'large', messages: [textMessage(env, 'user', first)] },
        { fsync: true },
      );
      session.messages.push(textMessage(env, 'assistant', second));
      await store.save(session, { fsync: true });
      const run = await store.beginRun(session.id, { userMessage: userInput('and more') });
      await run.append({ type: 'token', data: { text: token } });
      const journal = await store.readJournal(session.id, run.runId);
      const streamed = journal.records.find((record) => record.type === 'token');
      expectSameText(
        (streamed?.data as { text?: string } | undefined)?.text,
        token,
        'the journal record',
      );
      await run.complete();
      const reopened = await env.restartGracefully(opened);
      const loaded = contentsOf(await reopened.store.load(session.id));
      expect(loaded.length).toBe(4);
      expectSameText(loaded[0], first, 'the first message');
      expectSameText(loaded[1], second, 'the second message');
      expectSameText(loaded[3], token, 'the answer');
    },
    { timeoutMs: suite.context.testTimeoutMs * 2 },
  );
}
