import { createSessionStore, type StorageAdapter, type StoredDocument } from '@keepsake/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fsAdapter } from '../src/index.js';
import { faultInjectingFileSystem } from '../src/testing/index.js';
import { summary } from './helpers.js';

/**
 * Power-loss simulation (FAULT INJECTION): random writes through the adapter on a simulated
 * disk, a process that dies at a random operation, then a power loss that drops every unsynced
 * byte and directory entry (keeping random torn tails). A model of what was acknowledged says
 * what may be read back: every durable write is there (or a later state), every document and
 * journal reads as a state that was written, never a mix and never garbage.
 */
type Operation =
  | { kind: 'full'; document: number; durable: boolean; withIndex: boolean }
  | { kind: 'delta'; document: number; durable: boolean; withIndex: boolean }
  | { kind: 'delete'; document: number; durable: boolean }
  | { kind: 'append'; run: number; count: number; durability: 'none' | 'group' | 'each' }
  | { kind: 'index'; document: number; durable: boolean }
  | { kind: 'sync' };

const operation: fc.Arbitrary<Operation> = fc.oneof(
  // `withIndex`: the write carries its index entry (the indexWithDocument capability, B7).
  ...(['full', 'delta', 'delta'] as const).map((kind) =>
    fc.record({
      kind: fc.constant(kind),
      document: fc.nat(2),
      durable: fc.boolean(),
      withIndex: fc.boolean(),
    }),
  ),
  fc.record({ kind: fc.constant('delete'), document: fc.nat(2), durable: fc.boolean() }),
  fc.record({
    kind: fc.constant('append'),
    run: fc.nat(1),
    count: fc.integer({ min: 1, max: 3 }),
    durability: fc.constantFrom('none', 'group', 'each'),
  }),
  fc.record({ kind: fc.constant('index'), document: fc.nat(2), durable: fc.boolean() }),
  fc.constant({ kind: 'sync' as const }),
);

interface DocumentModel {
  /** Every state the document was in, oldest first (null: absent). */
  states: Array<StoredDocument | null>;
  /** Index of the last state acknowledged as durable. */
  durableFrom: number;
}

interface JournalModel {
  appended: number;
  durable: number;
}

async function runScenario(operations: Operation[], haltAt: number, seed: number): Promise<void> {
  const disk = faultInjectingFileSystem();
  const adapter = fsAdapter({ directory: '/store', fileSystem: disk });
  await adapter.open();
  const documents = Array.from(
    { length: 3 },
    (): DocumentModel => ({ states: [null], durableFrom: 0 }),
  );
  const journals = Array.from({ length: 2 }, (): JournalModel => ({ appended: 0, durable: 0 }));
  const indexDurable = new Map<string, number>();
  disk.haltAfter(haltAt);
  let clock = 0;
  for (const step of operations) {
    clock++;
    const alive = await apply(adapter, step, documents, journals, indexDurable, clock).then(
      () => true,
      () => false,
    );
    if (!alive) break;
  }
  let random = seed;
  disk.simulatePowerLoss({
    tornTails: true,
    random: () => {
      random = (random * 1_103_515_245 + 12_345) % 2 ** 31;
      return random / 2 ** 31;
    },
  });
  const restarted = fsAdapter({ directory: '/store', fileSystem: disk });
  await restarted.open();
  for (const [index, model] of documents.entries()) {
    const seen = await restarted.getDocument('sessions', `doc${index}`);
    expect(model.states.slice(model.durableFrom)).toContainEqual(seen);
  }
  for (const [index, model] of journals.entries()) {
    const read = await restarted.readLog('s', `run${index}`, { afterSequence: 0, limit: 1000 });
    const sequences = read.records.map((entry) => entry.sequence);
    expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, at) => at + 1));
    expect(read.records.every((entry) => entry.text === `"r${index}e${entry.sequence}"`)).toBe(
      true,
    );
    expect(sequences.length).toBeGreaterThanOrEqual(model.durable);
    expect(sequences.length).toBeLessThanOrEqual(model.appended);
  }
  const index = await restarted.listIndex({ cursor: null, limit: 100 });
  expect(index.status).not.toBe('corrupt');
  if (index.status === 'ok') {
    for (const [id, updatedAt] of indexDurable) {
      const entry = index.entries.find((candidate) => (candidate as { id: string }).id === id);
      expect((entry as { updatedAt: number } | undefined)?.updatedAt ?? -1).toBeGreaterThanOrEqual(
        updatedAt,
      );
    }
  }
  await restarted.close();
}

