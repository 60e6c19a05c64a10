import { seededRandom } from '@keepsake/conformance';
import type { Session, SessionStore } from '@keepsake/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type S3Fixture, startFixture, userMessage } from './helpers/s3-fixture.js';

/**
 * B7 on S3, where the index entry rides in the document's metadata and listings write the
 * entries: two writers save their own sessions (indexed, `skipIndex`, and summaries too long
 * for metadata) while two other processes' stores list at the same time, each listing
 * writing and removing entries the other may be reading. Every listing, during the saves,
 * shows every session indexed before the round, with a title of one of its indexed saves
 * and never one written with `skipIndex`; after the round, a fresh store lists exactly the
 * last indexed title of each session.
 */
const ROUNDS = 12;
const SESSIONS_PER_WRITER = 6;
const SEED = Number(process.env.KEEPSAKE_TEST_SEED ?? Date.now() % 2 ** 31);

let fixture: S3Fixture;
beforeAll(async () => {
  fixture = await startFixture();
});
afterAll(async () => {
  await fixture?.dispose();
});

interface Modelled {
  readonly session: Session;
  /** Every title an indexed save of this session wrote, the last one last. */
  readonly indexed: string[];
}

describe('the index under concurrent saves and listings (B7)', () => {
  it(`every listing shows each indexed session with an indexed title (seed ${SEED})`, async () => {
    const next = seededRandom(SEED);
    const options = fixture.options('index-race');
    const writers = [openStore(options), openStore(options)];
    const listers = [openStore(options), openStore(options)];
    const model = new Map<string, Modelled>();
    const owned: Array<Modelled[]> = [[], []];
    for (const [index, writer] of writers.entries()) {
      for (let count = 0; count < SESSIONS_PER_WRITER; count++) {
        const session = await writer.store.create({ title: 'created' }, { fsync: true });
        const modelled = { session, indexed: ['created'] };
        model.set(session.id, modelled);
        owned[index]!.push(modelled);
      }
    }
    const check = (listed: Array<{ id: string; title: string }>, label: string) => {
      const ids = listed.map((entry) => entry.id);
      for (const id of model.keys()) expect(ids, `${label}: ${id} listed`).toContain(id);
      for (const entry of listed) {
        // A long title may show shortened (as its document's metadata carries it) while the
        // listing runs between that document's PUT and the PUT of its whole entry.
        const indexed = model.get(entry.id)?.indexed ?? [];
        const shown = indexed.some(
          (title) =>
            title === entry.title ||
            (title.startsWith('long') && entry.title.length > 0 && title.startsWith(entry.title)),
        );
        expect(shown, `${label}: title of ${entry.id}: ${entry.title.slice(0, 40)}`).toBe(true);
      }
    };
    const saveSome = async (store: SessionStore, sessions: Modelled[], round: number) => {
      for (const modelled of sessions) {
        if (next() < 0.3) continue;
        const { session } = modelled;
        const choice = next();
        session.messages.push(userMessage(`r${round}-${session.messages.length}`));
        if (choice < 0.4) {
          session.title = `skipped r${round}`;
          await store.save(session, { fsync: true, skipIndex: true });
        } else {
          // Some summaries too long for metadata: their entry is a second PUT.
          session.title = choice > 0.9 ? `long r${round} ${'💡'.repeat(600)}` : `indexed r${round}`;
          // Known before the save resolves: a listing meanwhile may show either title.
          modelled.indexed.push(session.title);
          await store.save(session, { fsync: true });
        }
      }
    };
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const listings = listers.map(async (lister, index) => {
          const listed = (await lister.store.list({ limit: 1000 })).sessions;
          check(listed, `round ${round}, lister ${index}`);
        });
        await Promise.all([
          ...writers.map((writer, index) => saveSome(writer.store, owned[index]!, round)),
          ...listings,
        ]);
        const fresh = openStore(options);
        const listed = (await fresh.store.list({ limit: 1000 })).sessions;
        await fresh.close();
        expect(
          new Map(listed.map((entry) => [entry.id, entry.title])),
          `round ${round}: the last indexed title of each session`,
        ).toEqual(new Map([...model].map(([id, modelled]) => [id, modelled.indexed.at(-1)])));
      }
    } finally {
      for (const opened of [...writers, ...listers]) await opened.close();
    }
  });
});
