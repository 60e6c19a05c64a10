import {
  createMemoryBackend,
  type MemoryBackend,
  memoryAdapter,
  NotFoundError,
} from '@keepsake/core';
import { expect, it } from 'vitest';
import { type SuiteContext, TestEnvironment } from '../src/harness/environment.js';
import { explainLikelyHookFault } from '../src/harness/hook-faults.js';

const backends = new Map<string, MemoryBackend>();

/** The README's old example: "destroy" wipes the namespace, between the stores of a restart. */
function contextWithWipingRelease(): SuiteContext {
  const memory = memoryAdapter();
  return {
    initializer: {
      name: 'wipes on release',
      async createAdapter(namespace) {
        if (!backends.has(namespace)) backends.set(namespace, createMemoryBackend());
        return memoryAdapter({ backend: backends.get(namespace)! });
      },
      async releaseAdapter() {
        backends.clear();
      },
    },
    adapterName: memory.name,
    capabilities: memory.capabilities,
    readsQuarantined: true,
    modelRuns: 1,
    crashProbes: { written: 0, lost: 0 },
    testTimeoutMs: 5000,
  };
}

it('a NotFoundError after a release mid-test names the release hook as the likely cause', async () => {
  const env = new TestEnvironment(contextWithWipingRelease());
  const opened = await env.openStore();
  const session = await opened.store.create({ id: env.id() }, { fsync: true });
  const reopened = await env.restartGracefully(opened);
  const error = await reopened.store.load(session.id).catch((caught: unknown) => caught);
  expect(NotFoundError.isInstance(error)).toBe(true);
  expect(String((explainLikelyHookFault(env, error) as Error).message)).toContain(
    'releaseAdapter, formerly destroyAdapter',
  );
  await env.dispose();
});

it('a NotFoundError in a test that released nothing is left as it is', () => {
  const error = new NotFoundError('x');
  const explained = explainLikelyHookFault({ releasedBeforeTheEnd: false }, error) as Error;
  expect(explained.message).not.toContain('releaseAdapter');
});
