/**
 * A2: a quarantined document keeps its bytes intact. Checked through the optional
 * `readQuarantined` primitive; an adapter without it says so in a test of its own (the
 * adapter package then checks the bytes in its own tests), never by a silent skip.
 */
import {
  CorruptDocumentError,
  encodeSessionDocument,
  type QuarantinedDocument,
  type SessionStore,
  type StorageAdapter,
} from '@keepsake/core';
import { expect } from 'vitest';
import {
  CORRUPT_VARIANTS,
  healthySessionWithSample,
  plantDocument,
} from '../harness/corrupt-documents.js';
import { expectTypedError } from '../harness/fixtures.js';
import type { SpecRegistrar } from '../harness/suite.js';

export function defineQuarantinedBytesTests(suite: SpecRegistrar): void {
  if (!suite.context.readsQuarantined) {
    suite.test(
      'A2',
      "quarantined bytes — adapter offers no readQuarantined; checked by the adapter's own tests",
      async (env) => {
        // Nothing about the bytes can be observed here; the test states that, and that the
        // primitive is really absent (an adapter that has it gets the byte-for-byte test).
        const raw = await env.rawAdapter();
        expect(raw.readQuarantined).toBeUndefined();
      },
    );
    return;
  }

  suite.test(
    'A2',
    'quarantined bytes are intact (adapter implements readQuarantined)',
    async (env) => {
      const { store } = await env.openStore();
      const { healthy, sample } = await healthySessionWithSample(env, store);
      const planted = new Map<string, string>();
      for (const [, makeText] of CORRUPT_VARIANTS) {
        const id = env.id('corrupt');
        const text = makeText(id, sample);
        await plantDocument(env, id, text);
        planted.set(id, text);
      }
      if (env.capabilities.appendDeltas) {
        // A readable base with deltas that do not fit it: the bytes are base and deltas
        // joined by newlines, in order.
        const id = env.id('corrupt-delta');
        const base = encodeSessionDocument({ ...healthy, id, revision: 1 });
        await plantDocument(env, id, base);
        const deltas = ['{"baseCount":99,"appended":[]}', 'not json either {'];
        const raw = await env.rawAdapter();
        for (const [index, text] of deltas.entries()) {
          const written = await raw.putDocument(
            'sessions',
            id,
            { kind: 'delta', revision: index + 2, text },
            { expectedRevision: index + 1, durable: true },
          );
          expect(written.ok, 'planting a delta through the adapter').toBe(true);
        }
        planted.set(id, [base, ...deltas].join('\n'));
      }

      const raw = await env.rawAdapter();
      const locations = new Set<string>();
      for (const [id, bytes] of planted) {
        const entry = await quarantine(store, id);
        locations.add(entry.location);
        expect(await raw.readQuarantined!(entry.location), `quarantined bytes of ${id}`).toBe(
          bytes,
        );
      }
      expect(locations.size, 'every quarantined document has its own location').toBe(planted.size);
      const missing = `${[...locations][0]!}-nothing-here`;
      expect(await raw.readQuarantined!(missing), 'a location with nothing there').toBeNull();
    },
  );

  suite.test(
    'A2',
    'quarantining the same id twice keeps both copies intact (adapter implements readQuarantined)',
    async (env) => {
      const { store } = await env.openStore();
      const id = env.id('twice');
      const raw = await env.rawAdapter();
      await plantDocument(env, id, 'first corrupt copy {');
      const first = await quarantine(store, id);
      await plantDocument(env, id, 'second corrupt copy [');
      const second = await quarantine(store, id);
      expect(second.location).not.toBe(first.location);
      expect(await readBack(raw, first)).toBe('first corrupt copy {');
      expect(await readBack(raw, second)).toBe('second corrupt copy [');
    },
  );
}

/**
 * Loads a planted corrupt document, which must be quarantined, and returns the one
 * quarantine entry of `id` that is new (listQuarantined promises no order).
 */
async function quarantine(store: SessionStore, id: string): Promise<QuarantinedDocument> {
  const isOfId = (entry: QuarantinedDocument) => entry.collection === 'sessions' && entry.id === id;
  const before = new Set((await store.quarantined()).filter(isOfId).map((entry) => entry.location));
  const error = await expectTypedError(store.load(id), CorruptDocumentError);
  expect(error.sessionId).toBe(id);
  const added = (await store.quarantined())
    .filter(isOfId)
    .filter((entry) => !before.has(entry.location));
  expect(added, `one new quarantine entry of ${id}`).toHaveLength(1);
  return added[0]!;
}

function readBack(raw: StorageAdapter, entry: QuarantinedDocument): Promise<string | null> {
  return raw.readQuarantined!(entry.location);
}
