import {
  type CancelOutcome,
  InvalidConfigError,
  InvalidInputError,
  JournalConflictError,
  type JournalEventInput,
  JournalSealedError,
  type Message,
  NotFoundError,
  type RunHandle,
  RunNotActiveError,
  type RunTerminalState,
  randomId,
  type Session,
  type SessionStore,
  StoreClosedError,
} from '@keepsake/core';
import { type AgentInputItem, Runner, RunState, type RunStreamEvent } from '@openai/agents-core';
import { encodeItem, type StoredItem } from './item-codec.js';
import { type LiveRunHook, registerLiveRun } from './live-runs.js';
import { saveRunState } from './run-state.js';
import type { AnyAgent, AnyRunState, AnyStreamedResult } from './sdk-types.js';
import { KeepsakeSession } from './session.js';
import { updateSession } from './session-writes.js';
import { ANCHOR_FIELD, messageOfItems, titleOfItems } from './stored-message.js';
import { eventOfRecord, type JournaledAgentEvent, journalEventOf } from './stream-records.js';

export interface AgentStreamsOptions {
  /** The store sessions and run journals live in; every instance opens its own over one backend. */
  store: SessionStore;
  /** The runner that runs agents. @default new Runner() */
  runner?: Runner;
  /**
   * How often a follower polls the journal of a run another process streams (runs this
   * process streams wake their followers at once). @default the store's `runs.followPollMs`
   */
  pollIntervalMs?: number;
  /**
   * Errors of background work no caller is waiting for (a model or tool that threw, a save
   * that failed: the run then ends under an error marker, or is recovered). @default console.error
   */
  onError?: (error: unknown, context: { sessionId: string; runId: string }) => void;
}

/** What `run()` takes besides the agent and input: the SDK's stream options, and the session. */
export type AgentStreamRunOptions = {
  /** The session the run reads and adds its items to (a `KeepsakeSession` on this store). */
  session: KeepsakeSession;
  context?: unknown;
  maxTurns?: number;
  /** Anything else `Runner.run(agent, input, { stream: true, ... })` takes. */
  [option: string]: unknown;
};

/** One item a follower reads: a journaled event, then exactly one ending. */
export type AgentStreamItem =
  | { type: 'event'; sequence: number; event: JournaledAgentEvent }
  | {
      type: 'end';
      /** How the run ended (E9): completed (also paused for approval), or why it did not. */
      state: RunTerminalState | null;
      reason: 'journal' | 'session' | 'deleted' | 'unknown';
      /** The marker a run that did not complete left in the history (its text), or null. */
      marker: { type: string; text: string } | null;
      lastSequence: number;
    };

/** How a run this process produced ended. */
export type AgentRunOutcome =
  | { state: 'completed'; finalOutput: unknown }
  | { state: 'paused'; pauseId: string; interruptions: number }
  | { state: 'stopped' }
  | { state: 'failed'; error: unknown };

export interface StartedAgentRun {
  /** The Agents SDK session id. */
  sessionId: string;
  /** The Keepsake run id: give it to clients, which reconnect with `follow(sessionId, { runId, after })`. */
  runId: string;
  /** The run's events read from its journal, from the first, then its ending. */
  events: AsyncGenerator<AgentStreamItem>;
  /** Resolves once the run ended and what it produced is stored. Never rejects. */
  done: Promise<AgentRunOutcome>;
}

export interface AgentStreams {
  /**
   * Runs `agent` on `input` (text, items, or the `RunState` of a paused run, from
   * `loadRunState`) with `stream: true`, in the background. The user's input is stored before
   * the agent starts (E1), every stream event is journaled in order (E2), and the items the
   * runner adds go to the session as usual. A run interrupted for approval is saved as the
   * session's paused run (`loadRunState` resumes it, on any instance). If this process dies,
   * the next load after the recovery grace keeps the user's input, the text streamed so far
   * and an interrupted marker (F1). `SessionBusyError` while another run of the session lives
   * (E7).
   */
  run(
    agent: AnyAgent,
    input: string | AgentInputItem[] | AnyRunState,
    options: AgentStreamRunOptions,
  ): Promise<StartedAgentRun>;
  /**
   * The events of a run after sequence `after`, then its ending, whichever instance produces
   * it and also after its producer died (the follower's loads repair it once the grace has
   * passed, F1, E9). `runId` defaults to the session's live run; null when there is none.
   */
  follow(
    sessionId: string,
    options?: { runId?: string; after?: number; signal?: AbortSignal },
  ): Promise<AsyncGenerator<AgentStreamItem> | null>;
  /** E6: stops the session's run, whichever instance produces it; what streamed is kept. */
  cancel(sessionId: string, options?: { runId?: string }): Promise<CancelOutcome>;
  /** Resolves once every run this object is producing has ended (tests, shutdown). */
  settle(): Promise<void>;
}

