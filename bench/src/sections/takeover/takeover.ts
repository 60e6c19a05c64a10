import { createSessionStore, type FollowRunItem, type SessionStore } from '@keepsake/core';
import type { BenchConfig } from '../../config.js';
import type { CaseResult, Measurement, Metric, SectionResult } from '../../harness/results.js';
import { formatValue } from '../../report/format.js';
import type { Section, SectionContext } from '../section.js';
import {
  type BackendKind,
  type BackendSettings,
  backendAdapter,
  startBackend,
  unavailableBackends,
} from './backends.js';
import { OwnerProcess } from './owner-process.js';
import { judgeTakeover, TAKEOVER_TARGET } from './takeover-target.js';

export const AFTER_SIGKILL = 'SIGKILL of the owner';
export const OWNER_COMPLETES = 'the owner completes the run';

const BACKENDS: ReadonlyArray<{ kind: BackendKind; label: string; x: number }> = [
  { kind: 'fs', label: 'fs (one host)', x: 1 },
  { kind: 'redis', label: 'Redis', x: 2 },
  { kind: 'redis-cluster', label: 'Redis Cluster (3 masters)', x: 3 },
  { kind: 's3', label: 'S3 (Ceph RGW)', x: 4 },
];
const MILLISECONDS: Metric = { unit: 'ms', higherIsBetter: false, format: 'milliseconds' };
/** A follower that has not ended this long after the kill is counted at this figure, and said. */
const GIVE_UP_MS = 120_000;

/**
 * E9, F1 (issue 36 item 3): how long after a SIGKILL of the process that owns a run a
 * follower on another store instance (this process) gets the run's ending, on every backend
 * with default settings: the owner's liveness (fs: its lock's process on this host; Redis: its
 * connections' names; S3: its lease object) lets the follower repair the run without waiting
 * out the grace. Half the runs die with a record, half before their first. Beside it, the
 * same follower when the owner completes its run: what any ending costs a follower to learn.
 */
export const takeoverSection: Section = {
  id: 'takeover',
  title: 'takeover: a follower on another instance after a SIGKILL of the run’s owner',
  backend: 'fs, redis, s3',
  plannedTrials: (config) => {
    const { kills, completions } = counts(config);
    return available().length * (kills + completions);
  },
  unavailableReason: () => null,
  run,
};

function counts(config: BenchConfig): { kills: number; completions: number } {
  return config.mode === 'quick' ? { kills: 2, completions: 1 } : { kills: 10, completions: 3 };
}

function available() {
  return BACKENDS.filter((backend) => !unavailableBackends.has(backend.kind));
}

