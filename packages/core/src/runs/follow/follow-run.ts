/**
 * Folder runs/follow/: store.followRun, following a run to its one ending from any instance
 * (E9): this file reads and waits, run-followers.ts wakes followers of runs this store streams,
 * run-standing.ts reads how a session stands toward a run, follow-types.ts the public types.
 */

import type { OwnerState } from '../../adapter/liveness.js';
import { NotFoundError } from '../../errors/storage-errors.js';
import type { Clock } from '../../time/clock.js';
import type { JournalEventType, Marker, Session } from '../../validation/schemas.js';
import type {
  JournalReadOptions,
  JournalReadResult,
  RunSummary,
  RunTerminalState,
} from '../run-types.js';
import type { FollowRunItem, RunEnding } from './follow-types.js';
import type { FollowerWatch, RunFollowers } from './run-followers.js';
import { type RunStanding, runStandingIn } from './run-standing.js';

/** What following a run needs from its store. */
export interface FollowRunHost {
  readonly clock: Clock;
  readonly graceMs: number;
  readonly followers: RunFollowers;
  readonly closed: boolean;
  readJournal(
    sessionId: string,
    runId: string,
    options: JournalReadOptions,
  ): Promise<JournalReadResult>;
  runSummary(sessionId: string, runId: string): Promise<RunSummary>;
  /** A fresh load: it is what repairs a dead run's turn (F1) and settles its marker (F2). */
  loadFresh(sessionId: string): Promise<Session>;
  closeAnsweredRun(sessionId: string, runId: string): Promise<RunTerminalState | null>;
  /** Whether this store streams the run (its appends and endings wake the follower). */
  isLiveHere(runId: string): boolean;
  /** Whether the backend can say if a run's owner is alive (AdapterLiveness). */
  readonly knowsOwners: boolean;
  /** F1: the backend's word on a run's owner (AdapterLiveness). */
  ownerState(ownerId: string): Promise<OwnerState>;
  /** E9: the backend's push when another instance appends (`watchLog`), or null without one. */
  watchLog(sessionId: string, runId: string, onAppend: () => void): (() => void) | null;
}

export interface FollowSettings {
  after: number;
  signal: AbortSignal | undefined;
  pollIntervalMs: number;
  /** The poll where the backend pushes appends made elsewhere (`watchLog`): a safety net. */
  pushedPollIntervalMs: number;
}

/** Records per read: a slow consumer holds at most this page plus FOLLOWER_BUFFER records. */
const FOLLOW_PAGE = 256;

/**
 * How often (real time) a follower of a silent run asks whether its owner is alive, where
 * the backend can tell (AdapterLiveness): a dead owner's run is then repaired within about
 * this long, not after the grace.
 */
export const OWNER_CHECK_MS = 1_000;

/** Polls a follower waits for a run's marker after its sealing record (E6, F1). */
const MARKER_POLLS = 4;

const terminalTypes = new Map<JournalEventType, RunTerminalState>([
  ['done', 'completed'],
  ['error', 'errored'],
  ['cancel', 'interrupted-by-user'],
  ['tool_limit', 'tool-limit-reached'],
  ['interrupted', 'interrupted-by-crash'],
]);

/**
 * H4: follows a run's journal from a sequence to its ending, whichever instance streams it
 * and whichever backend holds it. The journal is the one source of truth: records this
 * store appends arrive in hand (no read), a run streamed elsewhere is read on every poll,
 * and a run nobody streams any more is repaired by the follower's own loads of its session
 * (F1), whose crash record ends it like any other ending.
 *
 * Pull-based: nothing is read before the consumer asks for more, so a slow consumer holds
 * one page and one bounded buffer at most (FOLLOW_PAGE, FOLLOWER_BUFFER).
 */
export async function* followRun(
  host: FollowRunHost,
  sessionId: string,
  runId: string,
  settings: FollowSettings,
): AsyncGenerator<FollowRunItem> {
  const watch = host.followers.watch(runId);
  const follow = new Follow(host, sessionId, runId, settings);
  try {
    yield* follow.run(watch);
  } finally {
    follow.stopPushes();
    watch.dispose();
  }
}

