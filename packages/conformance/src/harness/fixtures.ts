import {
  KeepsakeError,
  type Message,
  type MessageInput,
  type Session,
  type StorageAdapter,
} from '@keepsake/core';
import { expect } from 'vitest';
import type { TestEnvironment } from './environment.js';

/**
 * A message as both stored and written: `Message` alone is not assignable to
 * `MessageInput` under exactOptionalPropertyTypes (its optional fields admit undefined).
 */
export type TestMessage = Message & MessageInput;

/** A complete message (id and createdAt filled in) with a unique id. */
export function textMessage(
  env: TestEnvironment,
  role: Message['role'],
  content: string,
  extra: Record<string, unknown> = {},
): TestMessage {
  return { id: env.id('m'), role, content, createdAt: env.clock.now(), ...extra } as TestMessage;
}

/** A user message as `beginRun` takes it. */
export function userInput(content: string, extra: Record<string, unknown> = {}): MessageInput {
  return { role: 'user', content, ...extra };
}

/** The text contents of a session's messages, in order. */
export function contentsOf(session: Pick<Session, 'messages'>): string[] {
  return session.messages.map((message) =>
    typeof message.content === 'string' ? message.content : JSON.stringify(message.content),
  );
}

/** A promise with its resolve function outside, for gates and ordering. */
export interface Deferred<T = void> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(reason: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((resolvePromise, rejectPromise) => {
    resolve = resolvePromise;
    reject = rejectPromise;
  });
  return { promise, resolve, reject };
}

/**
 * Lets queued callbacks run (promise jobs and immediates). Used to give the store a chance
 * to do something it must not do — never to wait for something it must do.
 */
export async function drainCallbacks(rounds = 20): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** Whether `promise` settles while callbacks are drained (it must not be waiting on a lock). */
export async function settlesPromptly(promise: Promise<unknown>, rounds = 50): Promise<boolean> {
  let settled = false;
  promise.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  for (let round = 0; round < rounds && !settled; round++) await drainCallbacks(1);
  return settled;
}

type ErrorGuard<T> = { isInstance(error: unknown): error is T; name: string };

/** Awaits a rejection with a typed Keepsake error of the given class and returns it. */
export async function expectTypedError<T>(
  promise: Promise<unknown> | (() => Promise<unknown>),
  errorClass: ErrorGuard<T>,
): Promise<T> {
  let caught: unknown;
  let resolvedWith: unknown;
  let resolved = false;
  try {
    resolvedWith = await (typeof promise === 'function' ? promise() : promise);
    resolved = true;
  } catch (error) {
    caught = error;
  }
  if (resolved) {
    expect.fail(
      `expected a ${errorClass.name}, but the call resolved with ${describeValue(resolvedWith)}`,
    );
  }
  if (!errorClass.isInstance(caught)) {
    expect.fail(
      `expected a ${errorClass.name}, got ${KeepsakeError.isInstance(caught) ? `${caught.name} (${caught.code})` : describeValue(caught)}: ${caught instanceof Error ? caught.message : ''}`,
    );
  }
  return caught as T;
}

/** Calls `fn`, which may throw synchronously or reject, and returns what it threw. */
export async function captureError(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

function describeValue(value: unknown): string {
  if (value instanceof Error) return `${value.name}`;
  try {
    const text = JSON.stringify(value);
    return text === undefined ? String(value) : text.slice(0, 200);
  } catch {
    return String(value);
  }
}

/**
 * Reads the stored document of a session straight from an adapter and returns its JSON
 * texts (base first, then deltas), so a test can check what is persisted, not what the
 * store has in memory.
 */
export async function storedTexts(
  adapter: StorageAdapter,
  sessionId: string,
): Promise<{ revision: number; texts: string[] } | null> {
  const stored = await adapter.getDocument('sessions', sessionId);
  if (stored === null) return null;
  return { revision: stored.revision, texts: [stored.base, ...stored.deltas] };
}

/** Waits for the first store event matching `predicate`. */
export function nextEvent<E extends { type: string }>(
  subscribe: (listener: (event: E) => void) => () => void,
  predicate: (event: E) => boolean,
): Promise<E> {
  return new Promise((resolve) => {
    const unsubscribe = subscribe((event) => {
      if (!predicate(event)) return;
      unsubscribe();
      resolve(event);
    });
  });
}
