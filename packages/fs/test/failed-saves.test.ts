import {
  BackendError,
  createSessionStore,
  type Message,
  type SessionStore,
  type SessionSummary,
  WriteOutcomeUnknownError,
} from '@keepsake/core';
import { afterEach, describe, expect, it } from 'vitest';
import { fsAdapter } from '../src/index.js';
import { type FaultInjectingFileSystem, faultInjectingFileSystem } from '../src/testing/index.js';

// B7 and B2 on the filesystem: a save that fails leaves no trace in the listing (its index
// entry rides on the document's write), and one that failed after its document was in place
// says its outcome is unknown. Every fault is injected into a simulated disk (FAULT INJECTION).

const stores: SessionStore[] = [];

afterEach(async () => {
  for (const store of stores.splice(0).reverse()) await store.close().catch(() => undefined);
});

function openStore(disk: FaultInjectingFileSystem): SessionStore {
  const store = createSessionStore({
    adapter: fsAdapter({ directory: '/store', fileSystem: disk }),
  });
  stores.push(store);
  return store;
}

let messageCounter = 0;
function message(content: string): Message {
  return { id: `m${++messageCounter}`, role: 'user', content, createdAt: 1 };
}

async function listed(store: SessionStore, id: string): Promise<SessionSummary | undefined> {
  return (await store.list({ limit: 1000 })).sessions.find((entry) => entry.id === id);
}

/** The summary the listing shows, from this store and from a store opened after the failure. */
async function listedEverywhere(
  disk: FaultInjectingFileSystem,
  store: SessionStore,
  id: string,
): Promise<Array<Pick<SessionSummary, 'title' | 'messageCount'> | undefined>> {
  const pick = (summary: SessionSummary | undefined) =>
    summary && { title: summary.title, messageCount: summary.messageCount };
  return [pick(await listed(store, id)), pick(await listed(openStore(disk), id))];
}

/** A session "s" of one message, saved durably, then changed (not saved yet). */
async function changedSession(store: SessionStore, appends: number) {
  const session = await store.create(
    { id: 's', title: 'before', messages: [message('one')] },
    { fsync: true },
  );
  for (let index = 0; index < appends; index++) {
    session.messages.push(message(`saved ${index}`));
    await store.save(session, { fsync: true });
  }
  session.title = 'after';
  session.messages.push(message('two'), message('three'));
  return session;
}

describe('B7: a save whose write failed is not listed', () => {
  for (const [label, appends] of [
    ['the first delta (its file is created whole)', 0],
    ['an append to the delta file', 1],
  ] as const) {
    it(`ENOSPC while writing ${label}: the listing keeps the stored summary, in this store and a new one`, async () => {
      const disk = faultInjectingFileSystem();
      const store = openStore(disk);
      const session = await changedSession(store, appends);
      const before = { title: 'before', messageCount: 1 + appends };
      disk.inject({ operation: 'write', path: '/store/sessions/', code: 'ENOSPC', times: 1 });
      await expect(store.save(session, { fsync: true })).rejects.toSatisfy(
        (error: unknown) =>
          BackendError.isInstance(error) && !WriteOutcomeUnknownError.isInstance(error),
      );
      expect(await listedEverywhere(disk, store, 's')).toEqual([before, before]);
    });
  }

  it('ENOSPC while writing a new session: it is not listed', async () => {
    const disk = faultInjectingFileSystem();
    const store = openStore(disk);
    await store.create({ id: 'kept' }, { fsync: true });
    disk.inject({ operation: 'write', path: '/store/sessions/', code: 'ENOSPC', times: 1 });
    await expect(
      store.create({ id: 'never', title: 'never stored' }, { fsync: true }),
    ).rejects.toSatisfy(BackendError.isInstance);
    expect(await listedEverywhere(disk, store, 'never')).toEqual([undefined, undefined]);
    expect(await listed(store, 'kept')).toBeDefined();
  });

  it('an append whose fdatasync fails is cut off, and the entry queued with it is put back', async () => {
    const disk = faultInjectingFileSystem();
    const store = openStore(disk);
    const session = await changedSession(store, 1);
    const before = { title: 'before', messageCount: 2 };
    disk.inject({ operation: 'datasync', path: '/store/sessions/', code: 'EIO', times: 1 });
    await expect(store.save(session, { fsync: true })).rejects.toSatisfy(
      (error: unknown) =>
        BackendError.isInstance(error) && !WriteOutcomeUnknownError.isInstance(error),
    );
    expect(await listedEverywhere(disk, store, 's')).toEqual([before, before]);
    const reader = openStore(disk);
    const loaded = await reader.load('s');
    expect([loaded.title, loaded.messages.length]).toEqual(['before', 2]);
  });
});

describe('B2: a write that failed after its document was in place', () => {
  it('a failed fsync of the directory after the rename is an unknown outcome; the listing matches what is stored', async () => {
    const disk = faultInjectingFileSystem();
    const store = openStore(disk);
    // No save since the create: this one creates the delta file whole and renames it in.
    const session = await changedSession(store, 0);
    disk.inject({ operation: 'sync', path: /^\/store\/sessions\/[^/]+$/, code: 'EIO', times: 1 });
    const error = await store.save(session, { fsync: true }).then(
      () => expect.fail('the save resolved'),
      (failure: unknown) => failure,
    );
    expect(WriteOutcomeUnknownError.isInstance(error)).toBe(true);
    expect((error as WriteOutcomeUnknownError).isRetryable).toBe(true);
    expect(BackendError.isInstance(error), 'still a BackendError').toBe(true);
    const after = { title: 'after', messageCount: 3 };
    expect(await listedEverywhere(disk, store, 's')).toEqual([after, after]);
    const loaded = await openStore(disk).load('s');
    expect([loaded.title, loaded.messages.length]).toEqual(['after', 3]);
  });

  it('B4: retrying that save from the same store stores it, once, and is no conflict with itself', async () => {
    const disk = faultInjectingFileSystem();
    const store = openStore(disk);
    const session = await changedSession(store, 0);
    disk.inject({ operation: 'sync', path: /^\/store\/sessions\/[^/]+$/, code: 'EIO', times: 1 });
    await expect(store.save(session, { fsync: true })).rejects.toSatisfy(
      WriteOutcomeUnknownError.isInstance,
    );
    // Before: RevisionConflictError "changed by another writer: expected 1, found 2".
    const saved = await store.save(session, { fsync: true });
    expect(saved.messages.map((entry) => entry.content)).toEqual(['one', 'two', 'three']);
    const reader = openStore(disk);
    const loaded = await reader.load('s');
    expect([loaded.title, loaded.revision]).toEqual(['after', saved.revision]);
    expect(loaded.messages.map((entry) => entry.content)).toEqual(['one', 'two', 'three']);
    expect(await listed(reader, 's')).toMatchObject({ title: 'after', messageCount: 3 });
  });
});
