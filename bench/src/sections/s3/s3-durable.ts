import { spawnSync } from 'node:child_process';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createMessage, createSessionStore } from '@keepsake/core';
import { s3Adapter } from '@keepsake/s3';
import {
  containerEngineAvailable,
  type S3Target,
  startS3Target,
  testClientConfig,
} from '@keepsake/s3/testing';
import { type Contender, measureSideBySide, perSecond, timed } from '../../harness/measure.js';
import type { CaseResult, Metric, SectionResult } from '../../harness/results.js';
import { describeMeasurements } from '../../report/format.js';
import type { Section, SectionContext } from '../section.js';
import { trialsPerCase } from '../section.js';
import { coldListingTable } from './cold-listing.js';
import { RequestCounter } from './request-counter.js';

/** The names the S3 tables use. */
export const KEEPSAKE_S3 = 'Keepsake (s3)';
export const KEEPSAKE_S3_SKIP_INDEX = 'Keepsake (s3), skipIndex';
export const RAW_PUT_LOOP = 'raw PutObject loop';
export const FLOOR = 'the floor (1 request; a listing: LIST + GET + HEAD per entry)';

const SESSIONS = 50;
const MESSAGE_BYTES = 900;
const SAVES: Metric = { unit: 'saves/s', higherIsBetter: true, format: 'rate' };
const REQUESTS: Metric = { unit: 'requests', higherIsBetter: false, format: 'rate' };

/**
 * Keepsake on S3 against the endpoint's own floor, on the same RADOS Gateway in the same
 * rounds: durable saves from 50 concurrent sessions (every save a full conditional PUT of a
 * growing document) against a raw PutObject loop writing the same documents, one PUT each;
 * and the requests each operation costs, counted by SDK middleware.
 */
export const s3DurableSection: Section = {
  id: 's3-durable',
  title: 's3: durable saves against a raw PutObject loop, and requests per operation',
  backend: 's3',
  plannedTrials: (config) => trialsPerCase(config, 3),
  unavailableReason: () => unavailable,
  run,
};

// Decided once, when the section is loaded: an endpoint named by the environment, or Ceph.
const unavailable =
  (process.env.KEEPSAKE_TEST_S3_ENDPOINT ?? '').trim() !== '' ||
  ['ceph-mon', 'ceph-osd', 'radosgw', 'ceph'].every(
    (binary) => spawnSync(binary, ['--version'], { stdio: 'ignore' }).status === 0,
  )
    ? null
    : 'no S3 endpoint: set KEEPSAKE_TEST_S3_ENDPOINT (and its credentials), or install Ceph (apt-get install ceph-mon ceph-osd radosgw ceph-common)';

function savesPerSession(context: SectionContext): number {
  return context.config.mode === 'quick' ? 10 : 40;
}

async function run(context: SectionContext): Promise<SectionResult> {
  const { config, progress } = context;
  const target = await startS3Target({
    env: process.env,
    containerEngine: containerEngineAvailable(),
  });
  const client = new S3Client(testClientConfig(target));
  const counter = new RequestCounter(client);
  const adapterOptions = (prefix: string) => ({
    client,
    bucket: target.bucket,
    prefix,
    compatibility: target.compatibility,
  });
  let trialNumber = 0;
  try {
    const saves = savesPerSession(context);
    progress.beginCase(`${SESSIONS} sessions`);
    const saveCase = await measureSideBySide(
      [
        {
          name: KEEPSAKE_S3,
          trial: () => durableSaves(adapterOptions(`bench/t${trialNumber++}`), saves, false),
        },
        {
          name: KEEPSAKE_S3_SKIP_INDEX,
          trial: () => durableSaves(adapterOptions(`bench/t${trialNumber++}`), saves, true),
        },
        {
          name: RAW_PUT_LOOP,
          trial: () => rawPutLoop(client, target, `bench/raw${trialNumber++}`, saves),
        },
      ] satisfies Contender[],
      config.rounds,
      (event) => progress.trial(event),
    );
    progress.keep(`  ${SESSIONS} sessions: ${describeMeasurements(SAVES, saveCase)}`);
    progress.beginCase('requests per operation');
    const costs = await requestCosts(counter, adapterOptions(`bench/costs${trialNumber++}`));
    progress.keep(`  requests: ${costs.map((cost) => `${cost.label} ${cost.total}`).join('; ')}`);
    const coldListing = await coldListingTable(
      context,
      client,
      adapterOptions,
      `bench/cold${trialNumber++}`,
    );
    return result(context, saveCase, costs, coldListing);
  } finally {
    client.destroy();
    await target.dispose();
  }
}

