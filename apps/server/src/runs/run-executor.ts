import { setTimeout as delay } from 'node:timers/promises';
import {
  JournalConflictError,
  JournalSealedError,
  KeepsakeError,
  type RunHandle,
  RunNotActiveError,
  type SessionStore,
  StoreClosedError,
} from '@keepsake/core';
import type { FastifyBaseLogger } from 'fastify';
import type { Agent } from '../agents/agent.js';
import type { DemoMemoryProvider } from '../memory/demo-memory-provider.js';
import { retryOnConflict } from './conflict-retry.js';
import { toAgentHistory, toJournalEvent } from './journal-events.js';

export interface RunExecutorOptions {
  namespace: string;
  store: SessionStore;
  agent: Agent;
  memory: DemoMemoryProvider;
  logger: FastifyBaseLogger;
  onConflictRetry?: (operation: string) => void;
  /** An append of a run here refused: another instance took the run over or cancelled it. */
  onLateAppendRefused?: () => void;
}

interface LiveRun {
  handle: RunHandle;
  controller: AbortController;
  finished: Promise<void>;
}

/** Why a local run's agent was stopped. */
type StopReason = 'cancelled' | 'shutdown';

/**
 * Drives runs of one namespace: begins the run (the user turn is durable before the agent
 * starts, E1), streams the agent's events into the journal, completes, fails or leaves the
 * run for recovery. A run is not tied to the HTTP request that started it: clients follow
 * it through the journal, so a closed tab or a reload never stops it.
 */
export class RunExecutor {
  private readonly live = new Map<string, LiveRun>();
  private readonly unsubscribe: () => void;

  constructor(private readonly options: RunExecutorOptions) {
    // A cancel that another request (or another process, through the journal) applied
    // shows up as a run event: stop the agent instead of letting it stream into a sealed journal.
    this.unsubscribe = options.store.on((event) => {
      if (event.type === 'run' && event.state !== 'started') {
        const run = this.live.get(event.runId);
        if (run !== undefined && !run.handle.active) run.controller.abort('cancelled');
      }
    });
  }

  get inFlight(): number {
    return this.live.size;
  }

  isLocal(runId: string): boolean {
    return this.live.has(runId);
  }

  /** Begins a run and returns once its pending turn is durable; the agent streams in the background. */
  async start(
    sessionId: string,
    content: string,
    identity: { messageId: string; runId: string } | null = null,
  ): Promise<RunHandle> {
    const { store, memory, namespace } = this.options;
    const handle = await retryOnConflict(
      async () => {
        // Another server on the same backend may have written the session since this one
        // cached it; beginning from a stale copy would only end in a revision conflict.
        await store.load(sessionId, { refresh: true });
        if (identity === null) {
          return store.beginRun(sessionId, { userMessage: { role: 'user', content } });
        }
        // An idempotent send: the ids a retry of it will name (the message keeps its run's id).
        return store.beginRun(sessionId, {
          userMessage: { id: identity.messageId, role: 'user', content, runId: identity.runId },
          runId: identity.runId,
        });
      },
      { onRetry: () => this.options.onConflictRetry?.('begin-run') },
    );
    // The memory provider owns this session's future completed turns (G5).
    store.lifecycle.registerAgent(sessionId, memory.agentFor(namespace, store, sessionId));
    const controller = new AbortController();
    const run: LiveRun = { handle, controller, finished: Promise.resolve() };
    run.finished = this.drive(run, content).finally(() => this.live.delete(handle.runId));
    this.live.set(handle.runId, run);
    return handle;
  }

  /** Resolves once every run streaming now has finished (tests, shutdown). */
  async settle(): Promise<void> {
    await Promise.all([...this.live.values()].map((run) => run.finished));
  }

  /** Stops the agent of a local run after its cancel was recorded. */
  stopLocal(runId: string): void {
    this.live.get(runId)?.controller.abort('cancelled' satisfies StopReason);
  }

