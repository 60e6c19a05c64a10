import { join } from 'node:path';
import type { Session } from '@keepsake/core';
import { durableReplace } from '../../baselines/durable-replace.js';
import {
  type Contender,
  mapConcurrently,
  measureSideBySide,
  timed,
} from '../../harness/measure.js';
import type { Metric, SectionResult } from '../../harness/results.js';
import { flushPageCache } from '../../harness/workspace.js';
import { describeMeasurements } from '../../report/format.js';
import {
  type PlainSessionDocument,
  plainMessage,
  plainMessages,
  plainSession,
} from '../../workload/messages.js';
import type { Section, SectionContext } from '../section.js';
import { trialsPerCase } from '../section.js';
import { KEEPSAKE_FS, openFsStore } from './keepsake-fs.js';

export const RAW_ATOMIC_REPLACES = 'raw concurrent atomic replaces';

const DURATION: Metric = { unit: 'ms', higherIsBetter: false, format: 'milliseconds' };

/** C1: the shutdown flush, every cached session made durable, against doing it by hand. */
export const flushAllSection: Section = {
  id: 'fs-flush-all',
  title: 'fs: flushAll of cached sessions',
  backend: 'fs',
  plannedTrials: (config) => trialsPerCase(config, 2),
  unavailableReason: () => null,
  run,
};

async function run(context: SectionContext): Promise<SectionResult> {
  const { config, progress } = context;
  const { sessions, messagesPerSession, concurrency } = config.flushAll;
  const label = `${sessions.toLocaleString('en-US')} sessions`;
  progress.beginCase(label);
  const keepsake = await keepsakeFlush(context);
  const raw = await rawFlush(context);
  let measurements: Awaited<ReturnType<typeof measureSideBySide>>;
  try {
    measurements = await measureSideBySide(
      [keepsake.contender, raw.contender],
      config.rounds,
      (event) => progress.trial(event),
    );
  } finally {
    await keepsake.close();
    await raw.close();
  }
  progress.keep(`  ${label}: ${describeMeasurements(DURATION, measurements)}`);
  return {
    id: flushAllSection.id,
    title: flushAllSection.title,
    summary:
      `${sessions.toLocaleString('en-US')} sessions of ${messagesPerSession} messages are cached, ` +
      'each with one new message not yet saved durably (as at shutdown after ordinary saves). ' +
      'Keepsake: `store.flushAll()`. Raw: the same documents serialized and replaced durably ' +
      `(temp, fsync, rename, fsync of the directory), ${concurrency} at a time, the store's ` +
      'default `flushConcurrency`.',
    tables: [
      {
        id: 'duration',
        title: 'Time to make every cached session durable',
        metric: DURATION,
        subject: KEEPSAKE_FS,
        caseHeader: 'cached sessions',
        cases: [{ key: String(sessions), label, x: sessions, measurements }],
      },
    ],
    notes: [
      "Keepsake's flush also records each session in its index (B7); the raw files have no index.",
    ],
  };
}

interface Flush {
  readonly contender: Contender;
  close(): Promise<void>;
}

async function keepsakeFlush(context: SectionContext): Promise<Flush> {
  const { sessions, messagesPerSession } = context.config.flushAll;
  const directory = await context.workspace.directory('flush-all-keepsake');
  const store = openFsStore(directory, { cache: { maxSessions: sessions * 2 } });
  context.progress.status(`creating ${sessions} Keepsake sessions`);
  const live: Session[] = [];
  await mapConcurrently(Array.from({ length: sessions }), 8, async (_, index) => {
    live[index] = await store.create({
      title: `session ${index}`,
      messages: plainMessages(messagesPerSession),
    });
  });
  let round = 0;
  return {
    contender: {
      name: KEEPSAKE_FS,
      async trial() {
        const message = plainMessage(messagesPerSession + round++);
        for (const session of live) session.messages.push({ ...message });
        await flushPageCache(directory);
        let failed = 0;
        const elapsed = await timed(async () => {
          failed = (await store.flushAll()).failed.length;
        });
        if (failed > 0) throw new Error(`flushAll reported ${failed} failed sessions`);
        return elapsed;
      },
    },
    async close() {
      await store.close();
      await context.workspace.remove(directory);
    },
  };
}

async function rawFlush(context: SectionContext): Promise<Flush> {
  const { sessions, messagesPerSession, concurrency } = context.config.flushAll;
  const directory = await context.workspace.directory('flush-all-raw');
  const documents: Array<{ path: string; session: PlainSessionDocument }> = [];
  for (let index = 0; index < sessions; index++) {
    const session = plainSession(`session-${index}`, messagesPerSession);
    documents.push({ path: join(directory, `${session.id}.json`), session });
  }
  await mapConcurrently(documents, 8, ({ path, session }) =>
    durableReplace(path, JSON.stringify(session)),
  );
  let round = 0;
  return {
    contender: {
      name: RAW_ATOMIC_REPLACES,
      async trial() {
        const message = plainMessage(messagesPerSession + round++);
        for (const { session } of documents) session.messages.push({ ...message });
        await flushPageCache(directory);
        return timed(() =>
          mapConcurrently(documents, concurrency, ({ path, session }) =>
            durableReplace(path, JSON.stringify(session)),
          ),
        );
      },
    },
    async close() {
      await context.workspace.remove(directory);
    },
  };
}
