import { join } from 'node:path';
import { fsAdapter } from '@keepsake/fs';
import { KeepsakeSaver } from '@keepsake/langgraph';
import { redisAdapter } from '@keepsake/redis';
import { RedisServerProcess } from '@keepsake/redis/testing';
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  type BaseCheckpointSaver,
  type Checkpoint,
  emptyCheckpoint,
  MemorySaver,
  uuid6,
} from '@langchain/langgraph-checkpoint';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { type Contender, measureSideBySide, perSecond, timed } from '../../harness/measure.js';
import type { CaseResult, Metric, SectionResult } from '../../harness/results.js';
import { flushPageCache } from '../../harness/workspace.js';
import { describeMeasurements } from '../../report/format.js';
import { runs } from '../redis/redis-benchmark.js';
import type { Section, SectionContext } from '../section.js';
import { trialsPerCase } from '../section.js';
import { openSqlite } from './sqlite-connection.js';

/** The names the tables use. */
export const KEEPSAKE_SAVER = 'KeepsakeSaver (fs)';
export const KEEPSAKE_SAVER_COLD = 'KeepsakeSaver (fs, new instance)';
export const KEEPSAKE_REDIS = 'KeepsakeSaver (Redis, AOF always)';
export const SQLITE_SAVER = 'SqliteSaver (file)';
export const MEMORY_SAVER = 'MemorySaver (ceiling)';

const MESSAGE_CHARACTERS = 500;
const STEPS: Metric = { unit: 'steps/s', higherIsBetter: true, format: 'rate' };
const READ_TIME: Metric = { unit: 'ms', higherIsBetter: false, format: 'milliseconds' };
/** Checkpoints of the thread the read cases read. */
export const READ_THREAD_CHECKPOINTS = 1000;
/** `getTuple` calls per read trial (the figure is the time of one). */
const GETS_PER_TRIAL = 20;

interface StepCase {
  readonly key: string;
  readonly label: string;
  /** KeepsakeSaver's `durable`. */
  readonly durable: boolean;
  /** SQLite's `synchronous` in WAL mode: FULL fsyncs the WAL at every commit, NORMAL never. */
  readonly synchronous: 'FULL' | 'NORMAL';
  /** Threads stepping at once in one process, each its own graph run. */
  readonly threads: number;
}

const STEP_CASES: readonly StepCase[] = [
  {
    key: 'durable',
    label: 'durable (fsync), 1 thread',
    durable: true,
    synchronous: 'FULL',
    threads: 1,
  },
  {
    key: 'durable-16',
    label: 'durable (fsync), 16 threads at once',
    durable: true,
    synchronous: 'FULL',
    threads: 16,
  },
  { key: 'lazy', label: 'no fsync, 1 thread', durable: false, synchronous: 'NORMAL', threads: 1 },
];

const READ_CASES = [
  {
    key: 'get-latest',
    label: `getTuple (latest) of a ${READ_THREAD_CHECKPOINTS}-checkpoint thread`,
  },
  { key: 'list-all', label: `list of a ${READ_THREAD_CHECKPOINTS}-checkpoint thread` },
] as const;

function redisAvailable(): boolean {
  return runs(process.env.KEEPSAKE_TEST_REDIS_SERVER ?? 'redis-server');
}

/**
 * What a LangGraph run asks of its checkpointer, on the same disk, in the same rounds:
 * KeepsakeSaver on the fs adapter against `@langchain/langgraph-checkpoint-sqlite`'s
 * SqliteSaver on a database file (WAL), with MemorySaver as the ceiling and KeepsakeSaver on
 * a local redis-server (AOF `always`) beside them; then reads of a long thread.
 */
export const langgraphSaverSection: Section = {
  id: 'langgraph-saver',
  title: 'langgraph: KeepsakeSaver against SqliteSaver (steps, 16 threads, reads)',
  backend: 'fs',
  plannedTrials: (config) =>
    STEP_CASES.length * trialsPerCase(config, 4) + READ_CASES.length * trialsPerCase(config, 4),
  unavailableReason: () => null,
  run,
};

