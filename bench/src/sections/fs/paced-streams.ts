import { join } from 'node:path';
import type { RunHandle } from '@keepsake/core';
import { GroupCommitLog } from '../../baselines/append-logs.js';
import type { Contender } from '../../harness/measure.js';
import { measureSideBySide } from '../../harness/measure.js';
import type { CaseResult, Measurement, Metric, SectionResult } from '../../harness/results.js';
import { describeMeasurements } from '../../report/format.js';
import { text } from '../../workload/messages.js';
import type { Section, SectionContext } from '../section.js';
import { trialsPerCase } from '../section.js';
import { GROUP_COMMIT_LOOP } from './journal-append.js';
import { KEEPSAKE_FS, openFsStore } from './keepsake-fs.js';

const LATENCY: Metric = { unit: 'ms', higherIsBetter: false, format: 'milliseconds' };
const CPU_PER_APPEND: Metric = { unit: 'µs', higherIsBetter: false, format: 'rate' };
/** A token's text: a few words, as a model streams them. */
const TOKEN_CHARACTERS = 60;

/**
 * Journal appends at a model's pace: every stream appends one token, waits for it to be
 * durable, then waits out the gap to the next token. Throughput is set by the streams, so
 * what is measured is what each durable token costs: its wait and the CPU.
 */
export const pacedStreamsSection: Section = {
  id: 'fs-paced-streams',
  title: "fs: durable journal appends at a model's pace",
  backend: 'fs',
  plannedTrials: (config) => trialsPerCase(config, 2),
  unavailableReason: () => null,
  run,
};

async function run(context: SectionContext): Promise<SectionResult> {
  const { config, progress } = context;
  const { streams, tokensPerStream, gapMs } = config.pacedStreams;
  const label = `${streams} streams`;
  progress.beginCase(label);
  const recorder = new TrialRecorder(streams * tokensPerStream);
  const keepsake = await keepsakeStreams(context, recorder);
  const raw = await rawStreams(context, recorder);
  let p50: Measurement[];
  try {
    p50 = await measureSideBySide([keepsake.contender, raw.contender], config.rounds, (event) => {
      recorder.warmup = event.warmup;
      progress.trial(event);
    });
  } finally {
    await keepsake.close();
    await raw.close();
  }
  progress.keep(`  ${label}: p50 ${describeMeasurements(LATENCY, p50)}`);
  const one = (measurements: Measurement[]): CaseResult[] => [
    { key: String(streams), label, x: streams, measurements },
  ];
  return {
    id: pacedStreamsSection.id,
    title: pacedStreamsSection.title,
    summary:
      `${streams} concurrent streams each append ${tokensPerStream} tokens of ` +
      `${TOKEN_CHARACTERS} characters, one about every ${gapMs} ms (each gap drawn between ` +
      `${gapMs / 2} and ${(gapMs * 3) / 2} ms, the same draws for both contenders), waiting ` +
      'for each token to be durable before the gap to the next. Keepsake: ' +
      "`run.append({ type: 'token', … })` with `journal.durability: 'group'`. Raw " +
      'group-commit loop: the same tokens into one shared log, one fdatasync per batch.',
    tables: [
      table('p50', 'Wait for a durable token, median', LATENCY, one(p50)),
      table('p99', 'Wait for a durable token, 99th percentile', LATENCY, one(recorder.p99())),
      table('cpu', 'Process CPU per durable token', CPU_PER_APPEND, one(recorder.cpu())),
    ],
    notes: [
      "The streams set the pace, so both contenders append as many tokens per second; the figures are each token's wait from `append` until it is durable, and the process's CPU (user + system, every thread) over the trial divided by its tokens.",
      "Keepsake's runs are started, and each journal created by a first token, before a trial's waits and CPU are counted.",
      'The target (issue 20) is on the 99th-percentile wait against the raw loop: what the journal costs a stream between its tokens, where the back-to-back section above shows its throughput.',
    ],
  };
}

function table(id: string, title: string, metric: Metric, cases: CaseResult[]) {
  return { id, title, metric, subject: KEEPSAKE_FS, caseHeader: 'streams', cases };
}

/** The waits and CPU of each trial, per contender, warm-up rounds left out. */
class TrialRecorder {
  warmup = false;
  private readonly p99s = new Map<string, number[]>();
  private readonly cpus = new Map<string, number[]>();