/**
 * 50 sessions, created before the clock starts; each appends `saves` messages of about 900
 * characters, one durable save each (a full PUT of the whole document: S3 cannot append),
 * all sessions at once.
 */
async function durableSaves(
  options: Parameters<typeof s3Adapter>[0],
  saves: number,
  skipIndex: boolean,
): Promise<number> {
  const adapter = s3Adapter(options);
  const store = createSessionStore({ adapter });
  try {
    const sessions = await Promise.all(
      Array.from({ length: SESSIONS }, (_, index) =>
        store.create({ id: `s${index}` }, { fsync: true }),
      ),
    );
    const text = 'm'.repeat(MESSAGE_BYTES);
    const elapsed = await timed(() =>
      Promise.all(
        sessions.map(async (session) => {
          for (let index = 0; index < saves; index++) {
            session.messages.push(createMessage({ role: 'user', content: text }));
            await store.save(session, { fsync: true, skipIndex });
          }
        }),
      ),
    );
    return perSecond(SESSIONS * saves, elapsed);
  } finally {
    await store.close().catch(() => undefined);
  }
}

/**
 * The floor: 50 loops at once, each PUTting a document that grows by one 900-character
 * message per PUT, as Keepsake's do (unconditional, no index, no revision check).
 */
async function rawPutLoop(
  client: S3Client,
  target: S3Target,
  prefix: string,
  saves: number,
): Promise<number> {
  const message = JSON.stringify({ role: 'user', content: 'm'.repeat(MESSAGE_BYTES) });
  const elapsed = await timed(() =>
    Promise.all(
      Array.from({ length: SESSIONS }, async (_, session) => {
        const messages: string[] = [];
        for (let index = 0; index < saves; index++) {
          messages.push(message);
          await client.send(
            new PutObjectCommand({
              Bucket: target.bucket,
              Key: `${prefix}/s${session}`,
              Body: `{"messages":[${messages.join(',')}]}`,
            }),
          );
        }
      }),
    ),
  );
  return perSecond(SESSIONS * saves, elapsed);
}

interface RequestCost {
  readonly key: string;
  readonly label: string;
  readonly total: number;
  readonly byCommand: string;
}

/** Counts the requests of each operation on a warm store (ETags and journal tails known). */
async function requestCosts(
  counter: RequestCounter,
  options: Parameters<typeof s3Adapter>[0],
): Promise<RequestCost[]> {
  const windowMs = 100;
  const adapter = s3Adapter({ ...options, journal: { batchWindowMs: windowMs } });
  const store = createSessionStore({ adapter, journal: { durability: 'terminal' } });
  const costs: RequestCost[] = [];
  const measure = async (key: string, label: string, action: () => Promise<unknown>) => {
    costs.push({ key, label, ...(await counter.during(action)) });
  };
  try {
    const session = await store.create({ id: 'costs' }, { fsync: true });
    session.messages.push(createMessage({ role: 'user', content: 'warm up' }));
    await store.save(session, { fsync: true });
    await measure('save-skip-index', 'save, skipIndex', async () => {
      session.messages.push(createMessage({ role: 'user', content: 'one' }));
      await store.save(session, { fsync: true, skipIndex: true });
    });
    await measure('save', 'save', async () => {
      session.messages.push(createMessage({ role: 'user', content: 'two' }));
      await store.save(session, { fsync: true });
    });
    const runHandle = await store.beginRun(session.id, {
      userMessage: createMessage({ role: 'user', content: 'go' }),
    });
    await runHandle.append({ type: 'token', data: { text: 'first' } });
    await adapter.sync();
    // Tokens of the `terminal` policy (durability `none`) within one batch window.
    await measure('window', `${windowMs} ms batch window (20 tokens)`, async () => {
      for (let index = 0; index < 20; index++) {
        await runHandle.append({ type: 'token', data: { text: `t${index} ` } });
      }
      await adapter.sync();
    });
    await runHandle.complete();
    // A new store on the same prefix, its adapter opened first (the probe and the index
    // check are paid once per process, not per load).
    const coldAdapter = s3Adapter(options);
    await coldAdapter.open();
    const cold = createSessionStore({ adapter: coldAdapter });
    await measure('load', 'load (cold store, no pending turn)', () => cold.load(session.id));
    // The session was saved since the last listing: the listing HEADs its document once and
    // writes the entry of that version; the next listing reads that entry.
    await measure('list-changed', 'list (first page, 1 session saved since the last listing)', () =>
      cold.list(),
    );
    await measure('list', 'list (first page, 1 session, nothing saved since)', () => cold.list());
    await cold.close();
  } finally {
    await store.close().catch(() => undefined);
  }
  return costs;
}

