/**
 * The world one bad-input property run works in (spec/bad-input-properties.ts): a store on
 * the run's own namespace with one stored session, and the checks every refusal must pass —
 * a typed error, no write call, the same stored state before and after, a close() that
 * finishes, and a fresh store that reads what was acknowledged.
 */
import {
  ID_PATTERN,
  type JournalEventInput,
  NotFoundError,
  type Session,
  type SessionStore,
} from '@keepsake/core';
import fc from 'fast-check';
import { expect } from 'vitest';
import type { BadEvent, IdSlot, Poison, PoisonPlace } from './bad-input-arbitraries.js';
import { buried, nestedObject, poisonValue } from './bad-input-arbitraries.js';
import { badInputSettings } from './bad-input-settings.js';
import { type OpenedStore, TestEnvironment } from './environment.js';
import { contentsOf, expectTypedError, textMessage, userInput } from './fixtures.js';
import { expectCloseFinishes, readStoredState, writesSince } from './stored-state.js';
import type { SpecRegistrar } from './suite.js';

export interface World {
  env: TestEnvironment;
  opened: OpenedStore;
  /** The stored session every run starts from: two messages, revision 1. */
  id: string;
  session: Session;
  /** The contents a fresh store must read at the end, updated as saves land. */
  expected: string[];
}

export const ORIGINAL_CONTENTS = ['question', 'answer'];

export async function openWorld(env: TestEnvironment): Promise<World> {
  const opened = await env.openStore();
  const id = env.id('bad');
  const session = await opened.store.create({
    id,
    title: 'kept',
    messages: [
      textMessage(env, 'user', ORIGINAL_CONTENTS[0] as string),
      textMessage(env, 'assistant', ORIGINAL_CONTENTS[1] as string),
    ],
  });
  return { env, opened, id, session, expected: [...ORIGINAL_CONTENTS] };
}

/** A copy of a session at its revision, sharing its stored messages, as an app makes one. */
export function copyOf(session: Session): Session {
  return {
    ...session,
    messages: [...session.messages],
    toolCalls: [...session.toolCalls],
    metadata: { ...session.metadata },
  };
}

type ErrorGuard<T> = { isInstance(error: unknown): error is T; name: string };

/**
 * Runs `call`, which must be refused with `errorClass`, and checks that the store made no
 * write call meanwhile and that what is stored for `sessionIds` did not change.
 */
export async function expectRefusedWithoutChange<T>(
  world: World,
  call: () => unknown,
  errorClass: ErrorGuard<T>,
  sessionIds: readonly string[] = [world.id],
): Promise<T> {
  const { env, opened } = world;
  const before = await readStoredState(env, sessionIds);
  const mark = opened.adapter.calls.length;
  const error = await expectTypedError(async () => call(), errorClass);
  expect(writesSince(opened.adapter, mark), 'write calls made by a refused call').toEqual([]);
  expect(await readStoredState(env, sessionIds), 'what is stored after a refused call').toEqual(
    before,
  );
  return error;
}

/** Closes the world's store (it must finish and report), then reads back with a fresh store. */
export async function closeAndReadBack(world: World): Promise<void> {
  const { env, opened, id } = world;
  await expectCloseFinishes(opened.store);
  await env.closeStore(opened);
  const fresh = await env.openStore();
  expect(contentsOf(await fresh.store.load(id)), 'what a fresh store reads').toEqual(
    world.expected,
  );
  await expectCloseFinishes(fresh.store);
  await env.closeStore(fresh);
}

/** Expects no session `id` to be stored, as a fresh store reads it. */
export async function expectNotStored(env: TestEnvironment, id: string): Promise<void> {
  const fresh = await env.openStore();
  await expectTypedError(fresh.store.load(id), NotFoundError);
  await expectCloseFinishes(fresh.store);
  await env.closeStore(fresh);
}

/** A1: the call of `slot` with `bad` in the id slot and valid values everywhere else. */
export function callWithBadId(world: World, slot: IdSlot, bad: unknown): () => Promise<unknown> {
  const store: SessionStore = world.opened.store;
  const id = world.id;
  const any = bad as string;
  const calls: Record<IdSlot, () => Promise<unknown>> = {
    create: () => store.create({ id: any }),
    load: () => store.load(any),
    reload: () => store.reload(any),
    exists: () => store.exists(any),
    delete: () => store.delete(any),
    save: () => store.save({ ...copyOf(world.session), id: any }),
    'rename-old': () => store.rename(any, world.env.id('new')),
    'rename-new': () => store.rename(id, any),
    withLock: () => store.withLock(any, async () => undefined),
    retainedRevisions: () => store.retainedRevisions(any),
    loadRetainedRevision: () => store.loadRetainedRevision(any, 1),
    'beginRun-session': () => store.beginRun(any, { userMessage: userInput('x') }),
    'beginRun-run': () => store.beginRun(id, { userMessage: userInput('x'), runId: any }),
    'cancelRun-session': () => store.cancelRun(any),
    'cancelRun-run': () => store.cancelRun(id, any),
    'readJournal-session': () => store.readJournal(any, 'run-1'),
    'readJournal-run': () => store.readJournal(id, any),
    'runSummary-session': () => store.runSummary(any, 'run-1'),
    'runSummary-run': () => store.runSummary(id, any),
    listRuns: () => store.listRuns(any),
  };
  return calls[slot];
}