  constructor(private readonly tokensPerTrial: number) {}

  /** Runs a trial; returns the median wait and keeps its 99th percentile and CPU. */
  async record(contender: string, trial: (waits: number[]) => Promise<void>): Promise<number> {
    const waits: number[] = [];
    const before = process.cpuUsage();
    await trial(waits);
    const used = process.cpuUsage(before);
    waits.sort((left, right) => left - right);
    if (!this.warmup) {
      push(this.p99s, contender, percentile(waits, 0.99));
      push(this.cpus, contender, (used.user + used.system) / this.tokensPerTrial);
    }
    return percentile(waits, 0.5);
  }

  p99(): Measurement[] {
    return [...this.p99s].map(([contender, samples]) => ({ contender, samples }));
  }

  cpu(): Measurement[] {
    return [...this.cpus].map(([contender, samples]) => ({ contender, samples }));
  }
}

function push(map: Map<string, number[]>, key: string, value: number): void {
  const values = map.get(key) ?? [];
  values.push(value);
  map.set(key, values);
}

function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? 0;
}

interface PacedStreams {
  readonly contender: Contender;
  close(): Promise<void>;
}

/** Each stream's gaps, drawn once (a linear congruential walk) so both contenders get them. */
function gapsFor(stream: number, tokens: number, gapMs: number): number[] {
  let state = (stream * 2_654_435_761 + 1) >>> 0;
  return Array.from({ length: tokens }, () => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    return gapMs * (0.5 + state / 2 ** 32);
  });
}

function sleep(milliseconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, milliseconds));
}

/** Every stream appends its tokens at its pace; `waits` gets each token's wait. */
async function pace(
  context: SectionContext,
  waits: number[],
  append: (stream: number) => Promise<unknown>,
): Promise<void> {
  const { streams, tokensPerStream, gapMs } = context.config.pacedStreams;
  await Promise.all(
    Array.from({ length: streams }, async (_, stream) => {
      const gaps = gapsFor(stream, tokensPerStream, gapMs);
      await sleep((gaps[0] as number) / 2);
      for (let token = 0; token < tokensPerStream; token++) {
        const started = performance.now();
        await append(stream);
        waits.push(performance.now() - started);
        await sleep(gaps[token] as number);
      }
    }),
  );
}

async function keepsakeStreams(
  context: SectionContext,
  recorder: TrialRecorder,
): Promise<PacedStreams> {
  const { streams } = context.config.pacedStreams;
  const directory = await context.workspace.directory('paced-keepsake');
  const store = openFsStore(directory, { journal: { durability: 'group' } });
  const token = text(TOKEN_CHARACTERS, 7);
  return {
    contender: {
      name: KEEPSAKE_FS,
      async trial() {
        // A new run per stream and trial (one answer per session), each journal created by
        // a first token before the trial's waits and CPU are counted.
        const runs: RunHandle[] = [];
        for (let stream = 0; stream < streams; stream++) {
          const session = await store.create({ title: `stream ${stream}` });
          const run = await store.beginRun(session.id, {
            userMessage: { role: 'user', content: 'Tell me a story.' },
          });
          await run.append({ type: 'token', data: { text: token } });
          runs.push(run);
        }
        const median = await recorder.record(KEEPSAKE_FS, (waits) =>
          pace(context, waits, (stream) =>
            (runs[stream] as RunHandle).append({ type: 'token', data: { text: token } }),
          ),
        );
        for (const run of runs) await run.complete();
        return median;
      },
    },
    async close() {
      await store.close();
      await context.workspace.remove(directory);
    },
  };
}

async function rawStreams(context: SectionContext, recorder: TrialRecorder): Promise<PacedStreams> {
  const directory = await context.workspace.directory('paced-raw');
  const log = await GroupCommitLog.open(join(directory, 'shared.log'));
  const record = Buffer.from(
    `${JSON.stringify({ type: 'token', text: text(TOKEN_CHARACTERS, 7) })}\n`,
  );
  return {
    contender: {
      name: GROUP_COMMIT_LOOP,
      trial: () =>
        recorder.record(GROUP_COMMIT_LOOP, (waits) =>
          pace(context, waits, () => log.append(record)),
        ),
    },
    async close() {
      await log.close();
      await context.workspace.remove(directory);
    },
  };
}
