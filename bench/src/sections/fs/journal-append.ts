import { join } from 'node:path';
import type { RunHandle, SessionStore } from '@keepsake/core';
import { GroupCommitLog, SyncEachLog } from '../../baselines/append-logs.js';
import { framedJson, jsonLine, type TokenEvent } from '../../baselines/encoded-events.js';
import { type Contender, measureSideBySide, perSecond } from '../../harness/measure.js';
import type { CaseResult, Measurement, Metric, SectionResult } from '../../harness/results.js';
import { median, pairedRatios } from '../../harness/stats.js';
import { flushPageCache } from '../../harness/workspace.js';
import { describeMeasurements } from '../../report/format.js';
import { text } from '../../workload/messages.js';
import type { Section, SectionContext } from '../section.js';
import { trialsPerCase } from '../section.js';
import { KEEPSAKE_FS, openFsStore } from './keepsake-fs.js';
import { SQLITE_ROW_PER_EVENT, SqliteJournal } from './sqlite-journal.js';

export const GROUP_COMMIT_LOOP = 'raw group-commit loop';
export const FDATASYNC_PER_APPEND = 'one fdatasync per append';
/** The raw loop, serializing each event as it comes (no target). */
export const GROUP_COMMIT_JSON = 'group-commit loop, JSON lines';
/**
 * The raw loop, serializing and framing each event as a journal must (E2): the floor the
 * journal targets are measured against (issue 20).
 */
export const GROUP_COMMIT_FRAMED = 'group-commit loop, framed JSON';

const CONTENDERS = 6;
const THROUGHPUT: Metric = { unit: 'appends/s', higherIsBetter: true, format: 'rate' };
/** The whole process's CPU time (user + system, all threads) per append of a trial. */
const CPU_PER_APPEND: Metric = { unit: 'µs', higherIsBetter: false, format: 'rate' };
/** Bytes of a journal record around the token text (ids, sequence, type, timestamp). */
const RECORD_OVERHEAD = 150;

/**
 * Journal appends, every one durable before it resolves, from concurrent streams (each
 * stream appends, waits, appends again, as a token stream that must not lose output does).
 */
export const journalAppendSection: Section = {
  id: 'fs-journal-append',
  title: 'fs: durable journal appends from concurrent streams',
  backend: 'fs',
  plannedTrials: (config) => config.journal.streams.length * trialsPerCase(config, CONTENDERS),
  unavailableReason: () => null,
  run,
};

function appendsPerStream(context: SectionContext, streams: number): number {
  const { appendsPerTrial, maximumPerStream } = context.config.journal;
  return Math.min(maximumPerStream, Math.ceil(appendsPerTrial / streams));
}

