import {
  type JournalEventInput,
  type JournalEventType,
  type MarkerType,
  type RunSummary,
  RunTakenOverError,
  type RunTerminalState,
  type Session,
  type SessionStore,
} from '@keepsake/core';
import { TOOL_NAME, toolCallId } from './expected-turns.js';
import type { Damage, RunEvent } from './race-plans.js';
import { expectRefused } from './race-support.js';
import type { SessionModel, TrackedRun } from './session-model.js';
import { attempt, mustResolve } from './step-checks.js';
import type { ModelWorld } from './world.js';

/**
 * What a run leaves, checked against the contract: its journal (E2, E3), its one marker and
 * whether it agrees with the journal's terminal state (E6, F1), and the records planted
 * through a raw adapter for the cases a store would never write itself (late, damaged and
 * foreign records).
 */

/**
 * The journal events of one run, in the order they were written (by the run, or planted),
 * with their event ids and tool-call numbering: what the model expects its journal and its
 * turn to show.
 */
export class RunEvents {
  /** Every model event written so far, in journal order. */
  readonly written: RunEvent[] = [];
  /** The event ids of this run's token records so far, in order. */
  readonly tokenEventIds: string[] = [];
  private tools = 0;
  private events = 0;

  constructor(
    readonly runId: string,
    private readonly eventPrefix: string,
  ) {}

  /** A fresh event id of this run (E2: unique within the run). */
  nextEventId(): string {
    return `${this.eventPrefix}-${this.events++}`;
  }

  /** The journal events one model event is written as (a tool call: the call, then its result). */
  inputs(event: RunEvent): JournalEventInput[] {
    this.written.push(event);
    if (event.type === 'token') {
      const eventId = this.nextEventId();
      this.tokenEventIds.push(eventId);
      return [{ type: 'token', data: { text: event.text }, eventId }];
    }
    const id = toolCallId(this.tools++);
    const call: JournalEventInput = {
      type: 'tool',
      data: { name: TOOL_NAME, toolCallId: id },
      eventId: this.nextEventId(),
    };
    if (!event.result) return [call];
    return [
      call,
      { type: 'tool_result', data: { toolCallId: id, result: 'ok' }, eventId: this.nextEventId() },
    ];
  }
}

/** Appends events through a run handle; each append must resolve (E2). */
export async function appendEvents(
  world: ModelWorld,
  run: { append(event: JournalEventInput): Promise<unknown> },
  source: RunEvents,
  events: readonly RunEvent[],
  label: string,
): Promise<void> {
  for (const event of events) {
    for (const input of source.inputs(event)) {
      await mustResolve(world, `${label}: append ${input.type} ${describeData(input)}`, () =>
        run.append(input),
      );
    }
  }
}

/**
 * D4: appends through a run that another instance took over; each must be refused with
 * `RunTakenOverError` and leave nothing behind (never acknowledged, so never expected in the
 * journal: a scratch numbering keeps `source` as the journal really is).
 */
export async function refuseEvents(
  world: ModelWorld,
  run: { append(event: JournalEventInput): Promise<unknown> },
  source: RunEvents,
  events: readonly RunEvent[],
  label: string,
): Promise<void> {
  const scratch = new RunEvents(source.runId, `${source.nextEventId()}-refused`);
  for (const event of events) {
    for (const input of scratch.inputs(event)) {
      const what = `${label}: append ${input.type} ${describeData(input)}`;
      const outcome = await attempt(() => run.append(input));
      expectRefused(world, outcome, RunTakenOverError, `D4: ${what}`);
    }
  }
}

function describeData(input: JournalEventInput): string {
  return JSON.stringify(input.data ?? {});
}

/** A record to plant: a valid event as a writer would store it, or a damaged one (E2). */
export type Planted =
  | { readonly kind: 'event'; readonly input: JournalEventInput }
  | { readonly kind: 'damaged'; readonly damage: Damage; readonly reusedEventId?: string };

/** The stored text of a damaged record at `sequence` (each kind is one E2 says is never trusted). */
function damagedText(
  world: ModelWorld,
  sessionId: string,
  runId: string,
  sequence: number,
  planted: Extract<Planted, { kind: 'damaged' }>,
): string {
  const record = {
    sessionId,
    runId,
    sequence,
    eventId: world.env.id('damaged'),
    type: 'token',
    data: { text: 'DAMAGED' },
    at: world.env.clock.now(),
  };
  switch (planted.damage) {
    case 'garbage':
      return '{"this is": "not a record"';
    case 'wrongSequence':
      return JSON.stringify({ ...record, sequence: sequence + 7 });
    case 'otherRun':
      return JSON.stringify({ ...record, runId: `${runId}-other` });
    case 'reusedEventId':
      return JSON.stringify({ ...record, eventId: planted.reusedEventId });
  }
}

/**
 * Plants records after the journal's last stored sequence, straight through a raw adapter
 * (another writer: a late worker, a damaged disk, a forger). Returns the first sequence used.
 */
export async function plant(
  world: ModelWorld,
  sessionId: string,
  runId: string,
  records: readonly Planted[],
  label: string,
): Promise<number> {
  const raw = await world.rawAdapter();
  const existing = await raw.readLog(sessionId, runId, { afterSequence: 0, limit: 100_000 });
  const first = (existing.records.at(-1)?.sequence ?? 0) + 1;
  const texts = records.map((record, index) => {
    const sequence = first + index;
    if (record.kind === 'damaged') {
      return { sequence, text: damagedText(world, sessionId, runId, sequence, record) };
    }
    const { input } = record;
    const text = JSON.stringify({
      sessionId,
      runId,
      sequence,
      eventId: input.eventId,
      type: input.type,
      data: input.data ?? {},
      at: world.env.clock.now(),
    });
    return { sequence, text };
  });
  const result = await raw.appendLog(sessionId, runId, texts, { durability: 'each' });
  world.history.note(
    `${label}: planted ${records.map((record) => (record.kind === 'damaged' ? `[${record.damage}]` : record.input.type)).join(', ')} at sequence ${first} of run ${runId}`,
  );
  if (!result.ok) {
    world.fail(
      `${label}: planting at sequence ${first} of run ${runId} was refused (last stored ${result.lastSequence}): nothing else writes this journal now`,
    );
  }
  return first;
}

