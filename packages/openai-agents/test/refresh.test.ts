import { type AgentInputItem, MemorySession } from '@openai/agents-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeepsakeSession } from '../src/index.js';
import { type Backend, createBackend } from './helpers/backends.js';

function said(text: string): AgentInputItem {
  return { type: 'message', role: 'user', content: text };
}

describe.each(['memory', 'fs'] as const)(
  'getItems on an instance with the session cached, on %s',
  (name) => {
    let backend: Backend;
    beforeAll(async () => {
      backend = await createBackend(name);
    });
    afterAll(() => backend.dispose());

    it('B4: sees every change another instance made, also one that keeps the item count; a session deleted elsewhere reads as empty (B8)', async () => {
      const sessionId = `refresh-${name}`;
      const here = new KeepsakeSession({ store: backend.open(), sessionId });
      const elsewhereStore = backend.open();
      const elsewhere = new KeepsakeSession({ store: elsewhereStore, sessionId });
      await here.addItems([said('one'), said('two')]);
      expect(await here.getItems()).toEqual([said('one'), said('two')]);

      await elsewhere.addItems([said('three')]);
      expect(await here.getItems()).toEqual([said('one'), said('two'), said('three')]);
      // Same length, other content: only the stored revision tells.
      await elsewhere.popItem();
      await elsewhere.addItems([said('four')]);
      expect(await here.getItems()).toEqual([said('one'), said('two'), said('four')]);
      expect(await here.getItems(1)).toEqual([said('four')]);
      // Its own writes, then another instance's again.
      await here.addItems([said('five')]);
      await elsewhere.addItems([said('six')]);
      expect((await here.getItems()).map((item) => (item as { content: string }).content)).toEqual([
        'one',
        'two',
        'four',
        'five',
        'six',
      ]);

      expect(await elsewhereStore.delete(here.keepsakeId)).toBe(true);
      expect(await here.getItems()).toEqual([]);
      await here.addItems([said('again')]);
      expect(await elsewhere.getItems()).toEqual([said('again')]);
    });

    it('sees an addItems of its own still in flight, as MemorySession does (the runner may not await it)', async () => {
      const sessionId = `in-flight-${name}`;
      const session = new KeepsakeSession({ store: backend.open(), sessionId });
      const memory = new MemorySession();
      for (const side of [session, memory]) {
        await side.addItems([said('one')]);
        const adding = side.addItems([said('two')]);
        const seen = await side.getItems();
        await adding;
        expect(seen).toEqual([said('one'), said('two')]);
      }
    });

    it('with refresh: false serves its cached copy (one writer): what the default mode re-checks', async () => {
      const sessionId = `no-refresh-${name}`;
      const here = new KeepsakeSession({ store: backend.open(), sessionId, refresh: false });
      const elsewhere = new KeepsakeSession({ store: backend.open(), sessionId });
      await here.addItems([said('one')]);
      expect(await here.getItems()).toEqual([said('one')]);
      await elsewhere.addItems([said('two')]);
      expect(await here.getItems()).toEqual([said('one')]);
      expect(await new KeepsakeSession({ store: here.store, sessionId }).getItems()).toEqual([
        said('one'),
        said('two'),
      ]);
    });
  },
);
