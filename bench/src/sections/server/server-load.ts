import type { Contender } from '../../harness/measure.js';
import { measureSideBySide } from '../../harness/measure.js';
import type { CaseResult, Measurement, Metric, SectionResult } from '../../harness/results.js';
import { describeMeasurements } from '../../report/format.js';
import type { Section, SectionContext } from '../section.js';
import { trialsPerCase } from '../section.js';
import type { TrialFigures } from './chat-turns.js';
import { type DirectChats, startDirectChats } from './direct-chats.js';
import { httpChatTrial } from './http-chats.js';
import { serverLoadSettings } from './load-settings.js';
import { serverUnavailableReason } from './server-location.js';
import { type ServerProcess, startServerProcess } from './server-process.js';

/** The server contender: the reference server, clients over HTTP and SSE. */
export const KEEPSAKE_SERVER = 'Keepsake server (HTTP + SSE)';
/** The baseline: the same agent appending to a store's journal in its own process. */
export const DIRECT_JOURNAL = 'same agent, journal directly';

/** A send counts once its run completed and the client read it to the end. */
const THROUGHPUT: Metric = { unit: 'sends/s', higherIsBetter: true, format: 'rate' };
const LATENCY: Metric = { unit: 'ms', higherIsBetter: false, format: 'milliseconds' };
const MEMORY: Metric = { unit: 'bytes', higherIsBetter: false, format: 'bytes' };

/**
 * Load figures for the reference server: N concurrent chats, each sending, following its
 * run over SSE to the end and sending again, for a bounded time. Every completed answer is
 * then read back and must equal the tokens its client streamed (a truncated transcript
 * fails the section: it is a data-loss bug, not a slow figure).
 */
export const serverLoadSection: Section = {
  id: 'server',
  title: 'server: concurrent chats through HTTP + SSE',
  backend: 'fs',
  plannedTrials: (config) => serverLoadSettings(config).chats.length * trialsPerCase(config, 2),
  unavailableReason: serverUnavailableReason,
  run,
};

type FigureName = Exclude<keyof TrialFigures, 'mismatches' | 'checked' | 'busyRetries'>;