class Follow {
  private after: number;
  /** When (store clock) the session is looked at next, for a run not streamed here. */
  private lookAt: number;
  /** The last record's time: a repair waits `graceMs` past it (F1). */
  private lastRecordAt = 0;
  /**
   * The run is no longer the session's pending turn and the journal had nothing more: read
   * once more before ending by the session (a repair may have just appended its record).
   */
  private settledReads = 0;
  /** The pending turn's owner, to ask about while the run is silent (F1), and when next. */
  private ownerId: string | null = null;
  private ownerCheckAt = 0;
  private ownerLooked = false;
  /** Whether the records up to `after` were checked for an ending (a reconnect's). */
  private checkedBefore = false;

  constructor(
    private readonly host: FollowRunHost,
    private readonly sessionId: string,
    private readonly runId: string,
    private readonly settings: FollowSettings,
  ) {
    this.after = settings.after;
    this.waitMs = settings.pollIntervalMs;
    // Looked at once caught up, unless records came first (their times say when to look).
    this.lookAt = host.clock.now();
  }

  /** How long to wait for a wake before reading again: the poll, or its safety net. */
  private waitMs: number;
  /** Stops the backend's push of appends made elsewhere, once one was set up. */
  private unwatch: (() => void) | null = null;

  /**
   * E9: a run streamed elsewhere wakes the follower through the backend's push where it has
   * one (`watchLog`); the poll then only catches what a push missed. Set up after the first
   * read (the adapter is open by then). A run streamed here wakes its followers anyway.
   */
  private startPushes(): void {
    if (this.unwatch !== null || this.host.isLiveHere(this.runId)) return;
    this.unwatch = this.host.watchLog(this.sessionId, this.runId, () =>
      this.host.followers.changed(this.runId),
    );
    if (this.unwatch === null) return;
    this.waitMs = this.settings.pushedPollIntervalMs;
    // An append between the first read and the push's start woke nobody: read once more.
    this.host.followers.changed(this.runId);
  }

  stopPushes(): void {
    this.unwatch?.();
  }

  private get stopped(): boolean {
    return this.settings.signal?.aborted === true || this.host.closed;
  }

  async *run(watch: FollowerWatch): AsyncGenerator<FollowRunItem> {
    const { host, sessionId, runId } = this;
    let mustRead = true;
    while (!this.stopped) {
      if (!mustRead) {
        // Woken by this store: the records it appended are in hand.
        const taken = watch.take(this.after);
        for (const record of taken.records) {
          yield { kind: 'record', record };
          const ending = await this.afterRecord(record.sequence, record.type, record.at);
          if (ending !== null) {
            yield { kind: 'end', ending };
            return;
          }
        }
        if (taken.complete && taken.records.length > 0) {
          await watch.wait(this.waitMs, this.settings.signal);
          continue;
        }
      }
      mustRead = false;
      const page = await host.readJournal(sessionId, runId, {
        afterSequence: this.after,
        limit: FOLLOW_PAGE,
      });
      this.startPushes();
      for (const item of itemsOf(page)) {
        yield item;
        if (item.kind !== 'record') continue;
        const ending = await this.afterRecord(
          item.record.sequence,
          item.record.type,
          item.record.at,
        );
        if (ending !== null) {
          yield { kind: 'end', ending };
          return;
        }
      }
      const moved = page.records.length > 0 || page.lastSequence > this.after;
      // A skipped record still moved the journal on (torn tails are not counted in
      // `lastSequence`, so a record still being written is not).
      if (page.lastSequence > this.after) this.after = page.lastSequence;
      if (moved) {
        this.settledReads = 0;
        // A repair waits `graceMs` past the run's last sign of life, its last record (F1):
        // look right then (the record's own time, as the repair reads it).
        if (this.lastRecordAt > 0) this.lookAt = this.lastRecordAt + host.graceMs;
        mustRead = page.records.length + page.invalidRecords.length >= FOLLOW_PAGE;
        if (!mustRead) await watch.wait(this.waitMs, this.settings.signal);
        continue;
      }
      if (!this.checkedBefore) {
        // Records up to `after` were read by someone else (a reconnecting client): one
        // summary says whether they already hold the ending. Later records are all seen here.
        this.checkedBefore = true;
        const summary = this.after > 0 ? await host.runSummary(sessionId, runId) : null;
        if (
          summary !== null &&
          summary.terminalState !== null &&
          summary.lastSequence <= this.after
        ) {
          yield { kind: 'end', ending: await this.ending(summary.terminalState) };
          return;
        }
      }
      if (!host.isLiveHere(runId) && (this.sessionLookDue() || (await this.ownerGone()))) {
        const outcome = await this.lookAtSession(page.exists);
        if (outcome === 'read') {
          mustRead = true;
          continue;
        }
        if (outcome !== null) {
          yield { kind: 'end', ending: outcome };
          return;
        }
      }
      await watch.wait(this.waitMs, this.settings.signal);
    }
  }

