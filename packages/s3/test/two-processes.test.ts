import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type S3Fixture, startFixture, uniquePrefix } from './helpers/s3-fixture.js';

/**
 * B4 across processes: two processes, each with its own store and S3 client, make 100
 * read-modify-write saves each on one session (test/fixtures/rmw-child.ts) against the same
 * RGW. Both load the session before either saves, so the first saves race for certain. Every
 * save lands on the latest revision or is refused with a conflict (412 on `If-Match`) and
 * retried: the final transcript holds all 200 messages, each once, each process's in its own
 * order. No lost update.
 */
const SAVES = 100;
const hooks = fileURLToPath(new URL('./fixtures/ts-hooks.mjs', import.meta.url));
const child = fileURLToPath(new URL('./fixtures/rmw-child.ts', import.meta.url));

let fixture: S3Fixture;
beforeAll(async () => {
  fixture = await startFixture();
});
afterAll(async () => {
  await fixture?.dispose();
});

function startChild(prefix: string, label: string) {
  const { target } = fixture;
  const settings = {
    endpoint: target.endpoint,
    region: target.region,
    credentials: target.credentials,
    bucket: target.bucket,
    prefix,
    compatibility: target.compatibility,
  };
  const process_ = spawn(
    process.execPath,
    [
      '--disable-warning=ExperimentalWarning',
      '--import',
      hooks,
      child,
      'shared',
      label,
      `${SAVES}`,
    ],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: {
        ...process.env,
        KEEPSAKE_TEST_S3_CHILD: JSON.stringify(settings),
        AWS_EC2_METADATA_DISABLED: 'true',
        NODE_COMPILE_CACHE: join(tmpdir(), 'keepsake-s3-test-cache'),
      },
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

describe('two processes, one bucket', () => {
  it('B4: 2 processes × 100 read-modify-write saves of one session: conflicts, 0 lost updates', async () => {
    const prefix = uniquePrefix('two-processes');
    const setup = openStore({ ...fixture.options('unused'), prefix });
    await setup.store.create({ id: 'shared', title: 'shared' }, { fsync: true });
    await setup.close();

    const children = [startChild(prefix, 'left'), startChild(prefix, 'right')];
    await Promise.all(children.map((each) => each.loaded));
    for (const each of children) each.go();
    const reports = await Promise.all(children.map((each) => each.report()));
    expect(reports.map((report) => report.saves)).toEqual([SAVES, SAVES]);
    const conflicts = reports.reduce((total, report) => total + report.conflicts, 0);
    // Both first saves expected the same revision: at least one of them was refused.
    expect(conflicts).toBeGreaterThan(0);
    console.info(`B4: ${conflicts} conflicts detected and retried across ${2 * SAVES} saves`);

    const check = openStore({ ...fixture.options('unused'), prefix });
    const ids = (await check.store.load('shared')).messages.map((message) => message.id);
    expect(ids).toHaveLength(2 * SAVES);
    for (const label of ['left', 'right']) {
      expect(ids.filter((id) => id.startsWith(`${label}-`))).toEqual(
        Array.from({ length: SAVES }, (_, index) => `${label}-${index}`),
      );
    }
    await check.close();
  }, 180_000);
});
