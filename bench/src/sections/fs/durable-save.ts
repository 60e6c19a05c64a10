import { join } from 'node:path';
import type { SessionStore } from '@keepsake/core';
import { durableReplace } from '../../baselines/durable-replace.js';
import {
  saveWithHandWrittenLoop,
  saveWithWholeFileRewrite,
  saveWithWriteFileAtomic,
} from '../../baselines/session-files.js';
import { type Contender, measureSideBySide, perSecond } from '../../harness/measure.js';
import type { CaseResult, Metric, SectionResult } from '../../harness/results.js';
import { flushPageCache } from '../../harness/workspace.js';
import { describeMeasurements } from '../../report/format.js';
import { plainMessage, plainMessages, plainSession } from '../../workload/messages.js';
import type { Section, SectionContext } from '../section.js';
import { trialsPerCase } from '../section.js';
import { KEEPSAKE_FS, openFsStore } from './keepsake-fs.js';

export const HAND_WRITTEN_LOOP = 'hand-written loop';
export const WRITE_FILE_ATOMIC = 'write-file-atomic';
export const WHOLE_FILE_REWRITE = 'whole-file rewrite';

const CONTENDERS = 4;

const THROUGHPUT: Metric = { unit: 'saves/s', higherIsBetter: true, format: 'rate' };

/**
 * fs durable save: one new message appended to a session of a given history length, saved
 * so that it survives power loss, by Keepsake and by what users would write instead.
 */
export const durableSaveSection: Section = {
  id: 'fs-durable-save',
  title: 'fs: durable save of one new message',
  backend: 'fs',
  plannedTrials: (config) =>
    config.durableSave.historyLengths.length * trialsPerCase(config, CONTENDERS),
  unavailableReason: () => null,
  run,
};

async function run(context: SectionContext): Promise<SectionResult> {
  const { config, workspace, progress } = context;
  const storeDirectory = await workspace.directory('durable-save-keepsake');
  const store = openFsStore(storeDirectory);
  const cases: CaseResult[] = [];
  const cyclesByLength = new Map<number, KeepsakeCycles>();
  try {
    for (const historyLength of config.durableSave.historyLengths) {
      const label = `${historyLength.toLocaleString('en-US')} messages`;
      progress.beginCase(label);
      const baselineSaves = config.durableSave.baselineSaves(historyLength);
      const cycles: KeepsakeCycles = { savesPerTrial: [], capped: 0 };
      cyclesByLength.set(historyLength, cycles);
      const contenders: Contender[] = [
        keepsakeContender(
          store,
          storeDirectory,
          historyLength,
          config.durableSave.keepsakeMaxSaves,
          cycles,
        ),
        fileContender(
          context,
          HAND_WRITTEN_LOOP,
          historyLength,
          baselineSaves,
          saveWithHandWrittenLoop,
        ),
        fileContender(
          context,
          WRITE_FILE_ATOMIC,
          historyLength,
          baselineSaves,
          saveWithWriteFileAtomic,
        ),
        fileContender(
          context,
          WHOLE_FILE_REWRITE,
          historyLength,
          baselineSaves,
          (path, _session, message) => saveWithWholeFileRewrite(path, message),
        ),
      ];
      const measurements = await measureSideBySide(contenders, config.rounds, (event) =>
        progress.trial(event),
      );
      cases.push({ key: String(historyLength), label, x: historyLength, measurements });
      progress.keep(`  ${label}: ${describeMeasurements(THROUGHPUT, measurements)}`);
    }
  } finally {
    await store.close();
    await workspace.remove(storeDirectory);
  }
  return {
    id: durableSaveSection.id,
    title: durableSaveSection.title,
    summary:
      'A session of N messages gets one new message (a 200-character user turn or a ' +
      '1,000-character assistant turn, alternating), saved durably, again and again. ' +
      'Keepsake: `store.save(session, { fsync: true })`. Hand-written loop: the session kept ' +
      'in memory, serialized whole, written to a temp file, fsync, close, rename, fsync of ' +
      'the directory. write-file-atomic: the same in-memory session through ' +
      '`writeFileAtomic(path, json, { fsync: true })`. Whole-file rewrite (what the seed ' +
      'projects do): read the JSON file, parse it, push the message, write it all back ' +
      'durably as the hand-written loop does.',
    tables: [
      {
        id: 'throughput',
        title: 'Durable saves per second by history length',
        metric: THROUGHPUT,
        subject: KEEPSAKE_FS,
        caseHeader: 'history',
        cases,
        chart: {
          file: 'durable-save-throughput.svg',
          title: 'Durable save of one new message: saves/s vs history length',
          xTitle: 'messages already in the session',
        },
      },
    ],
    notes: [
      keepsakeCyclesNote(cyclesByLength, config.durableSave.keepsakeMaxSaves) +
        ' Baselines save ' +
        `${config.durableSave.historyLengths.map((length) => config.durableSave.baselineSaves(length)).join(' / ')} ` +
        'times per trial (every save costs them the same).',
      'History length is the length at the start of a trial; each save adds one message.',
      'Keepsake with default options also keeps the session index (B7) durable on every save; the baselines have no index.',
      'write-file-atomic does not fsync the directory after its rename: it does less than a durable save needs.',
    ],
  };
}

