import { describe, expect, it } from 'vitest';
import { CorruptDocumentError, ReadOnlyError } from '../errors/storage-errors.js';
import { createMessage } from '../sessions/create-message.js';
import { createSessionStore } from '../store.js';
import { createMemoryBackend, type MemoryBackend, memoryAdapter } from './memory-adapter.js';
import { readOnlyOverlay } from './read-only-overlay.js';

/** A backend with a crashed run, a document that does not parse and no index. */
async function damagedBackend(): Promise<MemoryBackend> {
  const backend = createMemoryBackend();
  const writer = createSessionStore({ adapter: memoryAdapter({ backend }) });
  for (const id of ['alpha', 'beta']) {
    const session = await writer.create({ id, title: id });
    session.messages.push(createMessage({ role: 'user', content: `hello ${id}` }));
    await writer.save(session);
  }
  await writer.create({ id: 'crashed', title: 'died mid-answer' });
  const run = await writer.beginRun('crashed', { userMessage: { role: 'user', content: 'q' } });
  await run.append({ type: 'token', data: { text: 'partial answer' } });
  const torn = await writer.create({ id: 'torn', title: 'torn' });
  // Neither complete() nor cancel(): what a process killed mid-answer leaves behind.
  await writer.close();
  const adapter = memoryAdapter({ backend });
  await adapter.putDocument(
    'sessions',
    'torn',
    { kind: 'full', revision: torn.revision + 1, text: '{"messages": 5' },
    { expectedRevision: torn.revision, durable: true },
  );
  backend.index = null;
  return backend;
}