async function run(context: SectionContext): Promise<SectionResult> {
  const { config, progress } = context;
  const { kills, completions } = counts(config);
  const cases: CaseResult[] = [];
  const notes: string[] = [];
  for (const backend of available()) {
    progress.beginCase(backend.label);
    progress.status(`starting ${backend.label}`);
    const started = await startBackend(backend.kind, context.workspace);
    const follower = createSessionStore({ adapter: backendAdapter(started.settings) });
    try {
      const killed: Measurement = { contender: AFTER_SIGKILL, samples: [] };
      const withRecord: number[] = [];
      const beforeFirst: number[] = [];
      for (let index = 0; index < kills; index++) {
        progress.trial({
          contender: AFTER_SIGKILL,
          round: index + 1,
          rounds: kills,
          warmup: false,
        });
        const hasRecord = index % 2 === 0;
        const figure = await timeTakeover(
          started.settings,
          follower,
          hasRecord,
          notes,
          backend.label,
        );
        (killed.samples as number[]).push(figure);
        (hasRecord ? withRecord : beforeFirst).push(figure);
      }
      const completed: Measurement = { contender: OWNER_COMPLETES, samples: [] };
      for (let index = 0; index < completions; index++) {
        progress.trial({
          contender: OWNER_COMPLETES,
          round: index + 1,
          rounds: completions,
          warmup: false,
        });
        (completed.samples as number[]).push(await timeCompletion(started.settings, follower));
      }
      cases.push({
        key: backend.kind,
        label: backend.label,
        x: backend.x,
        measurements: [killed, completed],
      });
      const judged = judgeTakeover(killed.samples);
      const line =
        `${backend.label}: after a SIGKILL, p50 ${formatValue(MILLISECONDS, judged.p50)}, ` +
        `max ${formatValue(MILLISECONDS, judged.max)} (with a record: ${withRecord.map(seconds).join(', ')}; ` +
        `before the first: ${beforeFirst.map(seconds).join(', ')}): ${judged.verdict}`;
      notes.push(line);
      progress.keep(`  ${line}`);
    } finally {
      await follower.close();
      await started.dispose();
    }
  }
  for (const [kind, reason] of unavailableBackends) notes.push(`${kind} not measured: ${reason}`);
  notes.push(
    `Target (issue 36): ${TAKEOVER_TARGET.description}. Each figure is one kill: a new owner process opens the backend, begins a run, the follower in this process follows it, then the owner is SIGKILLed; the figure is the time from the kill until the follower’s ending (interrupted by crash) arrives. Default settings throughout: the follower's poll (runs.followPollMs), the owner-liveness checks (Redis: livenessConfirmMs 2 s; S3: a lease gone 3 s after its last renewal by the server's clock) and the grace (30 s, for an owner whose liveness cannot be told).`,
  );
  return {
    id: takeoverSection.id,
    title: takeoverSection.title,
    summary:
      'The time a follower on another store instance waits for a run’s ending after the process that owned the run was SIGKILLed, on each backend, against the time it waits when the owner completes the run (the follower’s own poll or push latency). Without owner liveness the follower would wait the grace (30 s).',
    tables: [
      {
        id: 'ending-delay',
        title: 'time until a follower on another instance gets the run’s ending',
        metric: MILLISECONDS,
        subject: AFTER_SIGKILL,
        caseHeader: 'backend',
        cases,
      },
    ],
    notes,
  };
}

function seconds(milliseconds: number): string {
  return `${(milliseconds / 1000).toFixed(1)} s`;
}

/** Follows the run until its ending, or gives up after GIVE_UP_MS (then returns null). */
async function followToEnd(
  follower: SessionStore,
  sessionId: string,
  runId: string,
  attached: () => void,
): Promise<FollowRunItem | null> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), GIVE_UP_MS);
  try {
    let first = true;
    for await (const item of follower.followRun(sessionId, runId, { signal: controller.signal })) {
      if (first) {
        first = false;
        attached();
      }
      if (item.kind === 'end') return item;
    }
    return null;
  } finally {
    clearTimeout(timer);
  }
}

async function timeTakeover(
  settings: BackendSettings,
  follower: SessionStore,
  withRecord: boolean,
  notes: string[],
  label: string,
): Promise<number> {
  const owner = await OwnerProcess.start(settings);
  try {
    const { sessionId, runId } = await owner.begin(withRecord);
    // With a record, the follower is attached once it has read it; before the first record,
    // once it has made its first read (its load of the session; it yields nothing yet).
    let onAttached: () => void = () => undefined;
    const attached = new Promise<void>((resolve) => {
      onAttached = resolve;
    });
    const ended = followToEnd(follower, sessionId, runId, onAttached);
    if (withRecord) await attached;
    else await follower.runSummary(sessionId, runId);
    const killedAt = performance.now();
    await owner.kill();
    const ending = await ended;
    const elapsed = performance.now() - killedAt;
    if (ending === null || ending.kind !== 'end') {
      notes.push(`${label}: a follower had no ending ${GIVE_UP_MS} ms after the kill`);
      return GIVE_UP_MS;
    }
    if (ending.ending.state !== 'interrupted-by-crash') {
      notes.push(
        `${label}: a killed run ended as ${ending.ending.state} (${ending.ending.reason})`,
      );
    }
    return elapsed;
  } finally {
    await owner.kill();
  }
}

async function timeCompletion(settings: BackendSettings, follower: SessionStore): Promise<number> {
  const owner = await OwnerProcess.start(settings);
  try {
    const { sessionId, runId } = await owner.begin(true);
    let onAttached: () => void = () => undefined;
    const attached = new Promise<void>((resolve) => {
      onAttached = resolve;
    });
    const ended = followToEnd(follower, sessionId, runId, onAttached);
    await attached;
    const completedAt = performance.now();
    await owner.complete();
    await ended;
    return performance.now() - completedAt;
  } finally {
    await owner.kill();
  }
}
