import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runWorker } from '../../harness/child-process.js';
import { type Contender, mapConcurrently, measureSideBySide } from '../../harness/measure.js';
import type { Metric, SectionResult } from '../../harness/results.js';
import { describeMeasurements, formatBytes } from '../../report/format.js';
import type { MemoryWorkerInput, MemoryWorkerResult } from '../../workers/memory-worker.js';
import { plainMessages, plainSession } from '../../workload/messages.js';
import type { Section, SectionContext } from '../section.js';
import { trialsPerCase } from '../section.js';
import { KEEPSAKE_FS, openFsStore } from './keepsake-fs.js';

export const PLAIN_OBJECTS = 'parsed JSON in a Map';

const BYTES: Metric = { unit: 'bytes', higherIsBetter: false, format: 'bytes' };
const WORKER = new URL('../../workers/memory-worker.js', import.meta.url);

/** C4: what one cached session costs the process. */
export const memorySection: Section = {
  id: 'fs-memory',
  title: 'fs: memory per cached session',
  backend: 'fs',
  plannedTrials: (config) => trialsPerCase(config, 2),
  unavailableReason: () => null,
  run,
};

async function run(context: SectionContext): Promise<SectionResult> {
  const { config, progress, workspace } = context;
  const { sessions, messagesPerSession } = config.memory;
  const label = `${sessions.toLocaleString('en-US')} × ${messagesPerSession} messages`;
  progress.beginCase(label);
  progress.status(`writing ${sessions} sessions`);

  const keepsakeDirectory = await workspace.directory('memory-keepsake');
  const store = openFsStore(keepsakeDirectory);
  await mapConcurrently(Array.from({ length: sessions }), 8, (_, index) =>
    store.create({ title: `session ${index}`, messages: plainMessages(messagesPerSession) }),
  );
  await store.close();
  const plainDirectory = await workspace.directory('memory-plain');
  let jsonBytes = 0;
  await mapConcurrently(Array.from({ length: sessions }), 8, async (_, index) => {
    const json = JSON.stringify(plainSession(`session-${index}`, messagesPerSession));
    jsonBytes += Buffer.byteLength(json);
    await writeFile(join(plainDirectory, `session-${index}.json`), json);
  });

  const contender = (name: string, input: MemoryWorkerInput): Contender => ({
    name,
    async trial() {
      const result = await runWorker<MemoryWorkerResult>(WORKER, input, {
        nodeFlags: ['--expose-gc'],
      });
      if (result.loaded !== sessions - 1) {
        throw new Error(`${name} loaded ${result.loaded} of ${sessions - 1} sessions`);
      }
      return result.bytesPerSession;
    },
  });
  let measurements: Awaited<ReturnType<typeof measureSideBySide>>;
  try {
    measurements = await measureSideBySide(
      [
        contender(KEEPSAKE_FS, { mode: 'keepsake', directory: keepsakeDirectory, sessions }),
        contender(PLAIN_OBJECTS, { mode: 'plain-objects', directory: plainDirectory, sessions }),
      ],
      config.rounds,
      (event) => progress.trial(event),
    );
  } finally {
    await workspace.remove(keepsakeDirectory);
    await workspace.remove(plainDirectory);
  }
  progress.keep(`  ${label}: ${describeMeasurements(BYTES, measurements)}`);
  return {
    id: memorySection.id,
    title: memorySection.title,
    summary:
      `${sessions.toLocaleString('en-US')} sessions of ${messagesPerSession} messages are loaded ` +
      'into memory in a fresh process; the heap (and off-heap) memory retained after garbage ' +
      'collection, divided by the number of sessions. Keepsake: `store.load(id)` into the ' +
      'store cache. Baseline: the same documents `JSON.parse`d into a `Map`, the least an ' +
      'application that caches sessions holds.',
    tables: [
      {
        id: 'bytes-per-session',
        title: 'Memory retained per cached session',
        metric: BYTES,
        subject: KEEPSAKE_FS,
        caseHeader: 'cached sessions',
        cases: [{ key: String(sessions), label, x: sessions, measurements }],
      },
    ],
    notes: [
      `One session is ${formatBytes(jsonBytes / sessions)} of JSON on disk.`,
      'A ratio of 1.30× would mean 30% more memory per session than the parsed JSON alone.',
    ],
  };
}
