import { RedisServerProcess } from '@keepsake/redis/testing';
import type { BenchConfig } from '../../config.js';
import type { Contender, RoundOptions } from '../../harness/measure.js';
import { measureSideBySide } from '../../harness/measure.js';
import type { CaseResult, Measurement, Metric, SectionResult } from '../../harness/results.js';
import { describeMeasurements } from '../../report/format.js';
import { runs } from '../redis/redis-benchmark.js';
import type { Section, SectionContext } from '../section.js';
import type { TrialFigures } from './chat-turns.js';
import { type FollowingOptions, httpChatTrial } from './http-chats.js';
import { serverLoadSettings } from './load-settings.js';
import { serverUnavailableReason } from './server-location.js';
import { type ServerProcess, startServerProcess } from './server-process.js';

/** Clients send to instance A and read their runs' events from A, which owns the runs. */
export const FROM_OWNER = 'events from the owning instance';
/** The same sends to A, each run's events read from instance B, which does not own it. */
export const FROM_OTHER = 'events from another instance';
/** Events read from A, and each run followed to its end on B as well. */
export const OWNER_WITH_FOLLOWER = 'from the owner, one more follower on another instance';

const CHATS = 50;
const THROUGHPUT: Metric = { unit: 'sends/s', higherIsBetter: true, format: 'rate' };

interface Backend {
  readonly key: 'fs' | 'redis';
  readonly label: string;
  readonly x: number;
}

const BACKENDS: readonly Backend[] = [
  { key: 'fs', label: 'fs (one directory, two processes)', x: 1 },
  { key: 'redis', label: 'Redis (appendfsync always)', x: 2 },
];

// Decided once, when the section is loaded.
const redisAvailable = runs(process.env.KEEPSAKE_TEST_REDIS_SERVER ?? 'redis-server');

/**
 * Issue 36 item 2: two reference-server instances on one backend; 50 chats send to one of
 * them (A, which runs and owns each run) and read the events from A, from B, or from A with a
 * second reader on B. What a follower on an instance that does not own the run costs: B
 * learns of A's appends through the backend (fs: a file watch; Redis: its poll), not from
 * its own appends.
 */
export const serverFollowersSection: Section = {
  id: 'server-followers',
  title: 'server: following runs from the instance that owns them and from another',
  backend: 'fs, redis',
  plannedTrials: (config) => {
    const { warmupRounds, rounds } = roundsOf(config);
    return backends().length * 3 * (warmupRounds + rounds);
  },
  unavailableReason: serverUnavailableReason,
  run,
};

/**
 * A quick run is a smoke check of the section (both backends, every contender, the answers
 * checked) in two rounds without a warm-up: on CI it runs after the whole test suite.
 */
function roundsOf(config: BenchConfig): RoundOptions {
  return config.mode === 'quick' ? { warmupRounds: 0, rounds: 2 } : config.rounds;
}

function backends(): readonly Backend[] {
  return BACKENDS.filter((backend) => backend.key === 'fs' || redisAvailable);
}

