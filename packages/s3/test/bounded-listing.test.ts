import { type Clock, type SessionSummary, systemClock } from '@keepsake/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inBatches } from '../src/in-batches.js';
import { CLOCK_ALLOWANCE_MS } from '../src/listing-bounds.js';
import { openStore, type S3Fixture, startFixture } from './helpers/s3-fixture.js';

/**
 * B7 on S3 when the listing does not read every changed document: a cold listing (no
 * entry written since the saves) checks the documents newest LastModified first and stops
 * once nothing left can belong on the page (listing-bounds.ts). Each namespace holds OLD
 * sessions, saved more than CLOCK_ALLOWANCE_MS before NEW ones, among them one saved by a
 * writer whose clock is an hour ahead (its save writes its entry at once, so the listing
 * knows it is the newest without reading its document) and groups with equal updatedAt
 * (ties: id ascending). The expected order is computed from what each save returned.
 */
const OLD = 100;
const NEW = 15;
const TIE = 5;

let fixture: S3Fixture;
beforeAll(async () => {
  fixture = await startFixture();
});
afterAll(async () => {
  await fixture?.dispose();
});

/** A clock that always says `at`. */
function frozenClock(at: number): Clock {
  return {
    now: () => at,
    setTimer: systemClock.setTimer,
    clearTimer: systemClock.clearTimer,
  };
}

type Saved = Pick<SessionSummary, 'id' | 'updatedAt'>;

/** Creates `count` sessions through one store (each a durable, indexed save). */
async function createSessions(
  label: string,
  options: ReturnType<S3Fixture['options']>,
  count: number,
  clock?: Clock,
): Promise<Saved[]> {
  const writer = openStore(options, clock === undefined ? {} : { clock });
  try {
    return await inBatches(
      Array.from({ length: count }, (_, index) => `${label}-${String(index).padStart(3, '0')}`),
      16,
      async (id) => {
        const session = await writer.store.create({ id, title: id }, { fsync: true });
        return { id: session.id, updatedAt: session.updatedAt };
      },
    );
  } finally {
    await writer.close();
  }
}

/** B7's order: updatedAt descending, then id ascending. */
function newestFirst(saved: readonly Saved[]): string[] {
  return [...saved]
    .sort(
      (left, right) =>
        right.updatedAt - left.updatedAt || (left.id < right.id ? -1 : left.id > right.id ? 1 : 0),
    )
    .map((entry) => entry.id);
}

interface Namespace {
  readonly options: ReturnType<S3Fixture['options']>;
  /** Every session, newest first (once the NEW ones are saved). */
  expected: string[];
  readonly old: Saved[];
}

/** OLD sessions: one from a writer an hour ahead, the rest plain, TIE of them with one updatedAt. */
async function saveOld(label: string): Promise<Namespace> {
  const options = fixture.options(label);
  const tiedAt = Date.now() - 60_000;
  // The session ahead first: the oldest LastModified, the last a listing would read.
  const old = [
    ...(await createSessions('ahead', options, 1, frozenClock(Date.now() + 3_600_000))),
    ...(await createSessions('old', options, OLD - TIE - 1)),
    ...(await createSessions('old-tie', options, TIE, frozenClock(tiedAt))),
  ];
  return { options, old, expected: [] };
}

/** NEW sessions, TIE of them with one updatedAt; sets what a listing must show. */
async function saveNew(namespace: Namespace): Promise<void> {
  const tiedAt = Date.now();
  const recent = [
    ...(await createSessions('new', namespace.options, NEW - TIE)),
    ...(await createSessions('new-tie', namespace.options, TIE, frozenClock(tiedAt))),
  ];
  namespace.expected = newestFirst([...namespace.old, ...recent]);
}

describe('a listing that checks only the documents its page needs (B7, issue 41 item 7)', () => {
  let cold: Namespace;
  let paged: Namespace;
  beforeAll(async () => {
    [cold, paged] = await Promise.all([saveOld('bounded-first'), saveOld('bounded-pages')]);
    // The allowance, and a second for the whole seconds of LastModified, between the last
    // OLD save and the first NEW one: a listing may then leave the OLD documents unread.
    await new Promise((resolve) => setTimeout(resolve, CLOCK_ALLOWANCE_MS + 1_500));
    await Promise.all([saveNew(cold), saveNew(paged)]);
  }, 120_000);

  it('B7: a writer whose clock is ahead of the server writes its entry with its save', async () => {
    const writer = openStore(fixture.options('bounded-ahead'), {
      clock: frozenClock(Date.now() + 3_600_000),
    });
    try {
      const from = fixture.faults.seen.length;
      await writer.store.create({ id: 'ahead', title: 'ahead' }, { fsync: true });
      const puts = fixture.faults.seen
        .slice(from)
        .filter((request) => request.command === 'PutObjectCommand')
        .map((request) => request.key);
      expect(puts.filter((key) => key.includes('/doc/sessions/'))).toHaveLength(1);
      expect(puts.filter((key) => key.includes('/index/ahead/'))).toHaveLength(1);
    } finally {
      await writer.close();
    }
  });

  it('B7: a cold first page is the newest sessions, and leaves older changed documents unread', async () => {
    const lister = openStore(cold.options);
    try {
      await lister.adapter.open();
      const from = fixture.faults.seen.length;
      const page = await lister.store.list({ limit: 10 });
      expect(page.sessions.map((entry) => entry.id)).toEqual(cold.expected.slice(0, 10));
      expect(page.sessions[0]?.id).toBe('ahead-000');
      expect(page.nextCursor).not.toBeNull();
      const sent = fixture.faults.seen.slice(from);
      const documentHeads = sent.filter(
        (request) =>
          request.command === 'HeadObjectCommand' && request.key.includes('/doc/sessions/'),
      ).length;
      // Core HEADs each listed entry (10); the adapter checked every NEW document and left
      // most OLD ones (all but the one whose entry its writer wrote) unread.
      expect(documentHeads).toBeGreaterThanOrEqual(10 + NEW);
      expect(documentHeads).toBeLessThan(10 + NEW + (OLD - 1) / 2);
    } finally {
      await lister.close();
    }
  });

  it('B7: cold pages, each from another process, list every session once, newest first, ties by id', async () => {
    const listed: string[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 100; pages++) {
      // A new store for each page: what a cursor handed to another server instance meets.
      const lister = openStore(paged.options);
      try {
        const page = await lister.store.list({ limit: 7, cursor });
        listed.push(...page.sessions.map((entry) => entry.id));
        cursor = page.nextCursor;
      } finally {
        await lister.close();
      }
      if (cursor === null) break;
    }
    expect(cursor).toBeNull();
    expect(listed).toEqual(paged.expected);
    expect(listed).toHaveLength(OLD + NEW);
  });
});
