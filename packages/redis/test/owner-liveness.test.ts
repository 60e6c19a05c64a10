import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisAdapter, redisAdapter } from '../src/index.js';
import { RedisOwnerLiveness } from '../src/owner-liveness.js';
import { RedisServerProcess } from '../src/testing/index.js';

/**
 * F1, E9: the owner of a run is asked about through the server's client list. A real
 * redis-server and real processes: one SIGKILLed (gone once missing for the confirmation
 * time), one whose event loop never yields again (alive: its connections stay open and
 * nothing has to be renewed), and an adapter closed in this process.
 */
const hooks = fileURLToPath(new URL('./fixtures/ts-hooks.mjs', import.meta.url));
const child = fileURLToPath(new URL('./fixtures/owner-child.ts', import.meta.url));

let server: RedisServerProcess;
let checker: RedisAdapter;
const children: ChildProcess[] = [];
beforeAll(async () => {
  server = await RedisServerProcess.start({ persistence: 'none' });
  checker = redisAdapter({ url: server.url, keyPrefix: 'owner-liveness', durability: 'none' });
  await checker.open();
});
afterAll(async () => {
  for (const started of children) if (started.exitCode === null) started.kill('SIGKILL');
  await checker.close();
  await server.dispose();
});

async function startOwner(
  mode: 'wait' | 'stall',
): Promise<{ child: ChildProcess; ownerId: string }> {
  const owner = spawn(process.execPath, ['--import', hooks, child, server.url, mode], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
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
  return { child: owner, ownerId };
}

/** A checker over the test's connection with a clock the test moves. */
function checkerWithClock() {
  const clock = { now: 0 };
  const liveness = new RedisOwnerLiveness(
    () => checker.client,
    1_000,
    () => clock.now,
  );
  return { clock, liveness };
}

describe('Redis owner liveness', () => {
  it('an adapter names itself as the owner and is alive to itself', async () => {
    expect(checker.liveness?.ownerId).toMatch(/^keepsake-owner:[0-9a-f]{24}$/);
    expect(await checker.liveness!.ownerState(checker.liveness!.ownerId)).toBe('alive');
    expect(await checker.liveness!.ownerState('not-an-owner-of-this-adapter')).toBe('unknown');
  });

  it('a SIGKILLed owner is gone once it has been missing for confirmMs, not before', async () => {
    const { child: owner, ownerId } = await startOwner('wait');
    const { clock, liveness } = checkerWithClock();
    expect(await liveness.ownerState(ownerId)).toBe('alive');
    owner.kill('SIGKILL');
    await once(owner, 'exit');
    // The kernel closes its sockets; Redis forgets the client as it reads the close.
    let state = await liveness.ownerState(ownerId);
    while (state === 'alive') state = await liveness.ownerState(ownerId);
    expect(state).toBe('unknown');
    clock.now += 999;
    expect(await liveness.ownerState(ownerId)).toBe('unknown');
    clock.now += 1;
    expect(await liveness.ownerState(ownerId)).toBe('gone');
  });

  it('an owner whose event loop never yields again stays alive', async () => {
    const { child: owner, ownerId } = await startOwner('stall');
    const { clock, liveness } = checkerWithClock();
    for (let check = 0; check < 5; check++) {
      expect(await liveness.ownerState(ownerId)).toBe('alive');
      clock.now += 10_000;
    }
    owner.kill('SIGKILL');
    await once(owner, 'exit');
  });

  it('an adapter closed in this process is gone after confirmMs; a client passed in has no liveness', async () => {
    const owner = redisAdapter({
      url: server.url,
      keyPrefix: 'owner-liveness',
      durability: 'none',
    });
    await owner.open();
    const ownerId = owner.liveness!.ownerId;
    const { clock, liveness } = checkerWithClock();
    expect(await liveness.ownerState(ownerId)).toBe('alive');
    await owner.close();
    let state = await liveness.ownerState(ownerId);
    while (state === 'alive') state = await liveness.ownerState(ownerId);
    clock.now += 1_000;
    expect(await liveness.ownerState(ownerId)).toBe('gone');
    const adopted = redisAdapter({ client: checker.client as never, keyPrefix: 'other' });
    expect(adopted.liveness).toBeUndefined();
  });
});
