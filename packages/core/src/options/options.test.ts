import { describe, expect, it } from 'vitest';
import { memoryAdapter } from '../adapter/memory-adapter.js';
import { InvalidConfigError } from '../errors/input-errors.js';
import { createSessionStore } from '../store.js';

describe('store options', () => {
  it('rejects a missing adapter with a message naming the option', () => {
    expect(() => createSessionStore({} as never)).toThrowError(/Option `adapter`/);
  });

  it.each([
    [{ recovery: { graceMs: -1 } }, 'recovery.graceMs'],
    [{ cache: { maxSessions: 0 } }, 'cache.maxSessions'],
    [{ journal: { durability: 'sometimes' } }, 'journal.durability'],
    [{ limits: { maxMessages: 1.5 } }, 'limits.maxMessages'],
    [{ checkpoint: { intervalMs: 100, unknown: 1 } }, 'checkpoint'],
    [{ deltas: { compactRatio: -0.5 } }, 'deltas.compactRatio'],
  ])('rejects %j as InvalidConfigError naming %s', (options, path) => {
    let thrown: unknown;
    try {
      createSessionStore({ adapter: memoryAdapter(), ...(options as object) });
    } catch (error) {
      thrown = error;
    }
    expect(InvalidConfigError.isInstance(thrown)).toBe(true);
    expect((thrown as Error).message).toContain(path);
  });

  it('rejects an adapter that lacks a required primitive, naming it', () => {
    const adapter = memoryAdapter();
    // An adapter written against an earlier core: no hasDocument, no deleteLog.
    const older = Object.assign(Object.create(adapter) as object, {
      hasDocument: undefined,
      deleteLog: undefined,
    }) as unknown as typeof adapter;
    let thrown: unknown;
    try {
      createSessionStore({ adapter: older });
    } catch (error) {
      thrown = error;
    }
    expect(InvalidConfigError.isInstance(thrown)).toBe(true);
    expect((thrown as Error).message).toContain('hasDocument, deleteLog');
    expect(() => createSessionStore({ adapter })).not.toThrow();
  });
});