const FLOORS: Record<string, number> = {
  'save-skip-index': 1,
  save: 1,
  window: 1,
  load: 1,
  // One LIST, the GET of the entry, and core's HEAD of the document (B7).
  'list-changed': 3,
  list: 3,
};

function result(
  context: SectionContext,
  saveCase: CaseResult['measurements'],
  costs: readonly RequestCost[],
  coldListing: Awaited<ReturnType<typeof coldListingTable>>,
): SectionResult {
  const requestCases: CaseResult[] = costs.map((cost, index) => ({
    key: cost.key,
    label: cost.label,
    x: index + 1,
    measurements: [
      { contender: KEEPSAKE_S3, samples: [cost.total] },
      { contender: FLOOR, samples: [FLOORS[cost.key] ?? 1] },
    ],
  }));
  return {
    id: s3DurableSection.id,
    title: s3DurableSection.title,
    summary:
      'One S3 endpoint for the section: a single-node Ceph 16.2 cluster with a RADOS Gateway ' +
      '(memstore OSD) started on loopback, or the endpoint KEEPSAKE_TEST_S3_ENDPOINT names. ' +
      `Durable saves: 50 sessions at once, each appending ${savesPerSession(context)} messages of ` +
      `${MESSAGE_BYTES} characters with \`store.save(session, { fsync: true })\`: a conditional ` +
      'PUT of the whole document (`If-Match`), its index entry in the metadata; ' +
      'against 50 raw PutObject loops writing documents that grow the same way, one unconditional PUT ' +
      'each. Request counts: each operation on a warm store, counted by SDK middleware.',
    tables: [
      {
        id: 'saves',
        title: 'Durable saves per second, 50 concurrent sessions',
        metric: SAVES,
        subject: KEEPSAKE_S3,
        caseHeader: 'concurrency',
        cases: [
          {
            key: String(SESSIONS),
            label: `${SESSIONS} sessions`,
            x: SESSIONS,
            measurements: saveCase,
          },
        ],
      },
      {
        id: 'requests',
        title: 'Requests per operation',
        metric: REQUESTS,
        subject: KEEPSAKE_S3,
        caseHeader: 'operation',
        cases: requestCases,
      },
      coldListing.table,
    ],
    notes: [
      ...costs.map((cost) => `${cost.label}: ${cost.byCommand}.`),
      "A save whose ETag the adapter knows (it read or wrote the document last) is one PUT, indexed or not: the summary rides in the document's metadata. A load is one GET, plus the journal reads of a pending turn it repairs.",
      'A listing LISTs the index entries and the session documents; a document saved since the last listing costs one HEAD and the PUT of its entry, once; the others are read from their entries (one GET each on the page). Core adds one HEAD per listed entry (B7).',
      'Journal appends of durability `none` (the `terminal` policy) inside one batch window are one PUT per run; durable appends are one PUT each, with a HEAD of the previous segment beside it (B8).',
      "The raw loop's PUTs carry no condition, no metadata and no index: it is the endpoint's floor for the same bytes.",
      ...coldListing.notes,
    ],
  };
}
