import {
  DeleteObjectsCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createSessionStore } from '@keepsake/core';
import { s3Adapter } from '@keepsake/s3';
import {
  type Contender,
  mapConcurrently,
  measureSideBySide,
  timed,
} from '../../harness/measure.js';
import type { CaseResult, Metric, TableResult } from '../../harness/results.js';
import type { SectionContext } from '../section.js';

/** The names the cold listing table uses. */
export const KEEPSAKE_S3_COLD_LIST = 'Keepsake (s3), cold list()';
export const LISTING_FLOOR = 'the floor (LIST + a HEAD per listed session)';

const SESSIONS = 1_000;
const PAGE = 50;
/**
 * Longer than the adapter's clock allowance (5 s, see the s3 README, "Listing (B7)") and a
 * second for LastModified in whole seconds: the older sessions of the `spread` case are
 * then older than any summary of the newest page can be.
 */
const APART_MS = 6_500;
const DURATION: Metric = { unit: 'ms', higherIsBetter: false, format: 'milliseconds' };

type AdapterOptions = Parameters<typeof s3Adapter>[0];

interface Namespace {
  readonly key: string;
  readonly label: string;
  readonly options: AdapterOptions;
}

/**
 * issue 41 item 7: the first page (50) of `list()` on a cold store (a new process, no index
 * entry written since the documents were saved: every document changed since the last
 * listing), out of 1,000 sessions. Two namespaces: `spread`, 950 sessions saved more than
 * the clock allowance before the 50 newest (a server starting after a day of chats); and
 * `recent`, 1,000 sessions saved within a few seconds (the worst case: any of them may be
 * newer than the page, so every document is read). Before each trial the index entries are
 * removed (its marker kept), so each trial is cold again. The floor: one LIST of the
 * documents and a HEAD of each of the 50 it shows, 16 at a time (what a listing that knew
 * the newest 50 without asking would still pay: core's B7 check HEADs each listed entry).
 */
export async function coldListingTable(
  context: SectionContext,
  client: S3Client,
  adapterOptions: (prefix: string) => AdapterOptions,
  prefix: string,
): Promise<{ table: TableResult; notes: string[] }> {
  const { config, progress } = context;
  const spread: Namespace = {
    key: 'spread',
    label: `${SESSIONS - PAGE} older + ${PAGE} recent`,
    options: adapterOptions(`${prefix}/spread`),
  };
  const recent: Namespace = {
    key: 'recent',
    label: `${SESSIONS} recent`,
    options: adapterOptions(`${prefix}/recent`),
  };
  progress.beginCase(`cold list(): creating ${SESSIONS} sessions twice`);
  await Promise.all([
    createSessions(recent.options, 0, SESSIONS),
    (async () => {
      await createSessions(spread.options, 0, SESSIONS - PAGE);
      await new Promise((resolve) => setTimeout(resolve, APART_MS));
      await createSessions(spread.options, SESSIONS - PAGE, SESSIONS);
    })(),
  ]);
  const cases: CaseResult[] = [];
  for (const [index, namespace] of [spread, recent].entries()) {
    progress.beginCase(`cold list(), ${namespace.label}`);
    const measurements = await measureSideBySide(
      [
        {
          name: KEEPSAKE_S3_COLD_LIST,
          trial: () => coldFirstPage(client, namespace.options),
        },
        {
          name: LISTING_FLOOR,
          trial: () => listingFloor(client, namespace.options),
        },
      ] satisfies Contender[],
      config.rounds,
      (event) => progress.trial(event),
    );
    const median = (samples: readonly number[]) =>
      [...samples].sort((left, right) => left - right)[Math.floor(samples.length / 2)] ?? 0;
    progress.keep(
      `  cold first page, ${namespace.label}: ${measurements
        .map(
          (measurement) => `${measurement.contender} ${median(measurement.samples).toFixed(0)} ms`,
        )
        .join('; ')}`,
    );
    cases.push({ key: namespace.key, label: namespace.label, x: index + 1, measurements });
  }
  return {
    table: {
      id: 'cold-list',
      title: `Cold first page of list() (${PAGE} of ${SESSIONS} sessions), ms`,
      metric: DURATION,
      subject: KEEPSAKE_S3_COLD_LIST,
      caseHeader: 'sessions saved since the last listing',
      cases,
    },
    notes: [
      `Cold list(): a new store whose adapter is opened (probe paid) before the clock starts; every index entry removed before each trial, so each of the ${SESSIONS} documents was saved since the last listing. The listing reads changed documents newest LastModified first, 32 at a time (a HEAD, then the PUT of the entry it learned), and stops once no document left can carry a summary newer than the page's last (summaries are never more than 5 s ahead of their document's LastModified).`,
      `"${spread.label}": the older ${SESSIONS - PAGE} were saved ${APART_MS / 1000} s before the newest ${PAGE}, so the page is settled after the first rounds. "${recent.label}": all saved within seconds, so every document is read before the first page returns (the worst case).`,
    ],
  };
}

/** Creates sessions `s<from>`..`s<to - 1>`, 32 at a time, each a durable indexed save. */
async function createSessions(options: AdapterOptions, from: number, to: number): Promise<void> {
  const adapter = s3Adapter(options);
  const store = createSessionStore({ adapter });
  try {
    const ids = Array.from({ length: to - from }, (_, index) => `s${from + index}`);
    await mapConcurrently(ids, 32, (id) => store.create({ id }, { fsync: true }));
  } finally {
    await store.close().catch(() => undefined);
    await adapter.close().catch(() => undefined);
  }
}

async function coldFirstPage(client: S3Client, options: AdapterOptions): Promise<number> {
  await removeIndexEntries(client, options);
  const adapter = s3Adapter(options);
  await adapter.open();
  const store = createSessionStore({ adapter });
  try {
    let listed = 0;
    const elapsed = await timed(async () => {
      listed = (await store.list({ limit: PAGE })).sessions.length;
    });
    if (listed !== PAGE) throw new Error(`cold list(): ${listed} sessions, not ${PAGE}`);
    return elapsed;
  } finally {
    await store.close().catch(() => undefined);
    await adapter.close().catch(() => undefined);
  }
}

/** One LIST of the session documents, then a HEAD of the first 50, 16 at a time. */
async function listingFloor(client: S3Client, options: AdapterOptions): Promise<number> {
  return timed(async () => {
    const keys = await listKeys(client, options, 'doc/sessions/');
    await mapConcurrently(keys.slice(0, PAGE), 16, (key) =>
      client.send(new HeadObjectCommand({ Bucket: options.bucket, Key: key })),
    );
  });
}

/** Every index entry of the namespace removed, its marker kept: the next listing is cold. */
async function removeIndexEntries(client: S3Client, options: AdapterOptions): Promise<void> {
  const entries = (await listKeys(client, options, 'index/')).filter(
    (key) => !key.endsWith('/index/.present'),
  );
  for (let start = 0; start < entries.length; start += 1000) {
    await client.send(
      new DeleteObjectsCommand({
        Bucket: options.bucket,
        Delete: {
          Objects: entries.slice(start, start + 1000).map((Key) => ({ Key })),
          Quiet: true,
        },
      }),
    );
  }
}

async function listKeys(
  client: S3Client,
  options: AdapterOptions,
  folder: string,
): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({
        Bucket: options.bucket,
        Prefix: `${options.prefix}/${folder}`,
        ContinuationToken: token,
      }),
    );
    for (const object of page.Contents ?? []) if (object.Key !== undefined) keys.push(object.Key);
    token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
  return keys;
}