async function run(context: SectionContext): Promise<SectionResult> {
  const { config, progress } = context;
  const settings = serverLoadSettings(config);
  const cases: Array<{ backend: Backend; measurements: Measurement[] }> = [];
  let checked = 0;
  for (const backend of backends()) {
    progress.beginCase(backend.label);
    const pair = await startPair(context, backend, settings);
    const samples = new Map<string, number[]>([
      [FROM_OWNER, []],
      [FROM_OTHER, []],
      [OWNER_WITH_FOLLOWER, []],
    ]);
    let warmup = false;
    const contender = (name: string, following: FollowingOptions): Contender => ({
      name,
      trial: async () => {
        const figures = await httpChatTrial(pair.owner, CHATS, settings.trialMs, following);
        const rate = kept(name, figures);
        if (!warmup) samples.get(name)?.push(rate);
        return rate;
      },
    });
    const kept = (name: string, figures: TrialFigures): number => {
      if (figures.mismatches.length > 0) {
        throw new Error(
          `${name}: ${figures.mismatches.length} stored answers differ from their streamed tokens, e.g. ${figures.mismatches[0]}`,
        );
      }
      checked += figures.checked;
      return (figures.turns * 1000) / figures.elapsedMs;
    };
    try {
      await measureSideBySide(
        [
          contender(FROM_OWNER, {}),
          contender(FROM_OTHER, { followFrom: pair.other }),
          contender(OWNER_WITH_FOLLOWER, { alsoFollowOn: pair.other }),
        ],
        roundsOf(config),
        (event) => {
          warmup = event.warmup;
          progress.trial(event);
        },
      );
    } finally {
      await pair.close();
    }
    const measurements = [...samples].map(([name, values]) => ({
      contender: name,
      samples: values,
    }));
    cases.push({ backend, measurements });
    progress.keep(`  ${backend.label}: ${describeMeasurements(THROUGHPUT, measurements)}`);
  }
  const table = (id: string, title: string, subject: string) => ({
    id,
    title,
    metric: THROUGHPUT,
    subject,
    caseHeader: 'backend',
    cases: cases.map(
      ({ backend, measurements }): CaseResult => ({
        key: backend.key,
        label: backend.label,
        x: backend.x,
        measurements: measurements.filter(
          (measurement) =>
            measurement.contender === subject || measurement.contender === FROM_OWNER,
        ),
      }),
    ),
  });
  return {
    id: serverFollowersSection.id,
    title: serverFollowersSection.title,
    summary:
      `Two instances of the reference server (\`src/main.ts\`) on one backend; ${CHATS} chats send to instance A ` +
      `for ${settings.trialMs / 1000} s per trial (the scripted agent, one event every ${settings.tokenDelayMs} ms, ` +
      `${settings.answerWords}-word answers), each following its run over SSE to the end before sending again. ` +
      'The runs always execute on A; the contenders differ in where their events are read: from A, from B ' +
      '(which learns of them through the backend), or from A with a second reader on B.',
    tables: [
      table('from-other', 'Sends per second, events read from another instance', FROM_OTHER),
      table(
        'with-follower',
        'Sends per second, one more follower per run on another instance',
        OWNER_WITH_FOLLOWER,
      ),
    ],
    notes: [
      `Every completed answer (${checked.toLocaleString('en-US')} in this run, warm-up rounds included) was read back and equals the tokens its client streamed; with a second follower, both followers read the same text and the run's completion, or the section fails.`,
      'Both server processes and the clients share the two cores: a follower on B costs CPU on the same machine, which a deployment would spread over hosts.',
      ...(redisAvailable ? [] : ['Redis not measured: redis-server is not installed.']),
    ],
  };
}

/** Instance A (the one clients send to) and B, on one fs directory or one redis-server. */
async function startPair(
  context: SectionContext,
  backend: Backend,
  settings: ReturnType<typeof serverLoadSettings>,
): Promise<{ owner: ServerProcess; other: ServerProcess; close(): Promise<void> }> {
  const directory = await context.workspace.directory(`server-followers-${backend.key}`);
  const redis = backend.key === 'redis' ? await RedisServerProcess.start() : null;
  const env: Record<string, string> =
    redis === null
      ? {}
      : {
          KEEPSAKE_BACKEND: 'redis',
          KEEPSAKE_REDIS_URL: `redis://${redis.host}:${redis.port}`,
          KEEPSAKE_REDIS_KEY_PREFIX: 'bench-followers',
        };
  const started: ServerProcess[] = [];
  const close = async () => {
    await Promise.all(started.map((server) => server.stop()));
    await redis?.dispose();
    await context.workspace.remove(directory);
  };
  try {
    for (let index = 0; index < 2; index++) {
      started.push(await startServerProcess({ dataDirectory: directory, ...settings, env }));
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { owner: started[0]!, other: started[1]!, close };
}