interface LiveProduction {
  controller: AbortController;
  done: Promise<AgentRunOutcome>;
}

/**
 * Streamed Agents SDK runs that survive their producer: the run's events are a Keepsake run's
 * journal, so a client that reconnects (to this instance or another, after a reload or after
 * the producing process was killed) reads them from where it stopped.
 */
export function createAgentStreams(options: AgentStreamsOptions): AgentStreams {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidConfigError('createAgentStreams needs an options object with a `store`');
  }
  const { store } = options;
  if (typeof store !== 'object' || store === null || typeof store.beginRun !== 'function') {
    throw new InvalidConfigError('Option `store` must be a Keepsake SessionStore');
  }
  const runner = options.runner ?? new Runner();
  const onError =
    options.onError ??
    ((error: unknown, context: { sessionId: string; runId: string }) =>
      console.error(
        `@keepsake/openai-agents: run ${context.runId} of ${context.sessionId}:`,
        error,
      ));
  const live = new Map<string, LiveProduction>();

  const follow = async function* (
    keepsakeId: string,
    runId: string,
    after: number,
    signal?: AbortSignal,
  ): AsyncGenerator<AgentStreamItem> {
    const items = store.followRun(keepsakeId, runId, {
      after,
      ...(signal === undefined ? {} : { signal }),
      ...(options.pollIntervalMs === undefined ? {} : { pollIntervalMs: options.pollIntervalMs }),
    });
    for await (const item of items) {
      if (item.kind === 'record') {
        const event = eventOfRecord(item.record);
        if (event !== null) yield { type: 'event', sequence: item.record.sequence, event };
      } else if (item.kind === 'end') {
        const { ending } = item;
        const marker = ending.markerMessage;
        yield {
          type: 'end',
          state: ending.state,
          reason: ending.reason,
          marker:
            marker === null
              ? null
              : {
                  type: marker.marker.type,
                  text: typeof marker.content === 'string' ? marker.content : '',
                },
          lastSequence: ending.lastSequence,
        };
      }
    }
  };

  return {
    async run(agent, input, runOptions) {
      const { session, ...sdkOptions } = runOptions ?? ({} as AgentStreamRunOptions);
      if (!(session instanceof KeepsakeSession) || session.store !== store) {
        throw new InvalidInputError(
          'run() needs `session`: a KeepsakeSession on the same store as the streams',
          { path: 'session' },
        );
      }
      const resuming = input instanceof RunState;
      const items: AgentInputItem[] = resuming
        ? []
        : typeof input === 'string'
          ? [{ type: 'message', role: 'user', content: input }]
          : input;
      if (!Array.isArray(items)) {
        throw new InvalidInputError('input must be text, an array of items or a RunState', {
          path: 'input',
        });
      }
      const stored = items.map((item, index) => encodeItem(item, `input[${index}]`));
      const keepsakeId = session.keepsakeId;
      const sessionId = await session.getSessionId();
      // E1 needs the session: created (with its title) on its first run.
      await updateSession(
        store,
        keepsakeId,
        { durable: true, createWithTitle: titleOfItems(items) },
        (existing) =>
          existing === null ? { result: undefined, messages: [] } : { result: undefined },
      );
      const runId = randomId();
      const userMessageId = randomId();
      const userMessage = {
        ...messageOfItems(stored, items, store.clock.now(), userMessageId),
        role: 'user' as const,
        ...(resuming ? { agentResume: true } : {}),
      };
      // E1: durable before the agent starts; SessionBusyError while another run lives (E7).
      const handle = await store.beginRun(keepsakeId, { userMessage, runId });
      const journal = new RunJournal(handle, userMessageId, stored);
      const unregister = registerLiveRun(store, keepsakeId, journal);
      const controller = new AbortController();
      const context = { sessionId, runId };
      const done = produce({
        store,
        runner,
        agent,
        input: resuming ? input : items,
        sdkOptions: { ...sdkOptions, session, signal: controller.signal },
        handle,
        journal,
        controller,
        target: session,
        report: (error) => {
          try {
            onError(error, context);
          } catch (failure) {
            console.error('@keepsake/openai-agents: onError threw', failure, 'reporting', error);
          }
        },
      }).finally(() => {
        unregister();
        live.delete(runId);
      });
      live.set(runId, { controller, done });
      return { sessionId, runId, events: follow(keepsakeId, runId, 0), done };
    },

    async follow(sessionId, followOptions = {}) {
      const keepsakeId = new KeepsakeSession({ store, sessionId }).keepsakeId;
      let runId = followOptions.runId;
      if (runId === undefined) {
        try {
          runId = (await store.load(keepsakeId, { refresh: true })).pending?.streamId;
        } catch (error) {
          if (NotFoundError.isInstance(error)) return null;
          throw error;
        }
      }
      if (runId === undefined) return null;
      return follow(keepsakeId, runId, followOptions.after ?? 0, followOptions.signal);
    },

    async cancel(sessionId, cancelOptions = {}) {
      const keepsakeId = new KeepsakeSession({ store, sessionId }).keepsakeId;
      let outcome: CancelOutcome;
      try {
        outcome = await store.cancelRun(keepsakeId, cancelOptions.runId);
      } catch (error) {
        if (NotFoundError.isInstance(error)) return { cancelled: false, reason: 'no-pending-turn' };
        throw error;
      }
      if (outcome.cancelled) live.get(outcome.runId)?.controller.abort('stopped');
      return outcome;
    },

    async settle() {
      while (live.size > 0) await Promise.all([...live.values()].map((run) => run.done));
    },
  };
}

