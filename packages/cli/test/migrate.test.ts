import { join } from 'node:path';
import { fsAdapter } from '@keepsake/fs';
import { redisAdapter } from '@keepsake/redis';
import type { RedisTarget } from '@keepsake/redis/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/exit-codes.js';
import { redisStoreUrl, startRedis, uniquePrefix } from './helpers/redis.js';
import { keepsake, tempDirectory } from './helpers/run-keepsake.js';
import { fillSampleStore } from './helpers/sample-store.js';
import { exited, spawnKeepsake } from './helpers/spawn-keepsake.js';
import { contentsOf, expectSameContents } from './helpers/store-contents.js';

let redis: RedisTarget;
let root: Awaited<ReturnType<typeof tempDirectory>>;

beforeAll(async () => {
  redis = await startRedis();
  root = await tempDirectory('migrate');
});

afterAll(async () => {
  await redis?.dispose();
  await root?.remove();
});

describe('keepsake migrate', () => {
  it('H3: fs → Redis → fs keeps every byte of every session, revision, lifecycle state and journal', async () => {
    const original = join(root.path, 'original');
    await fillSampleStore(fsAdapter({ directory: original }), { sessions: 9, tokensPerRun: 6 });
    const prefix = uniquePrefix('round-trip');
    const there = await keepsake([
      'migrate',
      '--from',
      original,
      '--to',
      redisStoreUrl(redis, prefix),
    ]);
    expect(there.stderr).toMatch(/^copy: 0\/\d+\n/);
    expect(there.exitCode).toBe(EXIT_CODES.ok);
    const back = join(root.path, 'back');
    const home = await keepsake([
      'migrate',
      '--from',
      redisStoreUrl(redis, prefix),
      '--to',
      `fs://${back}`,
    ]);
    expect(home.exitCode).toBe(EXIT_CODES.ok);
    const checksums = [there, home].map(
      (result) => /source checksum (\w+)/.exec(result.stdout)?.[1],
    );
    expect(checksums[0]).toMatch(/^[0-9a-f]{64}$/);
    expect(checksums[1]).toBe(checksums[0]);

    const before = await contentsOf(fsAdapter({ directory: original }));
    expect(before.documents.revisions.size).toBe(1);
    expect(before.documents.lifecycle.size).toBeGreaterThan(0);
    expect([...before.documents.sessions.values()].some((stored) => stored.deltas.length > 0)).toBe(
      true,
    );
    expectSameContents(
      await contentsOf(redisAdapter({ url: redis.url, keyPrefix: prefix })),
      before,
    );
    expectSameContents(await contentsOf(fsAdapter({ directory: back })), before);
    for (const store of [original, back]) {
      expect((await keepsake(['verify', store])).exitCode).toBe(EXIT_CODES.ok);
    }
  });

  for (const direction of ['fs → Redis', 'Redis → fs'] as const) {
    it(`${direction}: a migration killed half-way (SIGKILL) is finished by --resume, nothing lost or doubled`, async () => {
      const label = direction === 'fs → Redis' ? 'kill-fs-redis' : 'kill-redis-fs';
      const fsStore = join(root.path, label);
      const prefix = uniquePrefix(label);
      const redisStore = redisStoreUrl(redis, prefix);
      const [from, to] = direction === 'fs → Redis' ? [fsStore, redisStore] : [redisStore, fsStore];
      const sourceAdapter = () =>
        direction === 'fs → Redis'
          ? fsAdapter({ directory: fsStore })
          : redisAdapter({ url: redis.url, keyPrefix: prefix });
      const targetAdapter = () =>
        direction === 'fs → Redis'
          ? redisAdapter({ url: redis.url, keyPrefix: prefix })
          : fsAdapter({ directory: fsStore });
      await fillSampleStore(sourceAdapter(), { sessions: 150, tokensPerRun: 20 });
      const before = await contentsOf(sourceAdapter());

      const child = spawnKeepsake(['migrate', '--from', from, '--to', to]);
      let progress = '';
      const killed = new Promise<void>((resolve) => {
        child.stderr.on('data', (chunk: Buffer) => {
          progress += chunk.toString('utf8');
          // Plain progress lines (stderr is a pipe): kill at the first past 30%.
          const done = [...progress.matchAll(/^copy: (\d+)\/(\d+)\s/gm)].at(-1);
          if (done !== undefined && Number(done[1]) * 10 >= Number(done[2]) * 3 && child.pid) {
            process.kill(child.pid, 'SIGKILL');
            resolve();
          }
        });
      });
      const ended = await Promise.race([killed.then(() => exited(child)), exited(child)]);
      expect(ended.signal, `the child ended on its own:\n${progress}`).toBe('SIGKILL');

      const partial = await contentsOf(targetAdapter());
      const copied = partial.documents.sessions.size;
      expect(copied).toBeGreaterThan(0);
      expect(copied).toBeLessThan(before.documents.sessions.size);

      const refused = await keepsake(['migrate', '--from', from, '--to', to]);
      expect(refused.exitCode).toBe(EXIT_CODES.targetNotEmpty);
      const resumed = await keepsake(['migrate', '--from', from, '--to', to, '--resume']);
      expect(resumed.exitCode).toBe(EXIT_CODES.ok);
      expect(resumed.stdout).toMatch(/\d+ documents were already in place from an earlier run/);
      expect(resumed.stdout).not.toContain('mismatch');
      expectSameContents(await contentsOf(targetAdapter()), before);
      expect((await keepsake(['verify', to])).exitCode).toBe(EXIT_CODES.ok);
    });
  }
});
