import {
  createMessage,
  createSessionStore,
  type RunHandle,
  type SessionStore,
  type SessionSummary,
} from '@keepsake/core';
import { type RedisAdapter, redisAdapter } from '@keepsake/redis';
import { RedisServerProcess } from '@keepsake/redis/testing';
import {
  closeFloorClients,
  indexedSaveFloor,
  journalAppendFloor,
  openFloorClients,
} from '../../baselines/redis-floors.js';
import type { BenchConfig } from '../../config.js';
import {
  type Contender,
  measureSideBySide,
  perSecond,
  type RoundOptions,
  timed,
} from '../../harness/measure.js';
import { type CpuSample, describeCpu, withProcessCpu } from '../../harness/process-cpu.js';
import type { CaseResult, Metric, SectionResult } from '../../harness/results.js';
import { describeMeasurements } from '../../report/format.js';
import type { Section, SectionContext } from '../section.js';
import { trialsPerCase } from '../section.js';
import { REDIS_BENCHMARK, redisBenchmark, runs } from './redis-benchmark.js';

/** The names the Redis tables use. */
export const KEEPSAKE_REDIS = 'Keepsake (redis)';
export const BENCHMARK_SET = 'redis-benchmark -t set -d 1024 -c 50';
/** The adapter's own write (putDocument, no store around it): the ceiling a save can reach. */
export const ADAPTER_ALONE = 'the adapter alone (putDocument)';
/**
 * The same two without the session index entry each save writes (B7): how much of the gap
 * is the listing's price. Keepsake with `skipIndex` on every save, and putDocument without
 * an index entry; neither is a way to run the store, both show what the entry costs.
 */
export const KEEPSAKE_REDIS_SKIP_INDEX = 'Keepsake (redis), skipIndex';
export const ADAPTER_NO_INDEX = 'the adapter alone, no index entry';
export const BENCHMARK_XADD = 'redis-benchmark XADD -c 16 -P 16';
/**
 * The floors of issue 39: hand-written ioredis loops (no Keepsake code) on as many
 * connections as the adapter, each save writing its document and index entry atomically in
 * one round trip, each journal event one XADD of its framed record, pipelined.
 */
export const FLOOR_SAVE_EVALSHA = 'floor: ioredis, document + index entry, one EVALSHA';
export const FLOOR_SAVE_MULTI = 'floor: ioredis, document + index entry, MULTI/EXEC';
export const FLOOR_JOURNAL = 'floor: ioredis, XADD of each framed record, pipelined';
/** The adapter's default `connections`: the floors open as many. */
const CONNECTIONS = 4;

const SESSIONS = 50;
const STREAMS = 16;
const MESSAGE_BYTES = 900;
const EVENT_BYTES = 100;
/** A busy share at or above this: Node's thread, not the server, limits the save loop. */
const BOUND_BY_NODE = 0.85;
const SAVES: Metric = { unit: 'saves/s', higherIsBetter: true, format: 'rate' };
const EVENTS: Metric = { unit: 'events/s', higherIsBetter: true, format: 'rate' };

/**
 * Keepsake on Redis against floors that do the same work (issue 39), measured on the same
 * redis-server (AOF, `appendfsync always`) in the same rounds: durable saves of 1 KiB from 50
 * concurrent sessions against a hand-written ioredis loop writing each save's document and
 * index entry in one atomic round trip, and pipelined journal appends against the same loop
 * sending one XADD per framed record; `redis-benchmark` (SET -c 50, XADD -P 16) beside them
 * as the server's ceiling.
 */
export const redisDurableSection: Section = {
  id: 'redis-durable',
  title: 'redis: durable saves and journal appends against an ioredis floor and redis-benchmark',
  backend: 'redis',
  plannedTrials: (config) => {
    const { warmupRounds, rounds } = saveRounds(config);
    return 7 * (warmupRounds + rounds) + trialsPerCase(config, 3);
  },
  unavailableReason: () => unavailable,
  run,
};