/**
 * The journal of one live run, and the bookkeeping that keeps the history exact when the run
 * is recovered after a crash (F1, F4). Core's repair folds the journal's text into the
 * transcript as segments (runs of `token`/`reasoning` records between `tool` records); text
 * the history already holds as items (the runner added them) must not come back a second time:
 * - each segment journaled before the runner added items gets an anchor message whose journal
 *   tag says it is in the transcript already (core then folds only what comes after it);
 * - deltas journaled after the runner added items, until the next model response starts, are
 *   the added items' own text: they are journaled as non-folding `warning` records.
 * Events are classified as they arrive (in order, with no wait), and appended in that order.
 */
class RunJournal implements LiveRunHook {
  private readonly inputJson: string[];
  private sequence = 0;
  private foldable = true;
  private segments: Array<{ eventId: string; through: number }> = [];
  private segmentOpen = false;
  private anchored = new Map<string, number>();
  private pendingAnchors: Map<string, number> | null = null;
  private tail: Promise<void> = Promise.resolve();
  private failure: unknown = null;

  readonly handle: RunHandle;
  private readonly userMessageId: string;

  constructor(handle: RunHandle, userMessageId: string, input: StoredItem[]) {
    this.handle = handle;
    this.userMessageId = userMessageId;
    this.inputJson = input.map((item) => JSON.stringify(item));
  }

  /** Journals one SDK event after those before it; resolves once it is appended. */
  push(event: RunStreamEvent): void {
    if (event.type === 'raw_model_stream_event') {
      const type = (event.data as { type?: unknown }).type;
      if (type === 'response_started') this.foldable = true;
    }
    const input = journalEventOf(event, this.foldable);
    if (input === null) return;
    const eventId = randomId();
    const sequence = ++this.sequence;
    this.track(input, eventId, sequence);
    const record: JournalEventInput = { ...input, eventId };
    this.tail = this.tail.then(async () => {
      if (this.failure !== null) return;
      try {
        await this.handle.append(record);
      } catch (error) {
        this.failure = error;
      }
    });
  }

  /** Waits for every append so far; throws the first that failed. */
  async drain(): Promise<void> {
    await this.tail;
    if (this.failure !== null) throw this.failure;
  }

  get failed(): unknown {
    return this.failure;
  }

  private track(input: JournalEventInput, eventId: string, sequence: number): void {
    if (input.type === 'token' || input.type === 'reasoning') {
      if (!this.segmentOpen) {
        this.segments.push({ eventId, through: sequence });
        this.segmentOpen = true;
      } else {
        this.segments.at(-1)!.through = sequence;
      }
    } else if (input.type === 'tool') {
      this.segmentOpen = false;
    }
  }

  planAppend(
    session: Session,
    stored: StoredItem[],
    items: AgentInputItem[],
    now: number,
  ): Message[] | null {
    // E6, D4: stopped here or by another instance, or repaired as dead: the turn ended with
    // the output whose appends resolved, and the runner's later items are not kept.
    if (session.pending?.streamId !== this.handle.runId) return null;
    // From here until the next response starts, streamed text is these items' own.
    this.foldable = false;
    const messages = [...session.messages];
    let rest = stored.map((one, index) => ({ one, item: items[index]! }));
    const userIndex = messages.findIndex((message) => message.id === this.userMessageId);
    const matched = this.matchedInput(stored);
    if (userIndex < 0) {
      // E1, E5: the run's user turn goes in first, under the id of the pending turn's message,
      // so completing (or recovering) the run never adds the input a second time. It holds the
      // input items when the runner added them as given; else none (the runner's own form of
      // the input follows, as items).
      const own = matched === this.inputJson.length ? rest.slice(0, matched) : [];
      rest = rest.slice(own.length);
      messages.push({
        ...messageOfItems(
          own.map((entry) => entry.one),
          own.map((entry) => entry.item),
          now,
          this.userMessageId,
        ),
        role: 'user',
      });
    }
    for (const entry of rest) messages.push(messageOfItems([entry.one], [entry.item], now));
    const anchors = new Map(this.anchored);
    for (const segment of this.segments) {
      if (anchors.get(segment.eventId) === segment.through) continue;
      anchors.set(segment.eventId, segment.through);
      const anchor = anchorMessage(this.handle.runId, segment.eventId, segment.through, now);
      const existing = messages.findIndex((message) => message.id === anchor.id);
      if (existing >= 0) messages[existing] = anchor;
      else messages.push(anchor);
    }
    this.pendingAnchors = anchors;
    return messages;
  }