async function apply(
  adapter: StorageAdapter,
  step: Operation,
  documents: DocumentModel[],
  journals: JournalModel[],
  indexDurable: Map<string, number>,
  clock: number,
): Promise<void> {
  if (step.kind === 'sync') {
    await adapter.sync();
    for (const model of documents) model.durableFrom = model.states.length - 1;
    for (const model of journals) model.durable = model.appended;
    return;
  }
  if (step.kind === 'append') {
    const model = journals[step.run] as JournalModel;
    const records = Array.from({ length: step.count }, (_, at) => {
      const sequence = model.appended + at + 1;
      return { sequence, text: `"r${step.run}e${sequence}"` };
    });
    const before = model.appended;
    // In flight, it may land: the model allows it before knowing.
    model.appended += step.count;
    const result = await adapter.appendLog('s', `run${step.run}`, records, {
      durability: step.durability,
    });
    expect(result).toEqual({ ok: true });
    if (step.durability !== 'none') model.durable = Math.max(model.durable, before + step.count);
    return;
  }
  if (step.kind === 'index') {
    const id = `doc${step.document}`;
    await adapter.putIndexEntry(summary(id, clock), { durable: step.durable });
    if (step.durable) indexDurable.set(id, clock);
    return;
  }
  const model = documents[step.document] as DocumentModel;
  const id = `doc${step.document}`;
  const current = model.states.at(-1) ?? null;
  let next: StoredDocument | null;
  if (step.kind === 'delete') {
    next = null;
  } else if (step.kind === 'full' || current === null) {
    next = { revision: (current?.revision ?? 0) + 1, base: `"${id}@${clock}"`, deltas: [] };
  } else {
    next = {
      ...current,
      revision: current.revision + 1,
      deltas: [...current.deltas, `"+${clock}"`],
    };
  }
  model.states.push(next);
  const options = { durable: step.durable };
  const indexEntry = step.kind !== 'delete' && step.withIndex ? summary(id, clock) : undefined;
  const result =
    next === null
      ? await adapter.deleteDocument('sessions', id, options)
      : await adapter.putDocument(
          'sessions',
          id,
          next.deltas.length > 0
            ? { kind: 'delta', revision: next.revision, text: next.deltas.at(-1) as string }
            : { kind: 'full', revision: next.revision, text: next.base },
          indexEntry === undefined
            ? { ...options, expectedRevision: current?.revision ?? null }
            : { ...options, expectedRevision: current?.revision ?? null, indexEntry },
        );
  expect(result).toEqual({ ok: true });
  if (step.durable) model.durableFrom = model.states.length - 1;
  // The entry is as durable as the document once the write resolves.
  if (step.durable && indexEntry !== undefined) indexDurable.set(id, clock);
}

describe('power-loss simulation', () => {
  it('C3: after a crash at any operation and a power loss, every durable write is there and nothing is corrupt', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(operation, { minLength: 1, maxLength: 25 }),
        fc.nat(400),
        fc.nat(),
        runScenario,
      ),
      { numRuns: Number(process.env.KEEPSAKE_POWER_LOSS_RUNS ?? 150) },
    );
  });

  it('B7: after a durable save resolves and power is lost, list() shows its summary', async () => {
    const disk = faultInjectingFileSystem();
    const store = createSessionStore({
      adapter: fsAdapter({ directory: '/store', fileSystem: disk }),
    });
    const sessions = [];
    for (const name of ['a', 'b', 'c']) {
      const session = await store.create({ id: name, title: `${name} first` }, { fsync: true });
      session.title = `${name} second`;
      await store.save(session, { fsync: true });
      sessions.push(session);
    }
    // A later save that was not durable may be lost, the durable one before it may not.
    (sessions[0] as (typeof sessions)[number]).title = 'a third';
    await store.save(sessions[0] as (typeof sessions)[number]);
    disk.simulatePowerLoss({ tornTails: true });
    const restarted = fsAdapter({ directory: '/store', fileSystem: disk });
    // The index as the adapter holds it, before anything could rebuild it from documents.
    await restarted.open();
    const index = await restarted.listIndex({ cursor: null, limit: 100 });
    expect(index.status).toBe('ok');
    const titles = new Map(
      (index.status === 'ok' ? index.entries : []).map((entry) => {
        const { id, title } = entry as { id: string; title: string };
        return [id, title];
      }),
    );
    expect(titles.get('b')).toBe('b second');
    expect(titles.get('c')).toBe('c second');
    expect(['a second', 'a third']).toContain(titles.get('a'));
    const reopened = createSessionStore({ adapter: restarted });
    const listed = (await reopened.list({ limit: 100 })).sessions.map((entry) => entry.title);
    expect(listed).toEqual(expect.arrayContaining(['b second', 'c second']));
    await reopened.close();
  });
});