function stepsPerTrial(context: SectionContext): number {
  return context.config.mode === 'quick' ? 20 : 200;
}

let driver = '';

async function run(context: SectionContext): Promise<SectionResult> {
  const { config, progress, workspace } = context;
  const steps = stepsPerTrial(context);
  const redis = redisAvailable()
    ? await RedisServerProcess.start({
        persistence: 'aof-always',
        args: ['--auto-aof-rewrite-percentage', '0'],
      })
    : null;
  let redisTrial = 0;
  const stepCases: CaseResult[] = [];
  const readCases: CaseResult[] = [];
  try {
    for (const [index, stepCase] of STEP_CASES.entries()) {
      progress.beginCase(stepCase.label);
      const contenders: Contender[] = [
        {
          name: KEEPSAKE_SAVER,
          trial: async () => {
            const directory = await workspace.directory('langgraph-keepsake');
            const saver = new KeepsakeSaver({
              adapter: fsAdapter({ directory }),
              durable: stepCase.durable,
            });
            try {
              return await stepTrial(saver, directory, steps, stepCase.threads);
            } finally {
              await saver.close();
              await workspace.remove(directory);
            }
          },
        },
        {
          name: SQLITE_SAVER,
          trial: async () => {
            const directory = await workspace.directory('langgraph-sqlite');
            const { database, close } = sqliteSaver(directory, stepCase.synchronous);
            try {
              return await stepTrial(database, directory, steps, stepCase.threads);
            } finally {
              close();
              await workspace.remove(directory);
            }
          },
        },
        {
          name: MEMORY_SAVER,
          trial: () => stepTrial(new MemorySaver(), null, steps, stepCase.threads),
        },
      ];
      if (redis !== null && stepCase.durable) {
        contenders.push({
          name: KEEPSAKE_REDIS,
          trial: async () => {
            redisTrial++;
            const saver = new KeepsakeSaver({
              adapter: redisAdapter({ url: redis.url, keyPrefix: `lg${redisTrial}` }),
            });
            try {
              return await stepTrial(saver, null, steps, stepCase.threads);
            } finally {
              await saver.close();
            }
          },
        });
      }
      const measurements = await measureSideBySide(contenders, config.rounds, (event) =>
        progress.trial(event),
      );
      progress.keep(`  ${stepCase.label}: ${describeMeasurements(STEPS, measurements)}`);
      stepCases.push({ key: stepCase.key, label: stepCase.label, x: index + 1, measurements });
    }
    readCases.push(...(await readTrials(context)));
  } finally {
    await redis?.stop();
  }
  return {
    id: langgraphSaverSection.id,
    title: langgraphSaverSection.title,
    summary:
      `Steps: ${steps} steps per thread per trial. Each step is what a LangGraph run asks of its ` +
      'checkpointer: `put` of the checkpoint (channels `messages`, which grows by one ' +
      `${MESSAGE_CHARACTERS}-character message, and \`step\`, both in \`newVersions\`), then ` +
      '`putWrites` of the next task (two writes). KeepsakeSaver on the fs adapter (one append ' +
      "to the thread's log per call, durable appends of all threads sharing one fsync) against " +
      'SqliteSaver on a database file in WAL mode (one INSERT per `put`, one transaction per ' +
      '`putWrites`, one connection), MemorySaver (no storage: the ceiling) and KeepsakeSaver on a ' +
      'redis-server this run starts (AOF `appendfsync always`). Durable: `durable: true` against ' +
      '`synchronous = FULL`; no fsync: `durable: false` against `synchronous = NORMAL`. ' +
      `Reads: a thread of ${READ_THREAD_CHECKPOINTS} checkpoints (a 500-character \`last\` ` +
      'channel and a `step` counter, each put with one `putWrites`), written before the clock; ' +
      `the time of one \`getTuple\` without a checkpoint id (mean of ${GETS_PER_TRIAL}) and of ` +
      'one full `list`, on the instance that wrote the thread and on a new instance (its first ' +
      'read loads the log).',
    tables: [
      {
        id: 'steps',
        title: 'Steps per second (put + putWrites)',
        metric: STEPS,
        subject: KEEPSAKE_SAVER,
        caseHeader: 'durability, threads',
        cases: stepCases,
      },
      {
        id: 'reads',
        title: `Reads of a ${READ_THREAD_CHECKPOINTS}-checkpoint thread (ms per call)`,
        metric: READ_TIME,
        subject: KEEPSAKE_SAVER,
        caseHeader: 'read',
        cases: readCases,
      },
    ],
    notes: [
      `SqliteSaver ran on ${driver || 'better-sqlite3'}; SqliteSaver's own code issues the SQL either way.`,
      "KeepsakeSaver stores a thread's checkpoints and pending writes as checksummed records of one log per thread (the adapter's run journal: appendLog with `group` durability when durable); SqliteSaver relies on SQLite transactions.",
      'With 16 threads, every thread runs its steps in sequence and the threads run at once in this process: SqliteSaver has one connection, whose calls are synchronous, so its commits cannot be shared; KeepsakeSaver durable appends of all threads share one fsync.',
      redis === null
        ? 'redis-server is not installed here: the Redis contender did not run.'
        : 'The Redis contender runs on a local redis-server started for this section, durable = in the AOF fsynced (`appendfsync always`).',
      'Setup (the saver, its first checkpoint, the read thread) happens before the clock, flushed to disk first.',
    ],
  };
}