// Decided once, when the section is loaded: it needs both binaries on this machine.
const unavailable =
  runs(process.env.KEEPSAKE_TEST_REDIS_SERVER ?? 'redis-server') && runs(REDIS_BENCHMARK)
    ? null
    : 'redis-server or redis-benchmark is not installed (apt-get install redis-server)';

/**
 * Saves made before the clock starts. V8 compiles the save path (core, the adapter, ioredis)
 * over a process's first ten to fifteen thousand saves; a trial of 3,000 is over long before
 * that, so the run's one warm-up round left the first measured rounds on cold code (single
 * rounds then ranged from 0.3× to 0.8×). A server saves for hours: the figure is the warm one.
 */
const WARMUP_SAVES = 20_000;

function sizes(config: BenchConfig) {
  const quick = config.mode === 'quick';
  return { savesPerSession: quick ? 20 : 60, appendsPerStream: quick ? 200 : 1_000 };
}

/** The save case's rounds: the run's, with warm-up rounds enough for WARMUP_SAVES. */
function saveRounds(config: BenchConfig): RoundOptions {
  const { rounds } = config;
  const perRound = SESSIONS * sizes(config).savesPerSession;
  return {
    ...rounds,
    warmupRounds: Math.max(rounds.warmupRounds, Math.ceil(WARMUP_SAVES / perRound)),
  };
}

async function run(context: SectionContext): Promise<SectionResult> {
  const { config, progress } = context;
  const { savesPerSession, appendsPerStream } = sizes(config);
  // No automatic AOF rewrite: its fork takes a core of this 2-core class of machine for
  // about a second whenever both contenders' writes have grown the AOF enough, which lands
  // on whichever round is running (Keepsake rounds fell to a third of their median).
  const server = await RedisServerProcess.start({
    persistence: 'aof-always',
    args: ['--auto-aof-rewrite-percentage', '0'],
  });
  const adapter = redisAdapter({ url: server.url, keyPrefix: 'bench' });
  const store = createSessionStore({ adapter, journal: { durability: 'group' } });
  const floorClients = await openFloorClients(server.port, CONNECTIONS);
  let trialNumber = 0;
  // This process's CPU during the measured Keepsake trials (not the warm-up ones).
  const saveCpu: CpuSample[] = [];
  // The same for the EVALSHA floor: its CPU per save is the budget a save has (issue 39).
  const floorCpu: CpuSample[] = [];
  let warmingUp = true;
  try {
    progress.beginCase(`${SESSIONS} sessions`);
    const saveCase = await measureSideBySide(
      [
        {
          name: KEEPSAKE_REDIS,
          trial: async () => {
            const sample = await durableSaves(store, `t${trialNumber++}`, savesPerSession);
            if (!warmingUp) saveCpu.push(sample);
            return perSecond(sample.operations, sample.elapsedMs);
          },
        },
        {
          name: ADAPTER_ALONE,
          trial: () => adapterWrites(adapter, `t${trialNumber++}`, savesPerSession, true),
        },
        {
          name: KEEPSAKE_REDIS_SKIP_INDEX,
          trial: async () => {
            const sample = await durableSaves(store, `t${trialNumber++}`, savesPerSession, {
              skipIndex: true,
            });
            return perSecond(sample.operations, sample.elapsedMs);
          },
        },
        {
          name: ADAPTER_NO_INDEX,
          trial: () => adapterWrites(adapter, `t${trialNumber++}`, savesPerSession, false),
        },
        ...(['evalsha', 'multi'] as const).map((mode) => ({
          name: mode === 'evalsha' ? FLOOR_SAVE_EVALSHA : FLOOR_SAVE_MULTI,
          trial: async () => {
            const sample = await indexedSaveFloor(floorClients, {
              label: `t${trialNumber++}`,
              sessions: SESSIONS,
              saves: savesPerSession,
              messageBytes: MESSAGE_BYTES,
              mode,
            });
            if (mode === 'evalsha' && !warmingUp) floorCpu.push(sample);
            return perSecond(sample.operations, sample.elapsedMs);
          },
        })),
        {
          name: BENCHMARK_SET,
          trial: () =>
            redisBenchmark(server.port, [
              ...['-t', 'set', '-d', '1024', '-c', String(SESSIONS)],
              ...['-n', String(SESSIONS * savesPerSession)],
            ]),
        },
      ] satisfies Contender[],
      saveRounds(config),
      (event) => {
        warmingUp = event.warmup;
        progress.trial(event);
      },
    );
    progress.keep(`  ${SESSIONS} sessions: ${describeMeasurements(SAVES, saveCase)}`);

    progress.beginCase(`${STREAMS} streams`);
    const payload = 'x'.repeat(EVENT_BYTES);
    const journalCase = await measureSideBySide(
      [
        {
          name: KEEPSAKE_REDIS,
          trial: () => pipelinedAppends(store, `t${trialNumber++}`, appendsPerStream, payload),
        },
        {
          name: FLOOR_JOURNAL,
          trial: async () => {
            const sample = await journalAppendFloor(floorClients, {
              label: `t${trialNumber++}`,
              streams: STREAMS,
              appends: appendsPerStream,
              payload,
            });
            return perSecond(sample.operations, sample.elapsedMs);
          },
        },
        {
          name: BENCHMARK_XADD,
          trial: () =>
            redisBenchmark(server.port, [
              ...['-c', String(STREAMS), '-P', '16', '-r', String(STREAMS)],
              ...['-n', String(STREAMS * appendsPerStream)],
              ...['xadd', 'bench-xadd:__rand_int__', '*', 't', payload],
            ]),
        },
      ] satisfies Contender[],
      config.rounds,
      (event) => progress.trial(event),
    );
    progress.keep(`  ${STREAMS} streams: ${describeMeasurements(EVENTS, journalCase)}`);
    return result(
      context,
      [
        {
          key: String(SESSIONS),
          label: `${SESSIONS} sessions`,
          x: SESSIONS,
          measurements: saveCase,
        },
        {
          key: String(STREAMS),
          label: `${STREAMS} streams`,
          x: STREAMS,
          measurements: journalCase,
        },
      ],
      saveCpu,
      floorCpu,
    );
  } finally {
    await store.close().catch(() => undefined);
    await closeFloorClients(floorClients);
    await server.dispose();
  }
}