/**
 * Puts a poisoned value into `target` (a copy of the session, or the live session itself)
 * at `place`, under `keys`, and returns where the refusal must point and how to undo it.
 */
export function poisonSession(
  world: World,
  target: Session,
  place: Exclude<PoisonPlace, 'create metadata' | 'create message'>,
  keys: readonly string[],
  description: Poison,
): { pathPrefix: string; undo(): void } {
  const value = buried(keys, poisonValue(description));
  const record = target as unknown as Record<string, unknown>;
  const index = target.messages.length;
  const message = (fields: Record<string, unknown>) => ({
    ...textMessage(world.env, 'user', 'with poison'),
    ...fields,
  });
  switch (place) {
    case 'metadata': {
      const previous = target.metadata;
      target.metadata = { ...previous, poisoned: value };
      const undo = () => {
        target.metadata = previous;
      };
      return { pathPrefix: 'metadata.poisoned', undo };
    }
    case 'top-level field':
      record.appField = value;
      return { pathPrefix: 'appField', undo: () => void delete record.appField };
    case 'message field':
      target.messages.push(message({ extra: value }) as Session['messages'][number]);
      return { pathPrefix: `messages[${index}].extra`, undo: () => void target.messages.pop() };
    case 'content part':
      target.messages.push(
        message({
          content: [{ type: 'text', text: 'x', data: value }],
        }) as Session['messages'][number],
      );
      return {
        pathPrefix: `messages[${index}].content[0].data`,
        undo: () => void target.messages.pop(),
      };
    case 'tool call args': {
      const calls = target.toolCalls.length;
      target.toolCalls.push({ id: 'tool-1', name: 'lookup', done: true, args: value });
      return {
        pathPrefix: `toolCalls[${calls}].args`,
        undo: () => void target.toolCalls.pop(),
      };
    }
  }
}

/** E2: the event a BadEvent describes, and the error class its append must be refused with. */
export function badEventInput(
  bad: BadEvent,
  reusedEventId: string,
): {
  event: unknown;
  expectsInvalidId: boolean;
} {
  const token = (data: unknown): unknown => ({ type: 'token', data });
  switch (bad.kind) {
    case 'data-date':
      return { event: token(new Date(0)), expectsInvalidId: false };
    case 'data-boxed':
      return { event: token(Object(bad.text)), expectsInvalidId: false };
    case 'data-to-json-string':
      return { event: token({ text: bad.text, toJSON: () => bad.text }), expectsInvalidId: false };
    case 'data-to-json-array':
      return { event: token({ toJSON: () => [bad.text] }), expectsInvalidId: false };
    case 'data-array':
      return { event: token([bad.text]), expectsInvalidId: false };
    case 'data-string':
      return { event: token(bad.text), expectsInvalidId: false };
    case 'data-number':
      return { event: token(bad.depth), expectsInvalidId: false };
    case 'data-deep':
      return {
        event: token({ text: bad.text, nested: nestedObject(bad.depth) }),
        expectsInvalidId: false,
      };
    case 'data-bigint':
      return { event: token({ text: bad.text, count: 1n }), expectsInvalidId: false };
    case 'data-cycle': {
      const data: Record<string, unknown> = { text: bad.text };
      data.self = data;
      return { event: token(data), expectsInvalidId: false };
    }
    case 'unknown-field':
      return { event: { type: 'token', text: bad.text }, expectsInvalidId: false };
    case 'unknown-type':
      return {
        event: { type: `${bad.text}-tokens`, data: { text: bad.text } },
        expectsInvalidId: false,
      };
    case 'bad-event-id':
      return {
        event: { type: 'token', eventId: bad.badId, data: { text: bad.text } },
        expectsInvalidId: true,
      };
    case 'reused-event-id':
      return {
        event: { type: 'token', eventId: reusedEventId, data: { text: bad.text } },
        expectsInvalidId: false,
      };
    case 'not-an-object':
      return { event: bad.text, expectsInvalidId: false };
  }
}

export function tokenEvent(text: string, eventId: string): JournalEventInput {
  return { type: 'token', eventId, data: { text } };
}

/** Whether every journal call the adapter saw named an A1-valid run id (never `undefined`). */
export function runIdsSeen(opened: OpenedStore): unknown[] {
  return opened.adapter.calls
    .filter((call) => ['readLog', 'appendLog', 'deleteLog'].includes(call.method))
    .map((call) => call.args[1])
    .filter((runId) => typeof runId !== 'string' || !ID_PATTERN.test(runId));
}

/**
 * Registers one property of the section: each generated input gets a world of its own
 * (its own namespace and stores), disposed whatever happens. Runs and seed come from
 * badInputSettings(); fast-check prints the seed and path of a failure. `examples` (the
 * cases the issue reported) are tried first on every run, whatever the seed.
 */
export function registerProperty<T>(
  suite: SpecRegistrar,
  id: string,
  title: string,
  arbitrary: fc.Arbitrary<T>,
  body: (env: TestEnvironment, input: T) => Promise<void>,
  examples: readonly NoInfer<T>[] = [],
): void {
  suite.test(id, title, async () => {
    const settings = badInputSettings();
    await fc.assert(
      fc.asyncProperty(arbitrary, async (input) => {
        const env = new TestEnvironment(suite.context);
        try {
          await body(env, input);
        } finally {
          await env.dispose();
        }
      }),
      { ...settings, examples: examples.map((example) => [example] as [T]) },
    );
  });
}
