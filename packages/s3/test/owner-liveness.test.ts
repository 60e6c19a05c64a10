import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type S3Adapter, s3Adapter } from '../src/index.js';
import { type S3Fixture, startFixture, uniquePrefix } from './helpers/s3-fixture.js';

/**
 * F1, E9 on S3: an owner is alive while its lease (an object renewed by a worker thread) is
 * younger than expireAfterMs by the server's clock. Real processes on a real RGW: one
 * SIGKILLed (gone once its lease lapses, not before), one whose event loop never yields
 * again (alive: the worker keeps renewing), and an adapter closed in this process (gone at
 * once: its lease is removed, while the other adapters of its process, whose leases the same
 * thread renews, stay alive). A client passed in gives no liveness.
 */
const hooks = fileURLToPath(new URL('./fixtures/ts-hooks.mjs', import.meta.url));
const child = fileURLToPath(new URL('./fixtures/owner-child.ts', import.meta.url));
const LEASE = { renewIntervalMs: 500, expireAfterMs: 2_000 };

let fixture: S3Fixture;
let checker: S3Adapter;
let prefix: string;
const children: ChildProcess[] = [];

function ownSettings() {
  const { target } = fixture;
  return {
    endpoint: target.endpoint,
    region: target.region,
    credentials: target.credentials,
    bucket: target.bucket,
    prefix,
    compatibility: target.compatibility,
    ownerLease: LEASE,
  };
}

beforeAll(async () => {
  fixture = await startFixture();
  prefix = uniquePrefix('owner-liveness');
  checker = s3Adapter(ownSettings());
  await checker.open();
});
afterAll(async () => {
  for (const started of children) if (started.exitCode === null) started.kill('SIGKILL');
  await checker?.close();
  await fixture?.dispose();
});

async function startOwner(
  mode: 'wait' | 'stall',
): Promise<{ owner: ChildProcess; ownerId: string }> {
  const owner = spawn(
    process.execPath,
    ['--disable-warning=ExperimentalWarning', '--import', hooks, child, mode],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: {
        ...process.env,
        KEEPSAKE_TEST_S3_CHILD: JSON.stringify(ownSettings()),
        AWS_EC2_METADATA_DISABLED: 'true',
        NODE_COMPILE_CACHE: join(tmpdir(), 'keepsake-s3-test-cache'),
      },
    },
  );
  children.push(owner);
  let output = '';
  owner.stdout!.setEncoding('utf8');
  const ownerId = await new Promise<string>((resolve, reject) => {
    owner.stdout!.on('data', (chunk: string) => {
      output += chunk;
      const match = /owner (\S+)\n/.exec(output);
      if (match) resolve(match[1]!);
    });
    owner.once('exit', (code) => reject(new Error(`owner child exited early (${code})`)));
  });
  return { owner, ownerId };
}

/** Asks until the answer is not `alive`; the number of seconds that took. */
async function untilNotAlive(ownerId: string): Promise<{ state: string; seconds: number }> {
  const started = performance.now();
  let state = await checker.liveness!.ownerState(ownerId);
  while (state === 'alive') {
    await new Promise((resolve) => setTimeout(resolve, 200));
    state = await checker.liveness!.ownerState(ownerId);
  }
  return { state, seconds: (performance.now() - started) / 1000 };
}

describe('S3 owner liveness (F1, E9)', () => {
  it('an adapter names itself as the owner and is alive to itself; other ids are unknown', async () => {
    expect(checker.liveness?.ownerId).toMatch(/^s3-owner:[0-9a-f]{24}$/);
    expect(await checker.liveness!.ownerState(checker.liveness!.ownerId)).toBe('alive');
    expect(await checker.liveness!.ownerState('keepsake-owner:0123')).toBe('unknown');
  });

  it('F1: a SIGKILLed owner is alive until its lease lapses by the server clock, then gone', async () => {
    const { owner, ownerId } = await startOwner('wait');
    expect(await checker.liveness!.ownerState(ownerId)).toBe('alive');
    owner.kill('SIGKILL');
    await once(owner, 'exit');
    // Right after the kill the lease is younger than expireAfterMs: not yet gone.
    expect(await checker.liveness!.ownerState(ownerId)).toBe('alive');
    const { state } = await untilNotAlive(ownerId);
    expect(state).toBe('gone');
  });

  it('F1: an owner whose event loop never yields again stays alive (its worker renews)', async () => {
    const { owner, ownerId } = await startOwner('stall');
    // Three times the lease's expiry, asked all along: never anything but alive.
    const until = performance.now() + 3 * LEASE.expireAfterMs + 1_000;
    while (performance.now() < until) {
      expect(await checker.liveness!.ownerState(ownerId)).toBe('alive');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    owner.kill('SIGKILL');
    await once(owner, 'exit');
  });

  it('F1: adapters of one process share the lease thread: closing one leaves the others renewed', async () => {
    const first = s3Adapter(ownSettings());
    const second = s3Adapter(ownSettings());
    await Promise.all([first.open(), second.open()]);
    try {
      await first.close();
      expect(await checker.liveness!.ownerState(first.liveness!.ownerId)).toBe('gone');
      const until = performance.now() + 2 * LEASE.expireAfterMs + 1_000;
      while (performance.now() < until) {
        expect(await checker.liveness!.ownerState(second.liveness!.ownerId)).toBe('alive');
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    } finally {
      await second.close();
    }
    expect(await checker.liveness!.ownerState(second.liveness!.ownerId)).toBe('gone');
    expect(await checker.liveness!.ownerState(checker.liveness!.ownerId)).toBe('alive');
  });

  it('F1: an adapter closed in this process is gone at once; a client passed in gives no liveness', async () => {
    const owner = s3Adapter(ownSettings());
    await owner.open();
    const ownerId = owner.liveness!.ownerId;
    expect(await checker.liveness!.ownerState(ownerId)).toBe('alive');
    await owner.close();
    expect(await checker.liveness!.ownerState(ownerId)).toBe('gone');
    const adopted = s3Adapter({ ...fixture.options('owner-adopted') });
    expect(adopted.liveness).toBeUndefined();
    await adopted.close();
  });
});