/**
 * 50 sessions, created before the clock starts; each appends `saves` messages of about
 * 900 characters, one durable save each (a delta of about 1 KiB), all sessions at once.
 * `skipIndex`: no index entry with the saves (for the row that prices the entry).
 */
async function durableSaves(
  store: SessionStore,
  label: string,
  saves: number,
  { skipIndex = false }: { skipIndex?: boolean } = {},
): Promise<CpuSample> {
  const sessions = await Promise.all(
    Array.from({ length: SESSIONS }, (_, index) =>
      store.create({ id: `${label}-s${index}` }, { fsync: true }),
    ),
  );
  const text = 'm'.repeat(MESSAGE_BYTES);
  return withProcessCpu(SESSIONS * saves, () =>
    Promise.all(
      sessions.map(async (session) => {
        for (let index = 0; index < saves; index++) {
          session.messages.push(createMessage({ role: 'user', content: text }));
          await store.save(session, skipIndex ? { fsync: true, skipIndex } : { fsync: true });
        }
      }),
    ),
  );
}

/**
 * What a save's write costs without the store around it: the same 50 sessions, each
 * appending a delta of the same size through `putDocument` (durable), with its index entry
 * as a save of `durableSaves` does (`withIndexEntry`), with no validation, encoding, lock or
 * cache. Shows how much of the gap to redis-benchmark is the server's work and how much the
 * store's.
 */