async function run(context: SectionContext): Promise<SectionResult> {
  const { config, progress } = context;
  const settings = serverLoadSettings(config);
  const cases = new Map<number, Map<string, TrialFigures[]>>();
  let checked = 0;
  let busyRetries = 0;
  for (const chats of settings.chats) {
    const label = `${chats} chats`;
    progress.beginCase(label);
    const figures = new Map<string, TrialFigures[]>([
      [KEEPSAKE_SERVER, []],
      [DIRECT_JOURNAL, []],
    ]);
    let warmup = false;
    const keep = (contender: string, trial: TrialFigures): number => {
      if (trial.mismatches.length > 0) {
        throw new Error(
          `${contender}: ${trial.mismatches.length} of ${trial.checked} stored answers differ from their streamed tokens, e.g. ${trial.mismatches.slice(0, 3).join('; ')}`,
        );
      }
      checked += trial.checked;
      busyRetries += trial.busyRetries;
      if (!warmup) figures.get(contender)?.push(trial);
      return (trial.turns * 1000) / trial.elapsedMs;
    };
    const server = await serverContender(context, settings, chats, keep);
    const direct = await directContender(context, settings, chats, keep);
    try {
      await measureSideBySide([server.contender, direct.contender], config.rounds, (event) => {
        warmup = event.warmup;
        progress.trial(event);
      });
    } finally {
      await server.close();
      await direct.close();
    }
    cases.set(chats, figures);
    const throughput = measurementsOf(figures, (trial) => (trial.turns * 1000) / trial.elapsedMs);
    progress.keep(`  ${label}: ${describeMeasurements(THROUGHPUT, throughput)}`);
  }

  const table = (
    id: string,
    title: string,
    metric: Metric,
    figure: (trial: TrialFigures) => number,
  ) => ({
    id,
    title,
    metric,
    subject: KEEPSAKE_SERVER,
    caseHeader: 'chats',
    cases: [...cases].map(
      ([chats, figures]): CaseResult => ({
        key: String(chats),
        label: `${chats} chats`,
        x: chats,
        measurements: measurementsOf(figures, figure),
      }),
    ),
  });
  const named = (name: FigureName) => (trial: TrialFigures) => trial[name];
  return {
    id: serverLoadSection.id,
    title: serverLoadSection.title,
    summary:
      `${settings.chats.join(' and ')} concurrent chats for ${settings.trialMs / 1000} s per trial, each ` +
      'sending a message, following its run to the end and sending the next. The scripted agent ' +
      `streams reasoning, a tool call and a ${settings.answerWords}-word answer, one event every ` +
      `${settings.tokenDelayMs} ms. Keepsake server: \`src/main.ts\` of apps/server on the fs ` +
      'backend (journal durability `group`), clients in the benchmark process using ' +
      '`POST …/messages` and the SSE events URL. Baseline: the same agent and event mapping ' +
      "appending to a store directly in a process of its own, as the server's run executor " +
      'does (refresh, `beginRun`, appends, `complete`).',
    tables: [
      table(
        'throughput',
        'Sends per second, each followed to the end of its run',
        THROUGHPUT,
        (trial) => (trial.turns * 1000) / trial.elapsedMs,
      ),
      table('send-p50', 'Send until the user turn is durable, median', LATENCY, named('sendP50')),
      table(
        'send-p99',
        'Send until the user turn is durable, 99th percentile',
        LATENCY,
        named('sendP99'),
      ),
      table(
        'first-event-p50',
        'Send until the first event, median',
        LATENCY,
        named('firstEventP50'),
      ),
      table(
        'first-event-p99',
        'Send until the first event, 99th percentile',
        LATENCY,
        named('firstEventP99'),
      ),
      table(
        'rss',
        'Resident memory of the process at the end of a trial',
        MEMORY,
        named('rssBytes'),
      ),
    ],
    notes: [
      `Every completed answer of every trial (${checked.toLocaleString('en-US')} in this run, warm-up rounds included) was read back from the store and equals the tokens its client streamed; a difference fails the section.`,
      "A send is timed from the request until the server's 202 (the user's turn is durable, E1), or until `beginRun` resolves; the first event until the client parsed the run's first SSE record, or until the first append resolved.",
      'The server contender shares the two cores with its clients (one process each); the baseline has no clients. Sessions are created before and deleted after each trial, outside the clock.',
      `Sends refused as busy because the previous run was still releasing its session, then sent again (timed as part of the send): ${busyRetries}.`,
      'Resident memory is the whole process (Node and the tsx loader included), read at the end of the trial, before the check.',
    ],
  };
}

function measurementsOf(
  figures: Map<string, TrialFigures[]>,
  figure: (trial: TrialFigures) => number,
): Measurement[] {
  return [...figures].map(([contender, trials]) => ({ contender, samples: trials.map(figure) }));
}

async function serverContender(
  context: SectionContext,
  settings: ReturnType<typeof serverLoadSettings>,
  chats: number,
  keep: (contender: string, trial: TrialFigures) => number,
): Promise<{ contender: Contender; close(): Promise<void> }> {
  const directory = await context.workspace.directory('server-load');
  let server: ServerProcess;
  try {
    server = await startServerProcess({ dataDirectory: directory, ...settings });
  } catch (error) {
    await context.workspace.remove(directory);
    throw error;
  }
  return {
    contender: {
      name: KEEPSAKE_SERVER,
      trial: async () =>
        keep(KEEPSAKE_SERVER, await httpChatTrial(server, chats, settings.trialMs)),
    },
    async close() {
      await server.stop();
      await context.workspace.remove(directory);
    },
  };
}

async function directContender(
  context: SectionContext,
  settings: ReturnType<typeof serverLoadSettings>,
  chats: number,
  keep: (contender: string, trial: TrialFigures) => number,
): Promise<{ contender: Contender; close(): Promise<void> }> {
  const directory = await context.workspace.directory('server-load-direct');
  let direct: DirectChats;
  try {
    direct = await startDirectChats({ directory, ...settings });
  } catch (error) {
    await context.workspace.remove(directory);
    throw error;
  }
  return {
    contender: {
      name: DIRECT_JOURNAL,
      trial: async () => keep(DIRECT_JOURNAL, await direct.trial(chats, settings.trialMs)),
    },
    async close() {
      await direct.close();
      await context.workspace.remove(directory);
    },
  };
}