  /**
   * Shutdown, step one: give runs until `deadline` to finish; stop the rest. A stopped run
   * keeps its pending turn and journal, so the next start (or another process) recovers it.
   */
  async drain(deadline: number): Promise<{ finished: number; stopped: number }> {
    const runs = [...this.live.values()];
    const remaining = Math.max(0, deadline - Date.now());
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), remaining);
    });
    await Promise.race([Promise.all(runs.map((run) => run.finished)), timedOut]);
    clearTimeout(timer);
    const stillRunning = [...this.live.values()];
    for (const run of stillRunning) run.controller.abort('shutdown' satisfies StopReason);
    await Promise.all(stillRunning.map((run) => run.finished));
    return { finished: runs.length - stillRunning.length, stopped: stillRunning.length };
  }

  close(): void {
    this.unsubscribe();
  }

  /**
   * A cancel from another process seals the journal but cannot reach this process's run
   * handle, which would keep the session busy here. Refreshing the session shows the run
   * is fenced out (D4); `complete()` then ends the handle and writes nothing, to the
   * transcript or the journal (the RunNotActiveError it throws is the expected outcome).
   */
  private async settleFencedRun(handle: RunHandle): Promise<void> {
    const { store, logger } = this.options;
    try {
      await store.load(handle.sessionId, { refresh: true });
      await handle.complete();
    } catch (error) {
      if (!RunNotActiveError.isInstance(error) && !JournalSealedError.isInstance(error)) {
        logger.warn({ err: error, runId: handle.runId }, 'could not settle a fenced-out run');
      }
    }
  }

  private async drive(run: LiveRun, content: string): Promise<void> {
    const { store, agent, logger } = this.options;
    const { handle, controller } = run;
    try {
      const session = await store.load(handle.sessionId);
      const messages = [...toAgentHistory(session.messages), { role: 'user' as const, content }];
      for await (const event of agent.stream({
        sessionId: handle.sessionId,
        messages,
        signal: controller.signal,
      })) {
        // Cancelled or deleted here: nothing more may reach the journal.
        if (!handle.active) return;
        await handle.append(toJournalEvent(event));
      }
      controller.signal.throwIfAborted();
      // complete() re-reads and retries once after a conflict; another server writing the
      // same session (a rename) can race it again, so keep going a few more times.
      await retryOnConflict(() => handle.complete(), {
        onRetry: () => this.options.onConflictRetry?.('complete-run'),
      });
    } catch (error) {
      if (isSealedElsewhere(error)) this.options.onLateAppendRefused?.();
      if (isSealedElsewhere(error) && handle.active) {
        await this.settleFencedRun(handle);
        return;
      }
      if (controller.signal.aborted || isFencedOut(error)) return;
      logger.error({ err: error, sessionId: handle.sessionId, runId: handle.runId }, 'run failed');
      await this.recordFailure(run, {
        message: KeepsakeError.isInstance(error) ? error.message : 'The agent failed.',
        code: KeepsakeError.isInstance(error) ? error.code : 'agent_error',
      });
    }
  }

  /**
   * Ends a failed run with its error (E6). The backend that failed the run may refuse this
   * write too (a Redis master failing over): the run would then stay live in this store with
   * nothing left to end it, so its streams on this instance would never end and its session
   * would stay busy here (another instance repairs the turn only after the grace, F1). A
   * retryable refusal is tried again, with backoff, until the failure is recorded, another
   * instance ended the turn (fenced out), or shutdown stops the run (its pending turn is then
   * recovered like any other).
   */
  private async recordFailure(
    run: LiveRun,
    failure: { message: string; code: string },
  ): Promise<void> {
    const { logger } = this.options;
    const { handle, controller } = run;
    for (let attempt = 0; ; attempt++) {
      try {
        await handle.fail(failure);
        return;
      } catch (error) {
        if (isFencedOut(error)) return;
        const retryable = KeepsakeError.isInstance(error) && error.isRetryable;
        if (!retryable || !handle.active || controller.signal.aborted) {
          logger.error({ err: error, runId: handle.runId }, 'recording the failure failed');
          return;
        }
        if (attempt === 0) {
          logger.warn(
            { err: error, runId: handle.runId },
            'recording the failure failed; retrying',
          );
        }
        const backoffMs = Math.min(FAILURE_RETRY_MAX_MS, FAILURE_RETRY_FIRST_MS * 2 ** attempt);
        await delay(backoffMs, undefined, { signal: controller.signal }).catch(() => undefined);
        // Shutdown: the pending turn stays for recovery, as for every run it stops.
        if (controller.signal.aborted) return;
      }
    }
  }
}

/** Backoff between attempts to record a run's failure: a failover takes seconds. */
const FAILURE_RETRY_FIRST_MS = 100;
const FAILURE_RETRY_MAX_MS = 2_000;

/** Another process sealed (cancelled) or took over this run's journal. */
function isSealedElsewhere(error: unknown): boolean {
  return JournalSealedError.isInstance(error) || JournalConflictError.isInstance(error);
}

/** The run lost ownership (cancelled here or elsewhere, recovered, or the store closed). */
function isFencedOut(error: unknown): boolean {
  return (
    JournalSealedError.isInstance(error) ||
    RunNotActiveError.isInstance(error) ||
    StoreClosedError.isInstance(error) ||
    JournalConflictError.isInstance(error)
  );
}
