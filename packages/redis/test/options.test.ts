import { type AddressInfo, createServer } from 'node:net';
import { BackendUnavailableError, InvalidConfigError } from '@keepsake/core';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { redisAdapter } from '../src/index.js';

/** Options are validated when the adapter is made; each mistake names its option. */
function invalid(options: unknown): string {
  try {
    redisAdapter(options as never);
  } catch (error) {
    expect(InvalidConfigError.isInstance(error), String(error)).toBe(true);
    return (error as Error).message;
  }
  throw new Error('the options were accepted');
}

describe('redisAdapter options', () => {
  it('needs exactly one of client, url and clusterNodes', () => {
    expect(invalid({})).toContain(
      'one of `client`, `url`, `clusterNodes` or `sentinels` is required',
    );
    expect(invalid({ url: 'redis://a:1', clusterNodes: ['a:1'] })).toContain(
      'not `url` and `clusterNodes`',
    );
    expect(invalid({ url: 'http://a:1' })).toContain('option `url`');
    expect(invalid({ clusterNodes: ['no-port'] })).toContain('option `clusterNodes.0`');
    expect(invalid({ client: { get: () => 1 } })).toContain('option `client`');
  });

  it('Sentinel: needs the master group name, and its options only with `sentinels`', () => {
    expect(invalid({ sentinels: ['127.0.0.1:26379'] })).toContain(
      'option `name` is invalid: is required with `sentinels`',
    );
    expect(invalid({ sentinels: [], name: 'keepsake' })).toContain('option `sentinels`');
    expect(invalid({ sentinels: ['no-port'], name: 'keepsake' })).toContain('option `sentinels.0`');
    expect(invalid({ sentinels: ['a:1'], name: 'has space' })).toContain('option `name`');
    expect(invalid({ url: 'redis://a:1', name: 'keepsake' })).toContain(
      'option `name` is invalid: applies to `sentinels` only',
    );
    expect(invalid({ url: 'redis://a:1', sentinelPassword: 'secret' })).toContain(
      'option `sentinelPassword`',
    );
    expect(invalid({ url: 'redis://a:1', sentinels: ['a:1'], name: 'keepsake' })).toContain(
      'not `url` and `sentinels`',
    );
    const adapter = redisAdapter({ sentinels: ['127.0.0.1:1'], name: 'keepsake', connections: 2 });
    expect(adapter.clients).toHaveLength(2);
  });

  it('refuses a key prefix that would move the hash tag, and a client with its own prefix', () => {
    expect(invalid({ url: 'redis://a:1', keyPrefix: 'app:{x}' })).toContain('option `keyPrefix`');
    expect(invalid({ url: 'redis://a:1', keyPrefix: '' })).toContain('option `keyPrefix`');
    const client = new Redis({ lazyConnect: true, keyPrefix: 'app:' });
    expect(invalid({ client })).toContain('keyPrefix');
    client.disconnect();
  });

  it('checks durability settings, and that a WAIT fits inside the socket timeout', () => {
    expect(invalid({ url: 'redis://a:1', durability: 'fsync' })).toContain('option `durability`');
    expect(invalid({ url: 'redis://a:1', replicas: 0 })).toContain('option `replicas`');
    expect(
      invalid({ url: 'redis://a:1', durabilityTimeoutMs: 5_000, socketTimeoutMs: 5_000 }),
    ).toContain('must exceed durabilityTimeoutMs');
    expect(invalid({ url: 'redis://a:1', surprise: true })).toContain('surprise');
  });

  it('checks `connections`: a whole number from 1 to 64, and only with `url` or `sentinels`', () => {
    expect(invalid({ url: 'redis://a:1', connections: 0 })).toContain('option `connections`');
    expect(invalid({ url: 'redis://a:1', connections: 65 })).toContain('option `connections`');
    expect(invalid({ url: 'redis://a:1', connections: 1.5 })).toContain('option `connections`');
    expect(invalid({ url: 'redis://a:1', connections: '4' })).toContain('option `connections`');
    expect(invalid({ clusterNodes: ['a:1'], connections: 2 })).toContain(
      'option `connections` is invalid: applies to `url` and `sentinels` only',
    );
    const client = new Redis({ lazyConnect: true });
    expect(invalid({ client, connections: 2 })).toContain('applies to `url` and `sentinels` only');
    client.disconnect();
  });

  it('makes `connections` clients for a url (4 by default), one for a client passed in', async () => {
    const byDefault = redisAdapter({ url: 'redis://127.0.0.1:1' });
    const two = redisAdapter({ url: 'redis://127.0.0.1:1', connections: 2 });
    const client = new Redis({ lazyConnect: true });
    const adopted = redisAdapter({ client });
    expect(byDefault.clients).toHaveLength(4);
    expect(two.clients).toHaveLength(2);
    expect(adopted.clients).toEqual([client]);
    await Promise.all([byDefault.close(), two.close(), adopted.close()]);
    expect(client.status).toBe('wait');
    client.disconnect();
  });

  it('declares capabilities from the configured level', () => {
    const adapter = redisAdapter({ url: 'redis://127.0.0.1:1', durability: 'replicas' });
    expect(adapter.capabilities).toMatchObject({
      durability: 'replicated',
      conditionalWrites: true,
      clusterSafeKeys: true,
      gaps: [],
    });
    void adapter.close();
  });
});

describe('connecting', () => {
  it('a server that cannot be reached fails open() with a retryable BackendUnavailableError that names the last connection error', async () => {
    const port = await closedPort();
    const adapter = redisAdapter({
      url: `redis://127.0.0.1:${port}`,
      keyPrefix: 'unreachable',
      connectTimeoutMs: 300,
    });
    const error = await adapter.open().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    await adapter.close();
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    const unavailable = error as BackendUnavailableError;
    expect(unavailable.isRetryable).toBe(true);
    expect(unavailable.message).toMatch(/last error: .*ECONNREFUSED/);
    expect((unavailable.cause as Error | undefined)?.message).toMatch(/ECONNREFUSED/);
  });
});

/** A loopback port nothing listens on: taken from the OS, then let go. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
