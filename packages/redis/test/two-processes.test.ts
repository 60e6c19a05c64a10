import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisServerProcess } from '../src/testing/index.js';
import { messageIds, openStore, uniquePrefix } from './helpers/stores.js';

/**
 * B4 across processes: two processes, each with its own store and connection, make 200
 * read-modify-write saves each on one session (test/fixtures/rmw-child.ts). Both load the
 * session before either saves, so the first saves race for certain. Every save lands on the
 * latest revision or is refused with a conflict and retried: the final transcript holds
 * all 400 messages, each once, each process's in its own order. No lost update.
 */
const SAVES = 200;
const hooks = fileURLToPath(new URL('./fixtures/ts-hooks.mjs', import.meta.url));
const child = fileURLToPath(new URL('./fixtures/rmw-child.ts', import.meta.url));

let server: RedisServerProcess;
beforeAll(async () => {
  server = await RedisServerProcess.start({ persistence: 'aof-always' });
});
afterAll(async () => {
  await server.dispose();
});

function startChild(keyPrefix: string, label: string) {
  const process_ = spawn(
    process.execPath,
    [
      '--disable-warning=ExperimentalWarning',
      '--import',
      hooks,
      child,
      server.url,
      keyPrefix,
      'shared',
      label,
      String(SAVES),
    ],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, NODE_COMPILE_CACHE: join(tmpdir(), 'keepsake-redis-test-cache') },
    },
  );
  let output = '';
  let errors = '';
  process_.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  process_.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    errors += chunk;
  });
  const loaded = new Promise<void>((resolve, reject) => {
    const check = () => {
      if (output.includes('loaded\n')) resolve();
    };
    process_.stdout.on('data', check);
    process_.once('exit', () => reject(new Error(`child ${label} exited early:\n${errors}`)));
  });
  const exited = once(process_, 'exit');
  return {
    loaded,
    go: () => process_.stdin.write('go\n'),
    async report() {
      const [code] = (await exited) as [number | null];
      expect(errors).not.toContain('rmw child failed');
      expect(code).toBe(0);
      return JSON.parse(output.slice(output.indexOf('loaded\n') + 7)) as {
        saves: number;
        conflicts: number;
      };
    },
  };
}

describe('two processes, one Redis', () => {
  it('B4: 2 processes × 200 read-modify-write saves of one session: conflicts, 0 lost updates', async () => {
    const keyPrefix = uniquePrefix('two-processes');
    const setup = openStore({ url: server.url, keyPrefix });
    await setup.store.create({ id: 'shared', title: 'shared' }, { fsync: true });
    await setup.close();

    const children = [startChild(keyPrefix, 'left'), startChild(keyPrefix, 'right')];
    await Promise.all(children.map((each) => each.loaded));
    for (const each of children) each.go();
    const reports = await Promise.all(children.map((each) => each.report()));
    expect(reports.map((report) => report.saves)).toEqual([SAVES, SAVES]);
    const conflicts = reports.reduce((total, report) => total + report.conflicts, 0);
    // Both first saves expected the same revision: at least one of them was refused.
    expect(conflicts).toBeGreaterThan(0);
    console.info(`B4: ${conflicts} conflicts detected and retried across ${2 * SAVES} saves`);

    const check = openStore({ url: server.url, keyPrefix });
    const ids = messageIds(await check.store.load('shared'));
    expect(ids).toHaveLength(2 * SAVES);
    for (const label of ['left', 'right']) {
      expect(ids.filter((id) => id.startsWith(`${label}-`))).toEqual(
        Array.from({ length: SAVES }, (_, index) => `${label}-${index}`),
      );
    }
    await check.close();
  }, 120_000);
});