describe('a read-only store (readOnly: true)', () => {
  it('shows the repaired view a load gives (F1, A2, B7) and leaves the backend exactly as it was', async () => {
    const backend = await damagedBackend();
    const before = structuredClone(backend);
    const reader = createSessionStore({
      adapter: memoryAdapter({ backend }),
      readOnly: true,
      recovery: { graceMs: 0 },
    });
    // B7: the missing index is rebuilt, in memory; the torn document is not listed.
    const listed = await reader.list();
    expect(listed.sessions.map((session) => session.id).sort()).toEqual([
      'alpha',
      'beta',
      'crashed',
    ]);
    // F1: the crashed turn comes back repaired, with the journal's output.
    const crashed = await reader.load('crashed');
    expect(crashed.pending).toBeNull();
    expect(crashed.messages.map((message) => message.content)).toContain('partial answer');
    expect(crashed.messages.at(-1)?.marker?.type).toBe('interrupted');
    // A2: a document that does not parse is reported as a load reports it, not moved.
    await expect(reader.load('torn')).rejects.toSatisfy(CorruptDocumentError.isInstance);
    expect((await reader.quarantined()).map((entry) => entry.id)).toEqual(['torn']);
    expect(await reader.exists('torn')).toBe(false);
    const journal = await reader.readJournal('crashed', crashed.messages.at(-1)!.runId!);
    expect(journal.records.at(-1)?.type).toBe('interrupted');
    await reader.close();
    expect(backend).toEqual(before);

    // The view is what a writing load stores.
    const writer = createSessionStore({
      adapter: memoryAdapter({ backend }),
      recovery: { graceMs: 0 },
    });
    const repaired = await writer.load('crashed');
    const shape = (session: typeof repaired) =>
      session.messages.map(({ role, content, marker }) => ({ role, content, type: marker?.type }));
    expect(shape(repaired)).toEqual(shape(crashed));
    await writer.close();
  });

  it('refuses every write call with ReadOnlyError, never a silent no-op', async () => {
    const backend = await damagedBackend();
    const before = structuredClone(backend);
    const reader = createSessionStore({ adapter: memoryAdapter({ backend }), readOnly: true });
    const alpha = await reader.load('alpha');
    alpha.messages.push(createMessage({ role: 'user', content: 'more' }));
    const refused = [
      reader.create({ id: 'new' }),
      reader.save(alpha),
      reader.delete('alpha'),
      reader.rename('alpha', 'gamma'),
      reader.beginRun('alpha', { userMessage: { role: 'user', content: 'q' } }),
      reader.cancelRun('crashed'),
      reader.closeAnsweredRun('alpha', 'run-1'),
      reader.lifecycle.markTurnCompleted('alpha'),
      reader.lifecycle.commit('alpha'),
    ];
    for (const call of refused) {
      const error = await call.then(
        () => null,
        (reason: unknown) => reason,
      );
      expect(ReadOnlyError.isInstance(error), String(error)).toBe(true);
      expect((error as ReadOnlyError).code).toBe('capability_missing');
    }
    await reader.close();
    expect(backend).toEqual(before);
  });

  it('the overlay: conditional writes, deltas, journals, listings and the index over the backend', async () => {
    const backend = await damagedBackend();
    const before = structuredClone(backend);
    const overlay = readOnlyOverlay(memoryAdapter({ backend }));
    await overlay.open();
    const alpha = (await overlay.getDocument('sessions', 'alpha'))!;
    expect(
      await overlay.putDocument(
        'sessions',
        'alpha',
        { kind: 'delta', revision: alpha.revision + 1, text: '{}' },
        { expectedRevision: alpha.revision - 1, durable: true },
      ),
    ).toEqual({ ok: false, currentRevision: alpha.revision });
    await overlay.putDocument(
      'sessions',
      'alpha',
      { kind: 'delta', revision: alpha.revision + 1, text: '{}' },
      { expectedRevision: alpha.revision, durable: true },
    );
    expect(await overlay.getDocument('sessions', 'alpha')).toEqual({
      revision: alpha.revision + 1,
      base: alpha.base,
      deltas: [...alpha.deltas, '{}'],
    });
    await overlay.putDocument(
      'sessions',
      'zeta',
      { kind: 'full', revision: 1, text: '{}' },
      { expectedRevision: null, durable: true },
    );
    await overlay.deleteDocument('sessions', 'beta', { durable: true });
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await overlay.listDocuments('sessions', { cursor, limit: 1 });
      ids.push(...page.ids);
      cursor = page.nextCursor;
    } while (cursor !== null);
    expect(ids.sort()).toEqual(['alpha', 'crashed', 'torn', 'zeta']);
    expect(await overlay.listIndex({ cursor: null, limit: 10 })).toEqual({ status: 'missing' });
    const summary = (id: string, updatedAt: number) => ({
      id,
      title: id,
      createdAt: 1,
      updatedAt,
      messageCount: 0,
      pending: false,
      parentId: null,
      rotatedTo: null,
    });
    await overlay.replaceIndex([summary('a', 1), summary('b', 3), summary('c', 2)], {
      durable: true,
    });
    const first = await overlay.listIndex({ cursor: null, limit: 2 });
    expect(
      first.status === 'ok' && first.entries.map((entry) => (entry as { id: string }).id),
    ).toEqual(['b', 'c']);
    // An entry removed between two pages does not make the next page skip one.
    await overlay.deleteIndexEntry('c', { durable: true });
    const second = await overlay.listIndex({
      cursor: first.status === 'ok' ? first.nextCursor : null,
      limit: 2,
    });
    expect(
      second.status === 'ok' && second.entries.map((entry) => (entry as { id: string }).id),
    ).toEqual(['a']);
    const [runId] = await overlay.listLogs('crashed');
    const stored = await overlay.readLog('crashed', runId!, { afterSequence: 0, limit: 100 });
    const last = stored.records.at(-1)!.sequence;
    expect(
      await overlay.appendLog('crashed', runId!, [{ sequence: last + 2, text: '{}' }], {
        durability: 'each',
      }),
    ).toEqual({ ok: false, lastSequence: last });
    await overlay.appendLog('crashed', runId!, [{ sequence: last + 1, text: '{"x":1}' }], {
      durability: 'each',
    });
    const read = await overlay.readLog('crashed', runId!, { afterSequence: last - 1, limit: 100 });
    expect(read.records.map((record) => record.sequence)).toEqual([last, last + 1]);
    await overlay.deleteLogs('crashed', { durable: true });
    expect(await overlay.listLogs('crashed')).toEqual([]);
    expect(overlay.heldWrites.length).toBeGreaterThan(0);
    await overlay.close();
    expect(backend).toEqual(before);
  });
});