async function adapterWrites(
  adapter: RedisAdapter,
  label: string,
  saves: number,
  withIndexEntry: boolean,
): Promise<number> {
  const text = JSON.stringify({ head: { id: label }, appended: ['m'.repeat(MESSAGE_BYTES)] });
  const summary = (id: string): SessionSummary => ({
    id,
    title: '',
    createdAt: 0,
    updatedAt: 0,
    messageCount: 0,
    pending: false,
    parentId: null,
    rotatedTo: null,
  });
  const ids = Array.from({ length: SESSIONS }, (_, index) => `${label}-a${index}`);
  await Promise.all(
    ids.map((id) =>
      adapter.putDocument(
        'sessions',
        id,
        { kind: 'full', revision: 1, text },
        { expectedRevision: null, durable: true, indexEntry: summary(id) },
      ),
    ),
  );
  const elapsed = await timed(() =>
    Promise.all(
      ids.map(async (id) => {
        for (let index = 0; index < saves; index++) {
          const written = await adapter.putDocument(
            'sessions',
            id,
            { kind: 'delta', revision: index + 2, text },
            withIndexEntry
              ? { expectedRevision: index + 1, durable: true, indexEntry: summary(id) }
              : { expectedRevision: index + 1, durable: true },
          );
          if (!written.ok) throw new Error(`adapter write of ${id} refused`);
        }
      }),
    ),
  );
  return perSecond(SESSIONS * saves, elapsed);
}

/**
 * 16 runs (one per stream, started before the clock), each issuing `appends` token events
 * at once without waiting for the previous one (pipelined), `journal.durability: 'group'`.
 */
async function pipelinedAppends(
  store: SessionStore,
  label: string,
  appends: number,
  payload: string,
): Promise<number> {
  const runs: RunHandle[] = [];
  for (let index = 0; index < STREAMS; index++) {
    const session = await store.create({ id: `${label}-j${index}` }, { fsync: true });
    runs.push(
      await store.beginRun(session.id, {
        userMessage: createMessage({ role: 'user', content: 'go' }),
      }),
    );
  }
  const elapsed = await timed(() =>
    Promise.all(
      runs.map((run) =>
        Promise.all(
          Array.from({ length: appends }, () =>
            run.append({ type: 'token', data: { text: payload } }),
          ),
        ),
      ),
    ),
  );
  await Promise.all(runs.map((run) => run.complete()));
  return perSecond(STREAMS * appends, elapsed);
}

