import { expect, it } from 'vitest';
import { createSessionStore } from '../store.js';
import type { ListDocumentsOptions, StorageAdapter } from './adapter.js';
import { memoryAdapter } from './memory-adapter.js';

/** An adapter whose listDocuments ignores `prefix` (issue 24's silent data loss). */
function prefixIgnoringAdapter(): StorageAdapter {
  const inner = memoryAdapter();
  return Object.assign(Object.create(inner) as StorageAdapter, {
    listDocuments: (collection: 'revisions', options: ListDocumentsOptions) =>
      inner.listDocuments(collection, { cursor: options.cursor, limit: options.limit }),
  });
}

it('B5, B8: core acts only on listed ids with its prefix, whatever the adapter lists', async () => {
  const adapter = prefixIgnoringAdapter();
  const store = createSessionStore({ adapter });
  await store.create({ id: 'a' });
  await store.create({ id: 'b' });
  for (const [id, revision] of [
    ['a', 2],
    ['b', 3],
  ] as const) {
    await adapter.putDocument(
      'revisions',
      `${id}.${revision}`,
      { kind: 'full', revision: 1, text: '{}' },
      { expectedRevision: null, durable: true },
    );
  }
  expect(await store.retainedRevisions('b')).toEqual([3]);
  await store.delete('a');
  expect(await adapter.hasDocument('revisions', 'b.3')).toBe(true);
  expect(await store.retainedRevisions('b')).toEqual([3]);
  await store.close();
});
