import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { KeepsakeSession } from '@keepsake/openai-agents';
import { type AgentInputItem, MemorySession, type Session } from '@openai/agents-core';
import { durableReplace } from '../../baselines/durable-replace.js';
import { type Contender, measureSideBySide, perSecond, timed } from '../../harness/measure.js';
import type { CaseResult, Measurement, Metric, SectionResult } from '../../harness/results.js';
import { median } from '../../harness/stats.js';
import { flushPageCache } from '../../harness/workspace.js';
import { describeMeasurements } from '../../report/format.js';
import { openFsStore } from '../fs/keepsake-fs.js';
import type { Section, SectionContext } from '../section.js';
import { trialsPerCase } from '../section.js';

/** The names the tables use. */
export const KEEPSAKE_SESSION = 'KeepsakeSession (fs)';
export const KEEPSAKE_SESSION_SINGLE_WRITER = 'KeepsakeSession (fs, refresh: false)';
export const MEMORY_SESSION = 'MemorySession (ceiling)';
export const JSON_FILE_SESSION = 'JSON file per session';

const HISTORY_LENGTHS = [100, 10_000] as const;
const TEXT_CHARACTERS = 200;
const TURNS: Metric = { unit: 'turns/s', higherIsBetter: true, format: 'rate' };

/**
 * One Agents SDK turn as a `Session` sees it when the runner is given a session: `getItems()`
 * (the whole history, prepended to the model input) then `addItems` of the turn's user message
 * and assistant answer. KeepsakeSession on the fs adapter, in its default mode (re-reads the
 * session on every `getItems`, safe with several writers) and with `refresh: false` (one
 * process writes its sessions), against `MemorySession` (no storage at all: the ceiling) and
 * a JSON file per session, the floor users write by hand: `getItems` reads and parses the
 * file, `addItems` reads it, appends and replaces it durably (temp file, fsync, rename,
 * directory fsync).
 */
export const openaiAgentsSessionSection: Section = {
  id: 'openai-agents-session',
  title: 'openai-agents: getItems + addItems per turn, KeepsakeSession on fs',
  backend: 'fs',
  plannedTrials: (config) => HISTORY_LENGTHS.length * trialsPerCase(config, 4),
  unavailableReason: () => null,
  run,
};

function turnsPerTrial(context: SectionContext, historyLength: number): number {
  const quick = context.config.mode === 'quick';
  if (historyLength >= 10_000) return quick ? 10 : 40;
  return quick ? 100 : 400;
}

function itemsOf(turn: number): AgentInputItem[] {
  const text = (who: string) => `${who} ${turn} ${'x'.repeat(TEXT_CHARACTERS)}`;
  return [
    { type: 'message', role: 'user', content: text('question') },
    {
      type: 'message',
      role: 'assistant',
      status: 'completed',
      id: `msg_${turn}`,
      content: [{ type: 'output_text', text: text('answer') }],
    },
  ];
}

function historyOf(length: number): AgentInputItem[] {
  return Array.from({ length: length / 2 }, (_, turn) => itemsOf(turn)).flat();
}

/** `turns` turns on `session`, whose history holds `historyLength` items: turns per second. */
async function turnTrial(session: Session, historyLength: number, turns: number): Promise<number> {
  let expected = historyLength;
  const elapsed = await timed(async () => {
    for (let turn = 0; turn < turns; turn++) {
      const history = await session.getItems();
      // A turn that lost items would be measured doing less work: refuse it.
      if (history.length !== expected) {
        throw new Error(`getItems gave ${history.length} items, ${expected} were added`);
      }
      await session.addItems(itemsOf(historyLength + turn));
      expected += 2;
    }
  });
  return perSecond(turns, elapsed);
}

/** The JSON-file `Session` a user writes by hand, made durable the competent way. */
class JsonFileSession implements Session {
  constructor(private readonly path: string) {}
  async getSessionId(): Promise<string> {
    return 'bench';
  }
  async getItems(): Promise<AgentInputItem[]> {
    return JSON.parse(await readFile(this.path, 'utf8')) as AgentInputItem[];
  }
  async addItems(items: AgentInputItem[]): Promise<void> {
    const stored = await this.getItems();
    stored.push(...items);
    await durableReplace(this.path, JSON.stringify(stored));
  }
  async popItem(): Promise<AgentInputItem | undefined> {
    throw new Error('not measured');
  }
  async clearSession(): Promise<void> {
    throw new Error('not measured');
  }
}