async function run(context: SectionContext): Promise<SectionResult> {
  const { config, progress } = context;
  const cases: CaseResult[] = [];
  const cpuCases: CaseResult[] = [];
  const floors: string[] = [];
  for (const streams of config.journal.streams) {
    const label = `${streams} stream${streams === 1 ? '' : 's'}`;
    progress.beginCase(label);
    const perStream = appendsPerStream(context, streams);
    const keepsake = await keepsakeStreams(context, streams, perStream);
    const groupCommit = await rawGroupCommitStreams(context, streams, perStream);
    const syncEach = await syncEachStreams(context, streams, perStream);
    const json = await encodingGroupCommitStreams(context, streams, perStream, GROUP_COMMIT_JSON);
    const framed = await encodingGroupCommitStreams(
      context,
      streams,
      perStream,
      GROUP_COMMIT_FRAMED,
    );
    const sqlite = await sqliteStreams(context, streams, perStream);
    const all = [keepsake, groupCommit, syncEach, json, framed, sqlite];
    const cpu = new CpuPerAppend(streams * perStream);
    try {
      const measurements = await measureSideBySide(
        all.map((contestant) => cpu.measured(contestant.contender)),
        config.rounds,
        (event) => {
          cpu.warmup = event.warmup;
          progress.trial(event);
        },
      );
      cases.push({ key: String(streams), label, x: streams, measurements });
      floors.push(`${label}: ${describeFloors(measurements)}`);
      cpuCases.push({ key: String(streams), label, x: streams, measurements: cpu.measurements() });
      progress.keep(`  ${label}: ${describeMeasurements(THROUGHPUT, measurements)}`);
    } finally {
      for (const contestant of all) await contestant.close();
    }
  }
  const eventBytes = config.journal.eventBytes;
  return {
    id: journalAppendSection.id,
    title: journalAppendSection.title,
    summary:
      `N concurrent streams each append ${eventBytes.toLocaleString('en-US')}-byte events ` +
      'one after another, waiting for each append to be durable before the next. Keepsake: ' +
      "`run.append({ type: 'token', … })` on a run per stream, `journal.durability: 'group'`. " +
      'Raw group-commit loop: every stream appends to one shared log file; what queues while ' +
      'a flush runs is written with one write and made durable with one fdatasync. One ' +
      'fdatasync per append: each stream appends to its own file and fdatasyncs every record. ' +
      'The raw loop writes records prepared before the clock starts; the same loop with JSON ' +
      'lines serializes each event as it comes, and with framed JSON also frames it with its ' +
      'length and CRC32C, as a journal record must be (E2): the floor of any journal of ' +
      'JavaScript objects, with no ids, timestamps, per-run files or locks. SQLite, a row per ' +
      'event: what a user would otherwise reach for, `node:sqlite` on one database file in WAL ' +
      'mode with `synchronous = FULL`, one row per event (its data serialized as it comes), ' +
      'each append its own transaction.',
    tables: [
      {
        id: 'throughput',
        title: 'Durable appends per second by concurrent streams',
        metric: THROUGHPUT,
        subject: KEEPSAKE_FS,
        caseHeader: 'streams',
        cases,
        chart: {
          file: 'journal-throughput.svg',
          title: 'Durable journal appends: appends/s vs concurrent streams',
          xTitle: 'concurrent streams',
        },
      },
      {
        id: 'cpu',
        title: 'Process CPU per durable append',
        metric: CPU_PER_APPEND,
        subject: KEEPSAKE_FS,
        caseHeader: 'streams',
        cases: cpuCases,
      },
    ],
    notes: [
      `Appends per trial: ${config.journal.streams.map((streams) => `${streams} × ${appendsPerStream(context, streams)}`).join(', ')} (streams × appends each).`,
      'With one stream nothing can share an fdatasync, so every contender is bound by the disk alike; group commit pays off from 16 streams up.',
      "Keepsake's runs are started, and each journal created, before the clock starts.",
      'CPU per append is the whole process (user + system time of every thread, `process.cpuUsage()`) over a trial, divided by its appends: where the time goes once the disk is shared.',
      "Node's file calls run on libuv's thread pool (4 threads by default, as in production), " +
        'so at most 4 fdatasync calls are in flight at once whatever the number of streams.',
      `The floors, JSON lines / framed JSON (median of per-round ratios): ${floors.join('; ')}. ` +
        'The journal targets are set against the framed-JSON floor (issue 20); the raw loop and ' +
        'one fdatasync per append are printed without a target.',
      "The SQLite peer commits on the event loop's thread (`DatabaseSync`), so its commits, each " +
        'with an fsync of the WAL, run one at a time whatever the number of streams; its target ' +
        'is Keepsake ≥ 3× it at 100 streams.',
    ],
  };
}

/**
 * How the JSON-lines and framed-JSON loops fared, in appends/s, against the raw loop and one
 * fdatasync per append (median of per-round ratios).
 */
export function describeFloors(measurements: readonly Measurement[]): string {
  const samples = (name: string) =>
    measurements.find((measurement) => measurement.contender === name)?.samples ?? [];
  const ratio = (name: string, baseline: string) =>
    `${median(pairedRatios(samples(name), samples(baseline))).toFixed(2)}×`;
  const against = (baseline: string) =>
    `${ratio(GROUP_COMMIT_JSON, baseline)} / ${ratio(GROUP_COMMIT_FRAMED, baseline)} against ${baseline}`;
  return `${against(GROUP_COMMIT_LOOP)}, ${against(FDATASYNC_PER_APPEND)}`;
}

/**
 * Measures each contender's process CPU per append alongside its throughput, in the same
 * trials (warm-up rounds left out, as for the figures).
 */
class CpuPerAppend {
  warmup = false;
  private readonly samples = new Map<string, number[]>();

  constructor(private readonly appendsPerTrial: number) {}

  measured(contender: Contender): Contender {
    const samples: number[] = [];
    this.samples.set(contender.name, samples);
    return {
      name: contender.name,
      trial: async () => {
        const before = process.cpuUsage();
        const figure = await contender.trial();
        const used = process.cpuUsage(before);
        if (!this.warmup) samples.push((used.user + used.system) / this.appendsPerTrial);
        return figure;
      },
    };
  }

  measurements(): Measurement[] {
    return [...this.samples].map(([contender, samples]) => ({ contender, samples }));
  }
}

interface Streams {
  readonly contender: Contender;
  close(): Promise<void>;
}

/** Runs `perStream` sequential appends on every stream at once; returns appends/s. */
async function drive(
  streams: number,
  perStream: number,
  append: (stream: number, index: number) => Promise<unknown>,
): Promise<number> {
  const started = performance.now();
  await Promise.all(
    Array.from({ length: streams }, async (_, stream) => {
      for (let index = 0; index < perStream; index++) await append(stream, index);
    }),
  );
  return perSecond(streams * perStream, performance.now() - started);
}

