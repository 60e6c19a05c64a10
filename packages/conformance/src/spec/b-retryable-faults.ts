/**
 * B2, A2, issue 42 item 4: a backend fault surfaces as retryable exactly when a retry may get
 * past it. Core wraps a plain `Error` from an adapter into a non-retryable `BackendError`, so
 * an adapter that reported EIO, a busy lock or a dropped connection as non-retryable (or as a
 * plain `Error`) passed every test. With the initializer's `injectBackendFault`, a transient
 * fault (the backend's EIO, reset, 503) must reach the application as a typed error with
 * `isRetryable: true`, or not at all (the adapter retried it); a permanent one (a permission
 * error, a malformed request) as a typed error with `isRetryable: false`.
 */
import { KeepsakeError, type Session, type SessionStore } from '@keepsake/core';
import { expect } from 'vitest';
import type { TestEnvironment } from '../harness/environment.js';
import { textMessage } from '../harness/fixtures.js';
import type { SpecRegistrar } from '../harness/suite.js';
import type { BackendFaultKind } from '../types.js';

type Outcome = { settled: 'resolved' } | { settled: 'rejected'; error: unknown };

async function outcomeOf(promise: Promise<unknown>): Promise<Outcome> {
  try {
    await promise;
    return { settled: 'resolved' };
  } catch (error) {
    return { settled: 'rejected', error };
  }
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const retryable = KeepsakeError.isInstance(error) ? ` (isRetryable: ${error.isRetryable})` : '';
  return `${error.name}: ${error.message}${retryable}`;
}

/** What a call that met the fault may do, by the fault's kind. */
function expectClassified(outcome: Outcome, kind: BackendFaultKind, call: string): void {
  // A call may not meet the fault at all (a backend reads without the I/O that faults), and
  // a transient fault may be retried away inside the adapter: a call that resolved says
  // nothing here. The test asks below that a permanent fault failed one of them.
  if (outcome.settled === 'resolved') return;
  const { error } = outcome;
  expect(
    KeepsakeError.isInstance(error),
    `${call}: a typed error, got ${describeError(error)}`,
  ).toBe(true);
  expect(
    (error as KeepsakeError).isRetryable,
    `${call} met a ${kind} fault of the backend: ${kind === 'transient' ? 'a retry may succeed, so it must be retryable' : 'a retry cannot help, so it must not be retryable'}; got ${describeError(error)}`,
  ).toBe(kind === 'transient');
}

/** A session stored by one store, for another (cold) store to read and write. */
async function storedSession(env: TestEnvironment): Promise<Session> {
  const { store } = await env.openStore();
  return store.create(
    { id: env.id(), messages: [textMessage(env, 'user', 'stored before the fault')] },
    { fsync: true },
  );
}

async function withFault<T>(
  env: TestEnvironment,
  kind: BackendFaultKind,
  prepare: (store: SessionStore) => Promise<T>,
  call: (store: SessionStore, prepared: T) => Promise<unknown>,
): Promise<Outcome | null> {
  const { store } = await env.openStore();
  const prepared = await prepare(store);
  const remove = await env.injectBackendFault('documents', env.namespace, kind);
  if (remove === null) return null;
  try {
    return await outcomeOf(call(store, prepared));
  } finally {
    remove();
  }
}

export function defineRetryableFaultTests(suite: SpecRegistrar): void {
  const { initializer } = suite.context;
  const injects = (kind: BackendFaultKind) =>
    initializer.injectBackendFault !== undefined &&
    (kind === 'transient' || (initializer.backendFaultKinds ?? []).includes(kind));
  for (const kind of ['transient', 'permanent'] as const) {
    if (!injects(kind)) {
      // Never a silent skip: the test is there, reported "not verified".
      suite.test(
        'B2',
        `a ${kind} backend fault surfaces ${kind === 'transient' ? 'as retryable' : 'as not retryable'}: not verified, the initializer injects no ${kind} fault`,
        async (env) => {
          expect(injects(kind)).toBe(false);
          env.notVerifiedNote = `not verified (injectBackendFault cannot inject a ${kind} fault)`;
        },
      );
      continue;
    }
    suite.test(
      'B2',
      `a ${kind} backend fault on a session read or write surfaces as a typed error ${kind === 'transient' ? 'that is retryable (or not at all)' : 'that is not retryable'}`,
      async (env) => {
        const session = await storedSession(env);
        let met = 0;
        const read = await withFault(
          env,
          kind,
          async () => undefined,
          (store) => store.load(session.id),
        );
        if (read !== null) {
          met++;
          expectClassified(read, kind, 'a load');
        }
        const write = await withFault(
          env,
          kind,
          (store) => store.load(session.id),
          (store, loaded) => {
            loaded.messages.push(textMessage(env, 'assistant', 'written into the fault'));
            return store.save(loaded, { fsync: true });
          },
        );
        if (write !== null) {
          met++;
          expectClassified(write, kind, 'a save');
        }
        expect(met, `injectBackendFault injected no ${kind} fault`).toBeGreaterThan(0);
        if (kind === 'permanent') {
          // No retry gets past a permanent fault: the load or the save that met it failed.
          expect(
            [read, write].some((outcome) => outcome?.settled === 'rejected'),
            'a permanent fault was injected before a load and before a save, and both resolved: it was swallowed (or never met)',
          ).toBe(true);
        }
        // A faulted call changes nothing it did not report: the session is still readable.
        const { store } = await env.openStore();
        expect((await store.load(session.id)).id).toBe(session.id);
      },
    );
  }
}