function result(
  context: SectionContext,
  [saves, journal]: CaseResult[],
  saveCpu: readonly CpuSample[],
  floorCpu: readonly CpuSample[],
): SectionResult {
  const { savesPerSession, appendsPerStream } = sizes(context.config);
  const cpu = saveCpu.length > 0 ? describeCpu(saveCpu) : null;
  const floor = floorCpu.length > 0 ? describeCpu(floorCpu) : null;
  return {
    id: redisDurableSection.id,
    title: redisDurableSection.title,
    summary:
      'One redis-server (AOF, `appendfsync always`: every reply follows the fsync of what it ' +
      'acknowledges) started for the section. Durable saves: 50 sessions at once, each appending ' +
      `${savesPerSession} messages of ${MESSAGE_BYTES} characters with \`store.save(session, { fsync: true })\` ` +
      '(a delta of about 1 KiB each, one Lua script, and its index entry), against a hand-written ioredis ' +
      `loop on ${CONNECTIONS} connections that writes each save's message and index entry atomically in one ` +
      'round trip (one EVALSHA, or MULTI/EXEC), the target, and against `redis-benchmark -t set -d 1024 -c 50` ' +
      '(no index entry: the ceiling). Journal: 16 runs each issuing ' +
      `${appendsPerStream} token events of ${EVENT_BYTES} characters without waiting (journal durability ` +
      '`group`), against the ioredis loop sending one XADD per framed record (the record JSON core writes, ' +
      'the id and fields the adapter writes), pipelined, the target, and `redis-benchmark -c 16 -P 16` sending ' +
      'bare XADDs.',
    tables: [
      {
        id: 'saves',
        title: 'Durable saves per second, 1 KiB each, 50 concurrent sessions',
        metric: SAVES,
        subject: KEEPSAKE_REDIS,
        caseHeader: 'concurrency',
        cases: [saves!],
      },
      {
        id: 'journal',
        title: 'Journal appends per second, pipelined',
        metric: EVENTS,
        subject: KEEPSAKE_REDIS,
        caseHeader: 'concurrency',
        cases: [journal!],
      },
    ],
    notes: [
      ...(cpu === null
        ? []
        : [
            `This process's CPU during the measured Keepsake save rounds (the median round): ${cpu.microsPerOperation.toFixed(1)} µs per save, ${cpu.busyShare.toFixed(2)} of the wall time (all of Node's threads). ${cpu.busyShare >= BOUND_BY_NODE ? "Node hardly waited: the saves are bound by Node's CPU, about one over its CPU per save per second, not by the server." : 'Node waited for the server part of the time: the server, not Node alone, limits the saves.'}`,
          ]),
      ...(floor === null
        ? []
        : [
            `The same for "${FLOOR_SAVE_EVALSHA}" (the median round): ${floor.microsPerOperation.toFixed(1)} µs per save, ${floor.busyShare.toFixed(2)} of the wall time: the Node CPU a save may cost where Node limits the loop.`,
          ]),
      `The save case runs ${saveRounds(context.config).warmupRounds} warm-up rounds (at least ${WARMUP_SAVES.toLocaleString('en-US')} saves) before its measured ones: V8 compiles the save path over a process's first ten to fifteen thousand saves, and a long-running server saves on warm code.`,
      `"${KEEPSAKE_REDIS_SKIP_INDEX}" and "${ADAPTER_NO_INDEX}" are the same two without the session index entry every save writes (B7: a listing that is cheap, durable with the save and current in every process). They are not settings to run with; they show what the entry costs Node and the server in the same rounds as the target.`,
      `"${ADAPTER_ALONE}" writes the same deltas with their index entries through the adapter's putDocument, with no store around it: the part of the gap to redis-benchmark that is the server's work (the conditional write script, the index entry) rather than the store's (validation, encoding, lock, cache).`,
      "Keepsake uses the adapter's default 4 connections (each session's commands on one of them, pipelined); the ioredis floors open as many (`enableAutoPipelining`: a connection's commands of one event-loop turn leave in one write, as the adapter corks its connections per turn); redis-benchmark opens one per client (`-c`).",
      `The save floors build per save what a save must (a message of ${MESSAGE_BYTES} characters and its summary, as JSON) and write both atomically: "${FLOOR_SAVE_EVALSHA}" (APPEND and HSET in one script; the target's reference) and "${FLOOR_SAVE_MULTI}" (the same two commands in a transaction). Keepsake writes the same two with two single-write scripts (the document's conditional write, then the turn's shared index call): Redis 7.0 replays a multi-write script cut short by a crash wrongly (packages/redis README), and the floors do not check a revision.`,
      `"${FLOOR_JOURNAL}" sends every event of a stream at once without waiting; Keepsake's journal writer appends a run's events one after the other (each waits for the one before it: E2's sequence check), so 16 runs have at most 16 appends in flight.`,
      'With `appendfsync always` Redis fsyncs once per event-loop turn for every write of that turn, so concurrent durable writes share fsyncs on both sides.',
      "The server runs without automatic AOF rewrites (`auto-aof-rewrite-percentage 0`): a rewrite forks and takes a core for about a second, at a moment set by both contenders' writes together, so it fell on one contender's round at random (such rounds ran at a third of the median).",
      "redis-benchmark's XADD baseline writes single entries with server-made ids and no record to build; Keepsake's appends carry the record (ids, sequence, timestamps) and the sequence check of a Lua script.",
    ],
  };
}
