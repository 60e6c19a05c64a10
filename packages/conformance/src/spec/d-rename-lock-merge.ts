/**
 * D1, D2: one holder per lock, also across a rename. Found outside the suite: a rename
 * pointed the new id at the old id's mutex while the new id's own mutex was still held,
 * so a later `withLock(newId)` entered beside that holder; and while the rename waited for
 * the old id, `withLock(newId)` entered at once.
 */
import type { SessionStore } from '@keepsake/core';
import { expect } from 'vitest';
import { deferred, drainCallbacks, textMessage } from '../harness/fixtures.js';
import type { SpecRegistrar } from '../harness/suite.js';

/** Counts the holders of one session's lock inside `withLock` bodies. */
class HolderCount {
  inside = 0;
  most = 0;
  readonly entered: string[] = [];

  hold(store: SessionStore, id: string, name: string, until: Promise<unknown>): Promise<void> {
    return store.withLock(id, async () => {
      this.inside++;
      this.most = Math.max(this.most, this.inside);
      this.entered.push(name);
      try {
        await until;
      } finally {
        this.inside--;
      }
    });
  }
}

export function defineRenameLockMergeTests(suite: SpecRegistrar): void {
  suite.test(
    'D2',
    "a rename waits for the new id's holder, and no one enters beside it afterwards",
    async (env) => {
      const { store } = await env.openStore();
      const oldId = env.id();
      const newId = env.id();
      await store.create({ id: oldId, messages: [textMessage(env, 'user', 'history')] });
      const count = new HolderCount();
      const releaseW = deferred();
      const releaseT = deferred();
      const w = count.hold(store, newId, 'W', releaseW.promise);
      const t = store.withLock(oldId, () => releaseT.promise);
      await drainCallbacks();
      let renamed = false;
      const rename = store.rename(oldId, newId).then(() => {
        renamed = true;
      });
      await drainCallbacks();
      releaseT.resolve();
      await t;
      await drainCallbacks();
      expect(renamed, 'the rename waits for the holder of the new id').toBe(false);
      const x = count.hold(store, newId, 'X', Promise.resolve());
      await drainCallbacks();
      expect(count.entered).toEqual(['W']);
      releaseW.resolve();
      await Promise.all([w, rename, x]);
      expect(renamed).toBe(true);
      expect(count.entered).toEqual(['W', 'X']);
      expect(count.most, 'never two holders of the lock of the new id').toBe(1);
    },
  );

  suite.test('D2', 'the two ids of a rename stay one lock after both went idle', async (env) => {
    const { store } = await env.openStore();
    const oldId = env.id();
    const newId = env.id();
    await store.create({ id: oldId, messages: [textMessage(env, 'user', 'history')] });
    await store.rename(oldId, newId);
    // Both ids idle now: the registry may let go of the mutex, but not of the join.
    await drainCallbacks();
    const count = new HolderCount();
    const release = deferred();
    const first = count.hold(store, oldId, 'old', release.promise);
    const second = count.hold(store, newId, 'new', Promise.resolve());
    await drainCallbacks();
    expect(count.entered).toEqual(['old']);
    release.resolve();
    await Promise.all([first, second]);
    expect(count.most).toBe(1);
  });

  suite.test(
    'D2',
    'while a rename waits for the old id, withLock(newId) waits for the rename',
    async (env) => {
      const { store } = await env.openStore();
      const oldId = env.id();
      const newId = env.id();
      await store.create({ id: oldId, messages: [textMessage(env, 'user', 'history')] });
      const order: string[] = [];
      const releaseT = deferred();
      const t = store.withLock(oldId, async () => {
        await releaseT.promise;
        order.push('T done');
      });
      await drainCallbacks();
      const rename = store.rename(oldId, newId).then(() => order.push('renamed'));
      await drainCallbacks();
      const x = store.withLock(newId, async () => {
        order.push('X in');
      });
      await drainCallbacks();
      expect(order, 'X waits: the pending rename makes both ids one session').toEqual([]);
      releaseT.resolve();
      await Promise.all([t, rename, x]);
      expect(order).toEqual(['T done', 'renamed', 'X in']);
    },
  );
}
