import { join } from 'node:path';
import { fsAdapter } from '@keepsake/fs';
import { KeepsakeSaver } from '@keepsake/langgraph';
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  type BaseCheckpointSaver,
  type Checkpoint,
  emptyCheckpoint,
  uuid6,
} from '@langchain/langgraph-checkpoint';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { type Contender, measureSideBySide, perSecond, timed } from '../../harness/measure.js';
import type { CaseResult, Metric, SectionResult } from '../../harness/results.js';
import { flushPageCache } from '../../harness/workspace.js';
import { describeMeasurements } from '../../report/format.js';
import type { Section, SectionContext } from '../section.js';
import { trialsPerCase } from '../section.js';
import { openSqlite } from './sqlite-connection.js';

/** The names the table uses. */
export const KEEPSAKE_SAVER = 'KeepsakeSaver (fs)';
export const SQLITE_SAVER = 'SqliteSaver (file)';

const MESSAGE_CHARACTERS = 500;
const STEPS: Metric = { unit: 'steps/s', higherIsBetter: true, format: 'rate' };

interface DurabilityCase {
  readonly key: string;
  readonly label: string;
  /** KeepsakeSaver's `durable`. */
  readonly durable: boolean;
  /** SQLite's `synchronous` in WAL mode: FULL fsyncs the WAL at every commit, NORMAL never. */
  readonly synchronous: 'FULL' | 'NORMAL';
}

const CASES: readonly DurabilityCase[] = [
  { key: 'durable', label: 'durable (fsync)', durable: true, synchronous: 'FULL' },
  { key: 'lazy', label: 'no fsync', durable: false, synchronous: 'NORMAL' },
];

/**
 * One LangGraph step as a checkpointer sees it, on the same disk, in the same rounds:
 * `put` of the step's checkpoint (a `messages` channel that grows by one message each step,
 * and a `step` counter, both new versions) then `putWrites` of the next task's two writes.
 * KeepsakeSaver on the fs adapter against `@langchain/langgraph-checkpoint-sqlite`'s
 * SqliteSaver on a database file (WAL), with and without an fsync per call.
 */
export const langgraphSaverSection: Section = {
  id: 'langgraph-saver',
  title: 'langgraph: put + putWrites per step, KeepsakeSaver on fs against SqliteSaver',
  backend: 'fs',
  plannedTrials: (config) => CASES.length * trialsPerCase(config, 2),
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
  const cases: CaseResult[] = [];
  for (const [index, durability] of CASES.entries()) {
    progress.beginCase(durability.label);
    const contenders: Contender[] = [
      {
        name: KEEPSAKE_SAVER,
        trial: async () => {
          const directory = await workspace.directory('langgraph-keepsake');
          const saver = new KeepsakeSaver({
            adapter: fsAdapter({ directory }),
            durable: durability.durable,
          });
          try {
            return await stepTrial(saver, directory, steps);
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
          const connection = openSqlite(join(directory, 'checkpoints.sqlite'));
          driver = connection.driver;
          connection.database.pragma('journal_mode = WAL');
          connection.database.pragma(`synchronous = ${durability.synchronous}`);
          const saver = new SqliteSaver(
            connection.database as unknown as ConstructorParameters<typeof SqliteSaver>[0],
          );
          try {
            return await stepTrial(saver, directory, steps);
          } finally {
            connection.database.close();
            await workspace.remove(directory);
          }
        },
      },
    ];
    const measurements = await measureSideBySide(contenders, config.rounds, (event) =>
      progress.trial(event),
    );
    progress.keep(`  ${durability.label}: ${describeMeasurements(STEPS, measurements)}`);
    cases.push({ key: durability.key, label: durability.label, x: index + 1, measurements });
  }
  return {
    id: langgraphSaverSection.id,
    title: langgraphSaverSection.title,
    summary:
      `One thread, ${steps} steps per trial. Each step is what a LangGraph run asks of its ` +
      'checkpointer: `put` of the checkpoint (channels `messages`, which grows by one ' +
      `${MESSAGE_CHARACTERS}-character message, and \`step\`, both in \`newVersions\`), then ` +
      '`putWrites` of the next task (two writes). KeepsakeSaver on the fs adapter (a channel value ' +
      'and the checkpoint per `put`, one document per `putWrites`) against SqliteSaver on a ' +
      'database file in WAL mode (one INSERT per `put`, one transaction per `putWrites`). ' +
      'Durable: `durable: true` against `synchronous = FULL` (an fsync per call on both sides); ' +
      'no fsync: `durable: false` against `synchronous = NORMAL`.',
    tables: [
      {
        id: 'steps',
        title: 'Steps per second (put + putWrites)',
        metric: STEPS,
        subject: KEEPSAKE_SAVER,
        caseHeader: 'durability',
        cases,
      },
    ],
    notes: [
      `SqliteSaver ran on ${driver || 'better-sqlite3'}; SqliteSaver's own code issues the SQL either way.`,
      'KeepsakeSaver writes every document atomically (temp file, fsync, rename, directory fsync when durable); SqliteSaver relies on SQLite transactions.',
      'Neither side reads during a trial; setup (the saver, its first checkpoint) happens before the clock, flushed to disk first.',
    ],
  };
}

/** `steps` puts, each followed by a putWrites, on one thread; the first put is setup. */
async function stepTrial(
  saver: BaseCheckpointSaver,
  directory: string,
  steps: number,
): Promise<number> {
  const messages: string[] = [];
  let config: RunnableConfig = { configurable: { thread_id: 'bench', checkpoint_ns: '' } };
  const step = async (index: number) => {
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
  await step(0);
  await flushPageCache(directory);
  const elapsed = await timed(async () => {
    for (let index = 1; index <= steps; index++) await step(index);
  });
  return perSecond(steps, elapsed);
}