async function run(context: SectionContext): Promise<SectionResult> {
  const { config, progress, workspace } = context;
  const cases: CaseResult[] = [];
  const revisionReads: { label: string; milliseconds: number }[] = [];
  for (const historyLength of HISTORY_LENGTHS) {
    const label = `${historyLength.toLocaleString('en-US')} items`;
    progress.beginCase(label);
    const turns = turnsPerTrial(context, historyLength);
    const history = historyOf(historyLength);
    const keepsake = (name: string, refresh: boolean): Contender => ({
      name,
      trial: async () => {
        const directory = await workspace.directory('openai-agents-keepsake');
        const seeding = openFsStore(directory);
        await new KeepsakeSession({ store: seeding, sessionId: 'bench' }).addItems(history);
        await seeding.close();
        await flushPageCache(directory);
        // A fresh store, as a server process that starts: the first turn loads from disk.
        const store = openFsStore(directory);
        try {
          const session = new KeepsakeSession({ store, sessionId: 'bench', refresh });
          return await turnTrial(session, historyLength, turns);
        } finally {
          await store.close();
          await workspace.remove(directory);
        }
      },
    });
    const contenders: Contender[] = [
      keepsake(KEEPSAKE_SESSION, true),
      keepsake(KEEPSAKE_SESSION_SINGLE_WRITER, false),
      {
        name: MEMORY_SESSION,
        trial: () => turnTrial(new MemorySession({ initialItems: history }), historyLength, turns),
      },
      {
        name: JSON_FILE_SESSION,
        trial: async () => {
          const directory = await workspace.directory('openai-agents-json');
          const path = join(directory, 'bench.json');
          await durableReplace(path, JSON.stringify(history));
          await flushPageCache(directory);
          try {
            return await turnTrial(new JsonFileSession(path), historyLength, turns);
          } finally {
            await workspace.remove(directory);
          }
        },
      },
    ];
    const measurements = await measureSideBySide(contenders, config.rounds, (event) =>
      progress.trial(event),
    );
    progress.keep(`  ${label}: ${describeMeasurements(TURNS, measurements)}`);
    revisionReads.push({ label, milliseconds: await revisionReadCost(context, history) });
    cases.push({ key: String(historyLength), label, x: historyLength, measurements });
  }
  const without = (name: string) =>
    cases.map((entry) => ({
      ...entry,
      measurements: entry.measurements.filter(
        (measurement: Measurement) => measurement.contender !== name,
      ),
    }));
  return {
    id: openaiAgentsSessionSection.id,
    title: openaiAgentsSessionSection.title,
    summary:
      'One session; each turn is what the Agents SDK runner asks of its `Session`: ' +
      '`getItems()` (the whole history) then `addItems` of two items (a user message and an ' +
      `assistant message of about ${TEXT_CHARACTERS} characters each), durable before it ` +
      'resolves. The history holds 100 or 10,000 items before the first turn ' +
      `(${turnsPerTrial(context, 100)} and ${turnsPerTrial(context, 10_000)} turns per trial). ` +
      'KeepsakeSession on the fs adapter (a store opened fresh on the seeded directory) in its ' +
      'default mode, which re-reads the session on every `getItems` because another instance ' +
      'may have written it, and with `refresh: false` (one process writes its sessions), ' +
      'against MemorySession (the ceiling: no storage) and a JSON file per session (read and ' +
      'parsed by `getItems`; read, appended and replaced durably by `addItems`: temp file, ' +
      'fsync, rename, directory fsync).',
    tables: [
      {
        id: 'turns',
        title: 'Turns per second, default mode (refresh: true)',
        metric: TURNS,
        subject: KEEPSAKE_SESSION,
        caseHeader: 'history',
        cases: without(KEEPSAKE_SESSION_SINGLE_WRITER),
      },
      {
        id: 'turns-single-writer',
        title: 'Turns per second, one writer (refresh: false)',
        metric: TURNS,
        subject: KEEPSAKE_SESSION_SINGLE_WRITER,
        caseHeader: 'history',
        cases: without(KEEPSAKE_SESSION),
      },
    ],
    notes: [
      'Both tables come from the same rounds: the four contenders ran side by side, rotated.',
      'Every turn checks that getItems gave back every item added so far.',
      'What the default mode pays beyond refresh: false, measured after the rounds: its ' +
        "check reads the stored document (`adapter.getDocument`, the adapter contract's only " +
        'read that gives the stored revision; there is no stat-like revision read) in ' +
        revisionReads
          .map((read) => `${read.milliseconds.toFixed(2)} ms at ${read.label}`)
          .join(', ') +
        ' (median of 20 reads), and decodes the session again only when the revision changed.',
    ],
  };
}

/** The median time of `adapter.getDocument` of a seeded session: the default mode's check. */
async function revisionReadCost(
  context: SectionContext,
  history: AgentInputItem[],
): Promise<number> {
  const directory = await context.workspace.directory('openai-agents-revision-read');
  const store = openFsStore(directory);
  try {
    const session = new KeepsakeSession({ store, sessionId: 'bench' });
    await session.addItems(history);
    const times: number[] = [];
    for (let read = 0; read < 20; read++) {
      times.push(await timed(() => store.adapter.getDocument('sessions', session.keepsakeId)));
    }
    return median(times);
  } finally {
    await store.close();
    await context.workspace.remove(directory);
  }
}