async function keepsakeStreams(
  context: SectionContext,
  streams: number,
  perStream: number,
): Promise<Streams> {
  const directory = await context.workspace.directory('journal-keepsake');
  const store: SessionStore = openFsStore(directory, { journal: { durability: 'group' } });
  const tokenText = text(context.config.journal.eventBytes - RECORD_OVERHEAD, streams);
  const runs: RunHandle[] = [];
  context.progress.status(`starting ${streams} Keepsake runs`);
  for (let stream = 0; stream < streams; stream++) {
    const session = await store.create({ title: `stream ${stream}` });
    const run = await store.beginRun(session.id, {
      userMessage: { role: 'user', content: 'Tell me a long story.' },
    });
    await run.append({ type: 'token', data: { text: tokenText } });
    runs.push(run);
  }
  await flushPageCache(directory);
  return {
    contender: {
      name: KEEPSAKE_FS,
      trial: () =>
        drive(streams, perStream, (stream) =>
          (runs[stream] as RunHandle).append({ type: 'token', data: { text: tokenText } }),
        ),
    },
    async close() {
      await store.close();
      await context.workspace.remove(directory);
    },
  };
}

/** A JSON line of exactly `bytes` bytes, the raw contenders' record. */
function rawRecord(bytes: number, stream: number): Buffer {
  const head = JSON.stringify({ stream, type: 'token', text: '' });
  const padding = text(bytes - head.length - 1, stream);
  return Buffer.from(`${JSON.stringify({ stream, type: 'token', text: padding })}\n`);
}

/**
 * Streams appending to one raw group-commit log, each append's bytes from `recordFor`: the
 * raw loop's records are prepared before the clock starts, the floors' are made per append.
 */
async function groupCommitStreams(
  context: SectionContext,
  streams: number,
  perStream: number,
  name: string,
  recordFor: (stream: number, index: number) => Uint8Array,
): Promise<Streams> {
  const directory = await context.workspace.directory('journal-group-commit');
  const log = await GroupCommitLog.open(join(directory, 'shared.log'));
  return {
    contender: {
      name,
      trial: () =>
        drive(streams, perStream, (stream, index) => log.append(recordFor(stream, index))),
    },
    async close() {
      await log.close();
      await context.workspace.remove(directory);
    },
  };
}

function rawGroupCommitStreams(
  context: SectionContext,
  streams: number,
  perStream: number,
): Promise<Streams> {
  const records = Array.from({ length: streams }, (_, stream) =>
    rawRecord(context.config.journal.eventBytes, stream),
  );
  return groupCommitStreams(
    context,
    streams,
    perStream,
    GROUP_COMMIT_LOOP,
    (stream) => records[stream] as Buffer,
  );
}

/**
 * The raw group-commit loop with each event serialized (and, for framed JSON, framed) as it
 * is appended, from the same event object Keepsake gets.
 */
function encodingGroupCommitStreams(
  context: SectionContext,
  streams: number,
  perStream: number,
  name: typeof GROUP_COMMIT_JSON | typeof GROUP_COMMIT_FRAMED,
): Promise<Streams> {
  const encode = name === GROUP_COMMIT_JSON ? jsonLine : framedJson;
  // The very event Keepsake's streams append.
  const event: TokenEvent = {
    type: 'token',
    data: { text: text(context.config.journal.eventBytes - RECORD_OVERHEAD, streams) },
  };
  return groupCommitStreams(context, streams, perStream, name, (_, index) =>
    encode(event, index + 1),
  );
}

async function syncEachStreams(
  context: SectionContext,
  streams: number,
  perStream: number,
): Promise<Streams> {
  const directory = await context.workspace.directory('journal-sync-each');
  const logs = await Promise.all(
    Array.from({ length: streams }, (_, stream) =>
      SyncEachLog.open(join(directory, `stream-${stream}.log`)),
    ),
  );
  const records = Array.from({ length: streams }, (_, stream) =>
    rawRecord(context.config.journal.eventBytes, stream),
  );
  await flushPageCache(directory);
  return {
    contender: {
      name: FDATASYNC_PER_APPEND,
      trial: () =>
        drive(streams, perStream, (stream) =>
          (logs[stream] as SyncEachLog).append(records[stream] as Buffer),
        ),
    },
    async close() {
      await Promise.all(logs.map((log) => log.close()));
      await context.workspace.remove(directory);
    },
  };
}

/**
 * The SQLite peer: every stream appends the very event Keepsake's streams append, as a row
 * of one database, each append its own transaction. Sequences go on rising across trials
 * (the primary key is the stream and its sequence).
 */
async function sqliteStreams(
  context: SectionContext,
  streams: number,
  perStream: number,
): Promise<Streams> {
  const directory = await context.workspace.directory('journal-sqlite');
  const journal = new SqliteJournal(join(directory, 'journal.db'));
  const event = {
    type: 'token',
    data: { text: text(context.config.journal.eventBytes - RECORD_OVERHEAD, streams) },
  };
  const sequences = new Array<number>(streams).fill(0);
  await flushPageCache(directory);
  return {
    contender: {
      name: SQLITE_ROW_PER_EVENT,
      trial: () =>
        drive(streams, perStream, async (stream) => {
          const sequence = (sequences[stream] ?? 0) + 1;
          sequences[stream] = sequence;
          journal.append(stream, sequence, event);
        }),
    },
    async close() {
      journal.close();
      await context.workspace.remove(directory);
    },
  };
}