/** Plants model events as a writer would (late output of a run). */
export function plantedEvents(source: RunEvents, events: readonly RunEvent[]): Planted[] {
  return events.flatMap((event) =>
    source.inputs(event).map((input): Planted => ({ kind: 'event', input })),
  );
}

/** A terminal record a run writes (or a forger plants) as a planted record. */
export function plantedTerminal(
  source: RunEvents,
  type: Extract<JournalEventType, 'done' | 'cancel' | 'error'>,
  message = '',
): Planted {
  return {
    kind: 'event',
    input: {
      type,
      data: type === 'error' ? { message, code: null } : {},
      eventId: source.nextEventId(),
    },
  };
}

/** What a journal read shows of the model's events: text, tool calls and their results. */
function journalView(events: readonly RunEvent[]): string[] {
  return events.flatMap((event) =>
    event.type === 'token'
      ? [`token ${event.text}`]
      : event.result
        ? ['tool', 'tool_result']
        : ['tool'],
  );
}

/**
 * E2, D4: the run's journal, read back through `store`, holds exactly `events` (its text and
 * tools, in order; other records are terminal ones), and ends in `terminal` when given.
 */
export async function expectJournal(
  world: ModelWorld,
  store: SessionStore,
  sessionId: string,
  runId: string,
  events: readonly RunEvent[],
  terminal: RunTerminalState | null | undefined,
  label: string,
): Promise<void> {
  const read = await mustResolve(world, `${label}: readJournal(${runId})`, () =>
    store.readJournal(sessionId, runId),
  );
  const actual = read.records
    .filter((record) => ['token', 'tool', 'tool_result'].includes(record.type))
    .map((record) => (record.type === 'token' ? `token ${String(record.data.text)}` : record.type));
  world.expectEqual(actual, journalView(events), `${label}: the journal of run ${runId} (E2)`);
  if (terminal === undefined) return;
  const summary = await mustResolve(world, `${label}: runSummary(${runId})`, () =>
    store.runSummary(sessionId, runId),
  );
  world.expectEqual(
    summary.terminalState,
    terminal,
    `${label}: the terminal state of run ${runId}'s journal (E2)`,
  );
}

/** E6, F1: the marker a journal's terminal state calls for (none for a completed run). */
export function markerFor(state: RunTerminalState | null): MarkerType | null {
  switch (state) {
    case 'completed':
      return null;
    case 'interrupted-by-user':
      return 'cancelled';
    case 'errored':
      return 'errored';
    case 'tool-limit-reached':
      return 'tool-limit';
    default:
      return 'interrupted';
  }
}

/**
 * E6, F1, F4: every run that ended in a slot's transcript has exactly one marker (none when
 * it completed), and, where the contract ties them, that marker is the one its journal's
 * terminal state calls for. Reads what is stored (a raw read) and the journal.
 */
export async function verifyRuns(world: ModelWorld, model: SessionModel): Promise<void> {
  if (!model.exists || model.runs.length === 0) return;
  const persisted = await world.stored(model.id);
  if (persisted === null) return world.fail(`${model.id} exists, but nothing is stored under it`);
  for (const run of model.runs) {
    const markers = persisted.session.messages.filter(
      (message) => message.marker?.runId === run.runId,
    );
    world.expectEqual(
      markers.map((message) => message.marker!.type),
      run.marker === null ? [] : [run.marker],
      `E6, F1: the markers of run ${run.runId} in ${model.id} (exactly one per ended run, none once completed)`,
    );
    const summary = await mustResolve(world, `runSummary(${run.sessionId}, ${run.runId})`, () =>
      world.store.runSummary(run.sessionId, run.runId),
    );
    await expectFoundByIdAlone(world, run, summary);
    if (!run.agreesWithJournal) continue;
    world.expectEqual(
      run.marker,
      markerFor(summary.terminalState),
      `E6, F1: the marker of run ${run.runId} in ${model.id} agrees with its journal (terminal state ${summary.terminalState})`,
    );
  }
}

/**
 * E8: `findRun(runId)` finds the run by its id alone where its journal is kept (the session
 * it began in, or the one a rename moved it to while live) and says what `runSummary` says,
 * through renames, restarts, cancels from another instance and faults. Null only when
 * recording its location failed, which the store reported (a `runs` warning naming it).
 */
async function expectFoundByIdAlone(
  world: ModelWorld,
  run: TrackedRun,
  summary: RunSummary,
): Promise<void> {
  const found = await mustResolve(world, `findRun(${run.runId})`, () =>
    world.store.findRun(run.runId),
  );
  const unrecorded = world.warnings.some(
    (warning) => warning.field === 'runs' && warning.message.includes(`"${run.runId}"`),
  );
  if (found === null && unrecorded) return;
  world.expectEqual(
    found,
    summary,
    `E8: findRun(${run.runId}) gives the run where its journal is kept, ${run.sessionId}, as runSummary does`,
  );
}

/** The markers of `runId` in a session (for checks made inside a step). */
export function markersOf(session: Pick<Session, 'messages'>, runId: string) {
  return session.messages.filter((message) => message.marker?.runId === runId);
}
