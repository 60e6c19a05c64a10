import { isDeepStrictEqual } from 'node:util';
import { BackendError, KeepsakeError, type Session, type StorageAdapter } from '@keepsake/core';
import type fc from 'fast-check';
import { expect } from 'vitest';
import type { OpenedStore, TestEnvironment } from '../../harness/environment.js';
import { type PersistedSession, readPersistedSession } from '../../harness/persisted-document.js';
import type { AdapterMethod } from '../../harness/recording-fault-injecting-adapter.js';
import { compareTranscript, type ExpectedMessage } from './expected-messages.js';
import { History } from './history.js';
import type { FaultPoint, WorldConfig } from './program.js';
import { SessionModel } from './session-model.js';

type ErrorClass = { isInstance(error: unknown): boolean; name: string };

/** Names a slot's session has in turn (its first id, then what renames move it to). */
const NAMES_PER_SLOT = 3;

/**
 * The real side of one run: the store under test (reopened by restarts), fast-check's
 * scheduler deciding every interleaving, the faults, a raw adapter for reading what is
 * stored, the history, and the reference model of every slot.
 */
export class ModelWorld {
  readonly history = new History();
  readonly slots: SessionModel[];
  private current: OpenedStore | null = null;
  private raw: StorageAdapter | null = null;
  private scheduling = true;

  constructor(
    readonly env: TestEnvironment,
    readonly config: WorldConfig,
    private readonly scheduler: fc.Scheduler,
  ) {
    // One slot more than the tasks use: the spare, written only between rounds.
    this.slots = Array.from(
      { length: config.sessions + 1 },
      (_, slot) =>
        new SessionModel(
          slot,
          Array.from({ length: NAMES_PER_SLOT }, () => env.id(`m${slot}`)),
        ),
    );
  }

  get opened(): OpenedStore {
    if (this.current === null) throw new Error('no store is open');
    return this.current;
  }

  get store() {
    return this.opened.store;
  }

  /** The slot no task uses: interludes write it while the backend fails inside. */
  get spare(): SessionModel {
    return this.slots.at(-1)!;
  }

  /** Opens a store on the run's namespace with the run's options (and, if the run says so, every adapter call a scheduling point). */
  async open(): Promise<void> {
    const opened = await this.env.openStore({
      cache: { maxSessions: this.config.cacheSize },
      journal: { durability: this.config.durability },
    });
    if (this.config.interleaveAdapterCalls) {
      opened.adapter.interleave = (method, args) => this.gate(labelOf(method, args));
    }
    this.current = opened;
  }

  /** A point where fast-check's scheduler decides which waiting task goes on. */
  gate(label: string): Promise<void> {
    if (!this.scheduling) return Promise.resolve();
    return this.scheduler.schedule(Promise.resolve(), label);
  }

  /** From now on nothing waits for the scheduler (cleanup after the run). */
  stopScheduling(): void {
    this.scheduling = false;
  }

  /**
   * Injects one transient fault (EIO, as a conforming adapter reports it: a retryable
   * BackendError) on the next call of `point` for `sessionId`. Returns the function that
   * removes it if no call met it.
   */
  arm(point: FaultPoint, sessionId: string): () => void {
    const method: AdapterMethod = point;
    const remove = this.opened.adapter.inject({
      method,
      times: 1,
      match: (args) =>
        point === 'appendLog' || point === 'readLog'
          ? args[0] === sessionId
          : args[0] === 'sessions' && args[1] === sessionId,
      error: () =>
        new BackendError(this.opened.adapter.name, `${point} (injected transient EIO)`, {
          cause: Object.assign(new Error('EIO: i/o error (injected)'), { code: 'EIO' }),
          isRetryable: true,
        }),
    });
    this.history.note(`fault armed: EIO on the next ${point} of ${sessionId}`);
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      remove();
    };
  }

  /** What storage holds for `id`, read by a raw adapter and decoded with core's codec. */
  async stored(id: string): Promise<PersistedSession | null> {
    this.raw ??= await this.env.rawAdapter();
    return readPersistedSession(this.raw, id);
  }

  // ── Checks ───────────────────────────────────────────────────────────────────────

  expectTranscript(
    session: Pick<Session, 'messages'>,
    expected: readonly ExpectedMessage[],
    what: string,
  ): void {
    const compared = compareTranscript(session, expected);
    this.expectEqual(compared.actual, compared.expected, what);
  }

  /** Deep equality with both sides printed in full (vitest shortens nested objects). */
  expectEqual(actual: unknown, expected: unknown, what: string): void {
    if (isDeepStrictEqual(actual, expected)) return;
    this.fail(
      `${what}:\n  expected ${JSON.stringify(expected)}\n  actual   ${JSON.stringify(actual)}`,
    );
  }

  /** The rejection is a typed Keepsake error (never a TypeError) and, when given, one of `classes`. */
  expectTypedRejection(error: unknown, what: string, classes: readonly ErrorClass[] = []): void {
    const described =
      error instanceof Error ? `${error.name}: ${error.message}` : `non-error ${String(error)}`;
    expect(
      KeepsakeError.isInstance(error),
      `${what} rejected with a typed KeepsakeError, got ${described}`,
    ).toBe(true);
    if (classes.length === 0) return;
    expect(
      classes.some((errorClass) => errorClass.isInstance(error)),
      `${what} rejected with ${classes.map((errorClass) => errorClass.name).join(' or ')}, got ${described}`,
    ).toBe(true);
  }

  /** Fails with a message saying what was expected (the history is added by the runner). */
  fail(message: string): never {
    return expect.fail(message);
  }
}

function labelOf(method: AdapterMethod, args: readonly unknown[]): string {
  const names = args.slice(0, 2).filter((arg): arg is string => typeof arg === 'string');
  return `${method}(${names.join(', ')})`;
}
