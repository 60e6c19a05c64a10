import { describe, expect, it } from 'vitest';
import { createAdapterContext } from '../src/context.js';
import { IndexStore } from '../src/index-store.js';
import { resolveOptions } from '../src/options.js';
import { faultInjectingFileSystem } from '../src/testing/index.js';
import { summary } from './helpers.js';

/** The index store alone, on a simulated disk, wired as fsAdapter wires it. */
async function openIndexStore(): Promise<IndexStore> {
  const fileSystem = faultInjectingFileSystem();
  const context = createAdapterContext(resolveOptions({ directory: '/store', fileSystem }));
  await fileSystem.mkdir('/store/index');
  const index = new IndexStore(context);
  await index.initializeIfFresh();
  return index;
}

/** Whether `promise` settles within `ms` (a hung update never does). */
function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms)),
  ]);
}

describe('index update queue', () => {
  it('B7: an update queued by the callback of the batch before it is written (it hung a save)', async () => {
    const index = await openIndexStore();
    let second: Promise<void> | null = null;
    // Runs as the first batch resolves, after the pump's last look at its queue and before
    // the pump has ended: the update must not be left behind a pump that stopped.
    await index.put(summary('a', 1), false).then(() => {
      second = index.put(summary('b', 2), false);
    });
    expect(second).not.toBeNull();
    expect(await settlesWithin(second as unknown as Promise<void>, 2_000)).toBe(true);
    const page = await index.list(null, 10);
    expect(
      page.status === 'ok' ? page.entries.map((entry) => (entry as { id: string }).id) : page,
    ).toEqual(['b', 'a']);
  });
});
