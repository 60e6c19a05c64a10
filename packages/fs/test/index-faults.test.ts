import { once } from 'node:events';
import { BackendError } from '@keepsake/core';
import { describe, expect, it } from 'vitest';
import { full, openSimulated, spawnFixture, summary, tempDirectory } from './helpers.js';

describe('a transient index failure during a save', () => {
  it('B3/B7: an EIO opening the index during a durable create does not end a plain Node process; create resolves, D is stored and listed', async () => {
    const directory = await tempDirectory();
    const child = spawnFixture('index-eio-child.ts', [directory]);
    let output = '';
    let errors = '';
    child.stdout.on('data', (chunk) => {
      output += String(chunk);
    });
    child.stderr.on('data', (chunk) => {
      errors += String(chunk);
    });
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(errors).toBe('');
    expect(code).toBe(0);
    const outcome = JSON.parse(output) as {
      created: string;
      faultUsed: boolean;
      warnings: string[];
      loaded: string;
      listed: string[];
    };
    expect(outcome.faultUsed).toBe(true);
    expect(outcome.created).toBe('resolved');
    // The save is reported as what happened: stored, its index entry not (written later).
    expect(outcome.warnings).toHaveLength(1);
    expect(outcome.warnings[0]).toMatch(/^index: /);
    expect(outcome.loaded).toBe('D');
    expect(outcome.listed).toEqual(['D', 'warm']);
  });
});

/** Runs `action` and returns every rejection that went unhandled meanwhile (or a turn after). */
async function unhandledRejectionsDuring(action: () => Promise<void>): Promise<unknown[]> {
  const unhandled: unknown[] = [];
  const record = (reason: unknown) => {
    unhandled.push(reason);
  };
  process.on('unhandledRejection', record);
  try {
    await action();
    // Node reports a rejection without a handler once the microtasks after it have run.
    await new Promise((resolve) => setTimeout(resolve, 0));
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('unhandledRejection', record);
  }
  return unhandled;
}

describe('an index batch that fails (fault injection, in process)', () => {
  const landed = { expectedRevision: null, durable: true } as const;

  it('B7: documents land, the failed batch of entries is reported with each write as indexFailure, and no rejection goes unhandled', async () => {
    const unhandled = await unhandledRejectionsDuring(async () => {
      const { adapter, disk } = await openSimulated();
      // FAULT INJECTION: the next open of an index file fails (EIO), so the first batch of
      // entries fails while the documents' durable writes are still under way.
      disk.inject({ operation: 'open', path: '/store/index/', code: 'EIO', times: 1 });
      const ids = ['a', 'b', 'c', 'd', 'e'];
      const results = await Promise.all(
        ids.map((id, index) =>
          adapter.putDocument('sessions', id, full(1, `"${id}"`), {
            ...landed,
            indexEntry: summary(id, 10 + index),
          }),
        ),
      );
      for (const result of results) expect(result.ok).toBe(true);
      const failed = ids.filter((_, index) => {
        const result = results[index];
        return result?.ok === true && result.indexFailure !== undefined;
      });
      expect(failed.length).toBeGreaterThan(0);
      for (const [index, id] of ids.entries()) {
        const result = results[index];
        if (result?.ok && result.indexFailure) {
          expect(result.indexFailure).toSatisfy(BackendError.isInstance);
        }
        expect((await adapter.getDocument('sessions', id))?.base).toBe(`"${id}"`);
      }
      const page = await adapter.listIndex({ cursor: null, limit: 100 });
      const listed =
        page.status === 'ok'
          ? page.entries.map((entry) => (entry as { id: string }).id).sort()
          : null;
      expect(listed).toEqual(ids.filter((id) => !failed.includes(id)));
    });
    expect(unhandled).toEqual([]);
  });

  it("B3/B7: when the document fails too, putDocument rejects with the document's error and the entry's failure is not left unhandled", async () => {
    const unhandled = await unhandledRejectionsDuring(async () => {
      const { adapter, disk } = await openSimulated();
      disk.inject({ operation: 'open', path: '/store/index/', code: 'EIO', times: 1 });
      disk.inject({
        operation: 'sync',
        path: /\/store\/sessions\/.*\.tmp$/,
        code: 'EIO',
        times: 1,
      });
      const write = adapter.putDocument('sessions', 'D', full(1, '{}'), {
        ...landed,
        indexEntry: summary('D', 5),
      });
      await expect(write).rejects.toSatisfy(
        (error: unknown) => BackendError.isInstance(error) && /sessions/.test(String(error)),
      );
      expect(await adapter.getDocument('sessions', 'D')).toBeNull();
    });
    expect(unhandled).toEqual([]);
  });
});
