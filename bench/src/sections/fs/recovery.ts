import { cp } from 'node:fs/promises';
import { runWorker } from '../../harness/child-process.js';
import { type Contender, measureSideBySide } from '../../harness/measure.js';
import type { Measurement, Metric, SectionResult } from '../../harness/results.js';
import { flushPageCache } from '../../harness/workspace.js';
import { describeMeasurements, formatBytes } from '../../report/format.js';
import type { RecoveryWorkerInput, RecoveryWorkerResult } from '../../workers/recovery-worker.js';
import { prepareBaselineState } from '../../workload/recovery-workload.js';
import type { Section, SectionContext } from '../section.js';
import { trialsPerCase } from '../section.js';
import { KEEPSAKE_FS } from './keepsake-fs.js';

export const HAND_ROLLED_RECOVERY = 'hand-rolled recovery';

const DURATION: Metric = { unit: 'ms', higherIsBetter: false, format: 'milliseconds' };
const PEAK_MEMORY: Metric = { unit: 'bytes', higherIsBetter: false, format: 'bytes' };
const WORKER = new URL('../../workers/recovery-worker.js', import.meta.url);

/** F1: cold start after a crash left every session mid-run, each with a journal. */
export const recoverySection: Section = {
  id: 'fs-recovery',
  title: 'fs: cold-start recovery of sessions left mid-run',
  backend: 'fs',
  plannedTrials: (config) => trialsPerCase(config, 2),
  unavailableReason: () => null,
  run,
};

async function run(context: SectionContext): Promise<SectionResult> {
  const { config, progress, workspace } = context;
  const workload = config.recovery;
  const label = `${workload.sessions.toLocaleString('en-US')} sessions`;
  progress.beginCase(label);

  const keepsakeState = await workspace.directory('recovery-keepsake-state');
  const baselineState = await workspace.directory('recovery-baseline-state');
  progress.status(`crashing a process with ${workload.sessions} runs in flight`);
  const prepare: RecoveryWorkerInput = {
    mode: 'prepare-keepsake',
    directory: keepsakeState,
    ...workload,
  };
  await runWorker(WORKER, prepare, { endsKilled: true });
  await prepareBaselineState(baselineState, workload);
  await flushPageCache(keepsakeState);
  const idle = await runWorker<RecoveryWorkerResult>(WORKER, { mode: 'idle' });

  const keepsake = recoveringContender(context, KEEPSAKE_FS, keepsakeState, 'recover-keepsake');
  const baseline = recoveringContender(
    context,
    HAND_ROLLED_RECOVERY,
    baselineState,
    'recover-baseline',
  );
  let times: Measurement[];
  try {
    times = await measureSideBySide(
      [keepsake.contender, baseline.contender],
      config.rounds,
      (event) => progress.trial(event),
    );
  } finally {
    await workspace.remove(keepsakeState);
    await workspace.remove(baselineState);
  }
  const memory: Measurement[] = [keepsake, baseline].map((entry) => ({
    contender: entry.contender.name,
    samples: entry.peakRss.slice(config.rounds.warmupRounds),
  }));
  progress.keep(`  ${label}: ${describeMeasurements(DURATION, times)}`);
  progress.keep(`  ${label}, peak RSS: ${describeMeasurements(PEAK_MEMORY, memory)}`);
  const caseOf = (measurements: Measurement[]) => [
    { key: String(workload.sessions), label, x: workload.sessions, measurements },
  ];
  return {
    id: recoverySection.id,
    title: recoverySection.title,
    summary:
      `A process with ${workload.sessions.toLocaleString('en-US')} sessions (${workload.messagesPerSession} ` +
      `messages each), every one with a run in flight that had journaled ${workload.eventsPerRun} ` +
      'token events, is killed with SIGKILL. A new process then opens the store and loads ' +
      `every session, ${workload.concurrency} at a time; each load repairs the pending turn ` +
      'from the journal (F1). Keepsake: `store.list()` then `store.load(id)` with ' +
      '`recovery.graceMs: 0`. Hand-rolled recovery: read each session file, read its ' +
      'JSON-lines journal, fold the tokens into an assistant message with an interruption ' +
      'marker, clear the pending turn, replace the file durably.',
    tables: [
      {
        id: 'duration',
        title: 'Cold start: time until every session is recovered',
        metric: DURATION,
        subject: KEEPSAKE_FS,
        caseHeader: 'sessions',
        cases: caseOf(times),
      },
      {
        id: 'peak-memory',
        title: 'Cold start: peak resident memory of the process',
        metric: PEAK_MEMORY,
        subject: KEEPSAKE_FS,
        caseHeader: 'sessions',
        cases: caseOf(memory),
      },
    ],
    notes: [
      'Each trial runs in a fresh Node process on a fresh copy of the crashed state; time starts before the store is created and ends when the last session is loaded.',
      `Peak memory is the process's maximum RSS, Node itself included: the same worker doing nothing peaks at ${formatBytes(idle.peakRssBytes)}.`,
      "The OS page cache is warm (the copy was just written and flushed): this is the store's cost, not the disk's read speed.",
    ],
  };
}

function recoveringContender(
  context: SectionContext,
  name: string,
  state: string,
  mode: 'recover-keepsake' | 'recover-baseline',
): { contender: Contender; peakRss: number[] } {
  const peakRss: number[] = [];
  const contender: Contender = {
    name,
    async trial() {
      const directory = await context.workspace.directory(`recovery-${mode}`);
      try {
        await cp(state, directory, { recursive: true });
        await flushPageCache(directory);
        const input: RecoveryWorkerInput = {
          mode,
          directory,
          concurrency: context.config.recovery.concurrency,
        };
        const result = await runWorker<RecoveryWorkerResult>(WORKER, input);
        if (result.recovered !== context.config.recovery.sessions) {
          throw new Error(
            `${name} recovered ${result.recovered} of ${context.config.recovery.sessions} sessions`,
          );
        }
        peakRss.push(result.peakRssBytes);
        return result.milliseconds;
      } finally {
        await context.workspace.remove(directory);
      }
    },
  };
  return { contender, peakRss };
}