function keepsakeCyclesNote(cyclesByLength: Map<number, KeepsakeCycles>, maxSaves: number): string {
  const lengths = [...cyclesByLength.keys()];
  const median = (values: number[]) =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
  const saves = lengths.map((length) =>
    median(cyclesByLength.get(length)?.savesPerTrial ?? []).toLocaleString('en-US'),
  );
  const capped = lengths.filter((length) => (cyclesByLength.get(length)?.capped ?? 0) > 0);
  return (
    'Keepsake saves on a fresh session until its own compacting full write (the save event ' +
    'says `delta: false`): one whole cycle of appended deltas and the rewrite that ends it, ' +
    'so the compaction is in the figure, amortized as in use. With the default ' +
    '`deltas.compactAfter` (64) and `deltas.compactRatio` (1) that took ' +
    `${saves.join(' / ')} saves at ${lengths.map((length) => length.toLocaleString('en-US')).join(' / ')} messages.` +
    (capped.length === 0
      ? ''
      : ` At ${capped.map((length) => length.toLocaleString('en-US')).join(' / ')} messages trials stopped at ${maxSaves.toLocaleString('en-US')} saves before the rewrite: those figures leave the compaction out.`)
  );
}

/** What Keepsake's trials at one history length did, for the report's notes. */
interface KeepsakeCycles {
  /** Saves each trial made: one compaction cycle, or the cap. */
  readonly savesPerTrial: number[];
  /** Trials the cap stopped before the store's compacting full write. */
  capped: number;
}

/**
 * Saves one new message at a time until the store's own compacting full write (the save
 * event says `delta: false`), so each trial is one whole cycle of deltas plus the rewrite
 * that ends it: the compaction is in the figure, amortized as in use.
 */
function keepsakeContender(
  store: SessionStore,
  directory: string,
  historyLength: number,
  maxSaves: number,
  cycles: KeepsakeCycles,
): Contender {
  let trialNumber = 0;
  return {
    name: KEEPSAKE_FS,
    async trial() {
      const session = await store.create(
        { title: `history ${historyLength}`, messages: plainMessages(historyLength) },
        { fsync: true },
      );
      const fresh = plainMessages(maxSaves, historyLength + trialNumber++ * maxSaves);
      let lastSaveWasFull = false;
      const stopListening = store.on((event) => {
        if (event.type === 'save' && event.sessionId === session.id) {
          lastSaveWasFull = !event.delta;
        }
      });
      await flushPageCache(directory);
      let saves = 0;
      const started = performance.now();
      for (const message of fresh) {
        session.messages.push(message);
        await store.save(session, { fsync: true });
        saves++;
        if (lastSaveWasFull) break;
      }
      const elapsed = performance.now() - started;
      stopListening();
      cycles.savesPerTrial.push(saves);
      if (!lastSaveWasFull) cycles.capped++;
      await store.delete(session.id);
      return perSecond(saves, elapsed);
    },
  };
}

type SaveFunction = typeof saveWithHandWrittenLoop;

function fileContender(
  context: SectionContext,
  name: string,
  historyLength: number,
  saves: number,
  save: SaveFunction,
): Contender {
  return {
    name,
    async trial() {
      const directory = await context.workspace.directory('durable-save-baseline');
      const path = join(directory, 'session.json');
      const session = plainSession('baseline', historyLength);
      await durableReplace(path, JSON.stringify(session));
      await flushPageCache(directory);
      const started = performance.now();
      for (let index = 0; index < saves; index++) {
        await save(path, session, plainMessage(historyLength + index));
      }
      const elapsed = performance.now() - started;
      await context.workspace.remove(directory);
      return perSecond(saves, elapsed);
    },
  };
}