function sqliteSaver(
  directory: string,
  synchronous: 'FULL' | 'NORMAL',
): { database: SqliteSaver; close: () => void } {
  const connection = openSqlite(join(directory, 'checkpoints.sqlite'));
  driver = connection.driver;
  connection.database.pragma('journal_mode = WAL');
  connection.database.pragma(`synchronous = ${synchronous}`);
  const saver = new SqliteSaver(
    connection.database as unknown as ConstructorParameters<typeof SqliteSaver>[0],
  );
  return { database: saver, close: () => connection.database.close() };
}

/** `steps` puts, each followed by a putWrites, on each of `threads` threads at once. */
async function stepTrial(
  saver: BaseCheckpointSaver,
  directory: string | null,
  steps: number,
  threads: number,
): Promise<number> {
  const runs = Array.from({ length: threads }, (_, thread) => threadRun(saver, `bench-${thread}`));
  await Promise.all(runs.map((step) => step(0)));
  if (directory !== null) await flushPageCache(directory);
  const elapsed = await timed(() =>
    Promise.all(
      runs.map(async (step) => {
        for (let index = 1; index <= steps; index++) await step(index);
      }),
    ),
  );
  return perSecond(steps * threads, elapsed);
}

/** One thread's steps: `put` of a growing `messages` channel, then `putWrites`. */
function threadRun(saver: BaseCheckpointSaver, threadId: string) {
  const messages: string[] = [];
  let config: RunnableConfig = { configurable: { thread_id: threadId, checkpoint_ns: '' } };
  return async (index: number) => {
    messages.push(`${index} ${'m'.repeat(MESSAGE_CHARACTERS)}`);
    const checkpoint: Checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(-1),
      channel_values: { messages: [...messages], step: index },
      channel_versions: { messages: index + 1, step: index + 1 },
    };
    config = await saver.put(
      config,
      checkpoint,
      { source: 'loop', step: index, parents: {} },
      { messages: index + 1, step: index + 1 },
    );
    await saver.putWrites(
      config,
      [
        ['messages', [`reply ${index}`]],
        ['step', index + 1],
      ],
      `task-${index}`,
    );
  };
}