  /** After a record was handed on: the ending it makes, if it is a terminal record. */
  private async afterRecord(
    sequence: number,
    type: JournalEventType,
    at: number,
  ): Promise<RunEnding | null> {
    this.after = sequence;
    this.lastRecordAt = Math.max(this.lastRecordAt, at);
    const state = terminalTypes.get(type);
    return state === undefined ? null : this.ending(state);
  }

  private sessionLookDue(): boolean {
    if (this.settledReads > 0) return true;
    // Where the backend knows owners, the first look learns the run's (F1: a dead owner's
    // run is then repaired within OWNER_CHECK_MS of going silent, not a grace later).
    if (this.host.knowsOwners && !this.ownerLooked) return true;
    // A run without a journal, or whose records someone else read, is looked up at once (a
    // reconnect after its marker became final ends straight away), then on the schedule
    // `nextLookAt` sets.
    return this.host.clock.now() >= this.lookAt;
  }

  /** F1: whether the silent run's owner is certainly gone (asked once per OWNER_CHECK_MS). */
  private async ownerGone(): Promise<boolean> {
    if (this.ownerId === null || Date.now() < this.ownerCheckAt) return false;
    this.ownerCheckAt = Date.now() + OWNER_CHECK_MS;
    try {
      return (await this.host.ownerState(this.ownerId)) === 'gone';
    } catch {
      return false;
    }
  }

  /** Loads the session: an ending, 'read' to read the journal again, or null to wait on. */
  private async lookAtSession(journalExists: boolean): Promise<RunEnding | 'read' | null> {
    const { host, sessionId, runId } = this;
    this.ownerLooked = true;
    const standing = await standingOf(host, sessionId, runId);
    // E5: the session shows the turn answered, but its journal never got its ending (its
    // process died between complete()'s save and the seal): seal it, then read on.
    if (standing.kind === 'ended' && journalExists) {
      if ((await host.closeAnsweredRun(sessionId, runId)) !== null) return 'read';
    }
    const ending = this.endingOf(standing, journalExists);
    if (ending !== null) return ending;
    if (standing.kind !== 'pending' && journalExists) {
      this.settledReads++;
      return 'read';
    }
    this.lookAt = this.nextLookAt(standing);
    this.ownerId = standing.kind === 'pending' ? standing.ownerId : null;
    return null;
  }

  /**
   * The ending a session's standing calls for, or null while the run may still write: it is
   * pending; its journal exists and may get the record a repair appends (one more read
   * first); or its marker still says output may arrive (F2).
   */
  private endingOf(standing: RunStanding, journalExists: boolean): RunEnding | null {
    const lastSequence = this.after;
    switch (standing.kind) {
      case 'pending':
        return null;
      case 'deleted':
        return { state: null, reason: 'deleted', markerMessage: null, lastSequence };
      case 'marker':
        if (journalExists ? this.settledReads === 0 : !standing.final) return null;
        return {
          state: terminalStateOfMarker(standing.message.marker.type),
          reason: 'session',
          markerMessage: standing.message,
          lastSequence,
        };
      case 'ended':
      case 'unknown':
        if (journalExists && this.settledReads === 0) return null;
        return {
          state: standing.kind === 'ended' ? 'completed' : null,
          reason: standing.kind === 'ended' ? 'session' : 'unknown',
          markerMessage: null,
          lastSequence,
        };
    }
  }