  appended(): void {
    if (this.pendingAnchors !== null) this.anchored = this.pendingAnchors;
    this.pendingAnchors = null;
  }

  private matchedInput(stored: StoredItem[]): number {
    let matched = 0;
    while (
      matched < this.inputJson.length &&
      matched < stored.length &&
      JSON.stringify(stored[matched]) === this.inputJson[matched]
    ) {
      matched++;
    }
    return matched;
  }
}

function anchorMessage(runId: string, eventId: string, through: number, now: number): Message {
  return {
    id: `anchor_${runId.slice(0, 40)}_${through}_${eventId.slice(0, 40)}`.slice(0, 128),
    role: 'assistant',
    content: '',
    createdAt: now,
    journal: { runId, eventId, throughSequence: through },
    [ANCHOR_FIELD]: true,
  } as Message;
}

interface ProduceInput {
  store: SessionStore;
  runner: Runner;
  agent: AnyAgent;
  input: AgentInputItem[] | AnyRunState;
  sdkOptions: Record<string, unknown>;
  handle: RunHandle;
  journal: RunJournal;
  controller: AbortController;
  target: KeepsakeSession;
  report(error: unknown): void;
}

/** The error marker's text when the run threw (its message may hold secrets). */
export const RUN_FAILED_TEXT = 'The agent run failed.';

async function produce(job: ProduceInput): Promise<AgentRunOutcome> {
  const { handle, journal, controller, store } = job;
  const unsubscribe = store.on((event) => {
    if (event.type === 'run' && event.runId === handle.runId && !handle.active) {
      controller.abort('stopped');
    }
  });
  try {
    const result = (await job.runner.run(
      job.agent,
      job.input as never,
      {
        ...(job.sdkOptions as object),
        stream: true,
      } as never,
    )) as AnyStreamedResult;
    for await (const event of result) {
      if (journal.failed !== null || !handle.active) {
        controller.abort('stopped');
        break;
      }
      journal.push(event);
    }
    await result.completed.catch(() => {});
    await journal.drain();
    if (!handle.active || controller.signal.aborted) return await settleStopped(handle);
    if (result.error !== null && result.error !== undefined) throw result.error;
    const interruptions = result.interruptions ?? [];
    let outcome: AgentRunOutcome = { state: 'completed', finalOutput: result.finalOutput };
    if (interruptions.length > 0) {
      // Stored before the run ends: a crash in between leaves a run that can still be resumed.
      const pauseId = await saveRunState(job.target, result.state);
      outcome = { state: 'paused', pauseId, interruptions: interruptions.length };
    }
    await completeRun(handle);
    return outcome;
  } catch (error) {
    controller.abort('failed');
    if (lostTheTurn(error)) return await settleStopped(handle);
    job.report(error);
    await handle.fail({ message: RUN_FAILED_TEXT }).catch((failure: unknown) => {
      if (!lostTheTurn(failure)) job.report(failure);
    });
    return { state: 'failed', error };
  } finally {
    unsubscribe();
  }
}

async function completeRun(handle: RunHandle): Promise<void> {
  // The runner added the run's items already (through the session): nothing more to write
  // but the end of the pending turn (E5), which puts the user turn in if the runner did not.
  for (let attempt = 1; ; attempt++) {
    try {
      await handle.complete({ assistantMessages: [] });
      return;
    } catch (error) {
      if (!(error as { code?: string }).code?.includes('revision_conflict') || attempt >= 3)
        throw error;
    }
  }
}

/** The run was stopped (here or elsewhere) or taken over by a repair: end its handle, quietly. */
async function settleStopped(handle: RunHandle): Promise<AgentRunOutcome> {
  if (handle.active) {
    try {
      await handle.cancel();
    } catch (error) {
      if (!lostTheTurn(error)) throw error;
    }
  }
  return { state: 'stopped' };
}

function lostTheTurn(error: unknown): boolean {
  return (
    JournalSealedError.isInstance(error) ||
    JournalConflictError.isInstance(error) ||
    RunNotActiveError.isInstance(error) ||
    StoreClosedError.isInstance(error)
  );
}