/** A thread of READ_THREAD_CHECKPOINTS checkpoints, each with one putWrites. */
async function writeReadThread(saver: BaseCheckpointSaver): Promise<void> {
  let config: RunnableConfig = { configurable: { thread_id: 'reads', checkpoint_ns: '' } };
  for (let index = 0; index < READ_THREAD_CHECKPOINTS; index++) {
    const checkpoint: Checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(-1),
      channel_values: { last: `${index} ${'m'.repeat(MESSAGE_CHARACTERS)}`, step: index },
      channel_versions: { last: index + 1, step: index + 1 },
    };
    config = await saver.put(
      config,
      checkpoint,
      { source: 'loop', step: index, parents: {} },
      { last: index + 1, step: index + 1 },
    );
    await saver.putWrites(config, [['last', `reply ${index}`]], `task-${index}`);
  }
}

const READ_CONFIG = { configurable: { thread_id: 'reads', checkpoint_ns: '' } };

async function readOnce(saver: BaseCheckpointSaver, key: string): Promise<void> {
  if (key === 'get-latest') {
    if ((await saver.getTuple(READ_CONFIG)) === undefined) throw new Error('no checkpoint read');
    return;
  }
  let count = 0;
  for await (const _ of saver.list(READ_CONFIG)) count++;
  if (count !== READ_THREAD_CHECKPOINTS) throw new Error(`list returned ${count} checkpoints`);
}

/** Milliseconds of one read: the mean of GETS_PER_TRIAL `getTuple`s, or one `list`. */
async function timeRead(saver: BaseCheckpointSaver, key: string): Promise<number> {
  const calls = key === 'get-latest' ? GETS_PER_TRIAL : 1;
  const elapsed = await timed(async () => {
    for (let call = 0; call < calls; call++) await readOnce(saver, key);
  });
  return elapsed / calls;
}

async function readTrials(context: SectionContext): Promise<CaseResult[]> {
  const { config, progress, workspace } = context;
  const keepsakeDirectory = await workspace.directory('langgraph-reads-keepsake');
  const sqliteDirectory = await workspace.directory('langgraph-reads-sqlite');
  // Written without fsync (setup, not measured), then flushed.
  const writer = new KeepsakeSaver({ adapter: fsAdapter({ directory: keepsakeDirectory }) });
  const sqlite = sqliteSaver(sqliteDirectory, 'FULL');
  const memory = new MemorySaver();
  const cases: CaseResult[] = [];
  try {
    await writeReadThread(new KeepsakeSaver({ adapter: writer.adapter, durable: false }));
    await writer.flush();
    await writeReadThread(sqlite.database);
    await writeReadThread(memory);
    await flushPageCache(keepsakeDirectory);
    await flushPageCache(sqliteDirectory);
    for (const [index, readCase] of READ_CASES.entries()) {
      progress.beginCase(readCase.label);
      const contenders: Contender[] = [
        { name: KEEPSAKE_SAVER, trial: () => timeRead(writer, readCase.key) },
        {
          name: KEEPSAKE_SAVER_COLD,
          trial: async () => {
            const saver = new KeepsakeSaver({ adapter: writer.adapter, adapterOpened: true });
            return timed(() => readOnce(saver, readCase.key));
          },
        },
        { name: SQLITE_SAVER, trial: () => timeRead(sqlite.database, readCase.key) },
        { name: MEMORY_SAVER, trial: () => timeRead(memory, readCase.key) },
      ];
      const measurements = await measureSideBySide(contenders, config.rounds, (event) =>
        progress.trial(event),
      );
      progress.keep(`  ${readCase.label}: ${describeMeasurements(READ_TIME, measurements)}`);
      cases.push({ key: readCase.key, label: readCase.label, x: index + 1, measurements });
    }
  } finally {
    await writer.close();
    sqlite.close();
    await workspace.remove(keepsakeDirectory);
    await workspace.remove(sqliteDirectory);
  }
  return cases;
}