  /**
   * When to look at the session again. A pending turn is repaired by the first load once
   * `graceMs` passed since its last sign of life (F1): look right then. A pending-retry
   * marker becomes final on the first load `graceMs` after it was written (F2): look then.
   */
  private nextLookAt(standing: RunStanding): number {
    const { clock, graceMs } = this.host;
    const latest = clock.now() + graceMs;
    if (standing.kind === 'pending') {
      return Math.min(latest, Math.max(standing.lastSignAt, this.lastRecordAt) + graceMs);
    }
    if (standing.kind === 'marker' && standing.message.marker.retry !== undefined) {
      return Math.min(latest, standing.message.marker.retry.firstSeenAt + graceMs);
    }
    return latest;
  }

  /**
   * The ending for a terminal record. A run that did not complete ends its turn with a marker,
   * written right after the record (E6, F1): the ending carries it, the same one a later load
   * shows. Its writer may still be between the two: wait a few polls (a run streamed here
   * wakes the follower when it ends), then end without it.
   */
  private async ending(state: RunTerminalState): Promise<RunEnding> {
    const lastSequence = this.after;
    if (state === 'completed') {
      return { state, reason: 'journal', markerMessage: null, lastSequence };
    }
    for (let poll = 0; ; poll++) {
      const standing = await standingOf(this.host, this.sessionId, this.runId);
      if (standing.kind === 'marker') {
        return { state, reason: 'journal', markerMessage: standing.message, lastSequence };
      }
      if (standing.kind !== 'pending' || poll >= MARKER_POLLS || this.stopped) {
        return { state, reason: 'journal', markerMessage: null, lastSequence };
      }
      await new Promise((resolve) => setTimeout(resolve, this.settings.pollIntervalMs));
    }
  }
}

function* itemsOf(page: JournalReadResult): Generator<FollowRunItem> {
  // Told where it happened: before the first record that comes after the damage.
  let skippedAt = firstSkippedSequence(page);
  for (const record of page.records) {
    if (skippedAt !== null && record.sequence > skippedAt) {
      skippedAt = null;
      yield skippedItem(page);
    }
    yield { kind: 'record', record };
    if (terminalTypes.has(record.type)) return;
  }
  if (skippedAt !== null) yield skippedItem(page);
}

/** The sequence of the first record a read skipped or found missing, or null. */
function firstSkippedSequence(page: JournalReadResult): number | null {
  const sequences = [
    ...page.invalidRecords.map((entry) => entry.sequence),
    ...page.gaps.map((gap) => gap.expected),
  ];
  return sequences.length === 0 ? null : Math.min(...sequences);
}

function skippedItem(page: JournalReadResult): FollowRunItem {
  return {
    kind: 'skipped',
    invalidRecords: page.invalidRecords,
    gaps: page.gaps,
    lastSequence: page.lastSequence,
  };
}

async function standingOf(
  host: FollowRunHost,
  sessionId: string,
  runId: string,
): Promise<RunStanding> {
  try {
    return runStandingIn(await host.loadFresh(sessionId), runId);
  } catch (error) {
    if (NotFoundError.isInstance(error)) return { kind: 'deleted' };
    throw error;
  }
}

/** The terminal state a marker stands for, as the journal would have said it. */
export function terminalStateOfMarker(type: Marker['type']): RunTerminalState {
  switch (type) {
    case 'cancelled':
      return 'interrupted-by-user';
    case 'errored':
      return 'errored';
    case 'tool-limit':
      return 'tool-limit-reached';
    case 'interrupted':
      return 'interrupted-by-crash';
  }
}
