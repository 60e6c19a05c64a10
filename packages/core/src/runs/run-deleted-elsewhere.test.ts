import { describe, expect, it } from 'vitest';
import { createMemoryBackend, memoryAdapter } from '../adapter/memory-adapter.js';
import { RunNotActiveError } from '../errors/run-errors.js';
import { BackendError } from '../errors/storage-errors.js';
import { createSessionStore } from '../store.js';

describe('a run whose session another instance deleted (B8)', () => {
  it('cancel whose journal cannot be removed reports the BackendError and still ends the run (fault injection)', async () => {
    const backend = createMemoryBackend();
    const shared = memoryAdapter({ backend });
    // FAULT INJECTION: the worker's adapter cannot delete a journal.
    const failing = Object.assign(Object.create(shared) as object, {
      deleteLog: () => Promise.reject(new Error('injected: unlink failed')),
    }) as unknown as typeof shared;
    const worker = createSessionStore({ adapter: failing });
    const deleter = createSessionStore({ adapter: memoryAdapter({ backend }) });
    const session = await worker.create({ title: 'gone soon' });
    const run = await worker.beginRun(session.id, { userMessage: { role: 'user', content: 'q' } });
    expect(await deleter.delete(session.id)).toBe(true);
    await expect(run.cancel()).rejects.toSatisfy(BackendError.isInstance);
    // The run is over all the same: nothing more is appended, the id is free again.
    await expect(run.append({ type: 'token', data: { text: 'late' } })).rejects.toSatisfy(
      RunNotActiveError.isInstance,
    );
    const recreated = await worker.create({ id: session.id });
    expect(recreated.messages).toEqual([]);
    await worker.close();
    await deleter.close();
  });
});
