import { RedisSentinelDeployment } from '@keepsake/redis/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBackendAdapter, describeBackend } from '../src/backends/backend-factory.js';
import { loadConfig } from '../src/config/load-config.js';
import { createServer } from '../src/server.js';

/**
 * KEEPSAKE_REDIS_MODE=sentinel (issue 40): the URL names the master group
 * (`redis://[user:password@]<name>`), KEEPSAKE_REDIS_SENTINELS the sentinels. Checked on a
 * real primary, replica and 3 sentinels started on loopback ports: the settings load (and
 * a missing sentinel list names its variable), the adapter finds the primary and keeps
 * writing across a failover, and startup names the variable to fix when no sentinel
 * answers or none monitors the group.
 */
let deployment: RedisSentinelDeployment;
beforeAll(async () => {
  deployment = await RedisSentinelDeployment.start({ replicas: 1, sentinels: 3 });
}, 120_000);
afterAll(async () => {
  await deployment?.dispose();
});

const sentinelList = () =>
  deployment.sentinelAddresses.map((sentinel) => `${sentinel.host}:${sentinel.port}`).join(',');

function sentinelEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    KEEPSAKE_LOG_LEVEL: 'silent',
    KEEPSAKE_BACKEND: 'redis',
    KEEPSAKE_REDIS_MODE: 'sentinel',
    KEEPSAKE_REDIS_URL: `redis://${deployment.name}`,
    KEEPSAKE_REDIS_SENTINELS: sentinelList(),
    KEEPSAKE_REDIS_KEY_PREFIX: `sentinel-${process.pid}`,
    ...extra,
  };
}

async function startupFailure(env: Record<string, string>): Promise<Error> {
  const server = await createServer(loadConfig({ env }), { logger: false }).catch(
    (error: Error) => error,
  );
  if (!(server instanceof Error)) {
    await server.close();
    throw new Error(`the server started with ${JSON.stringify(env)}`);
  }
  return server;
}

describe('KEEPSAKE_REDIS_MODE=sentinel', () => {
  it('reads the sentinel settings; a missing sentinel list names KEEPSAKE_REDIS_SENTINELS', () => {
    const config = loadConfig({
      env: {
        KEEPSAKE_BACKEND: 'redis',
        KEEPSAKE_REDIS_MODE: 'sentinel',
        KEEPSAKE_REDIS_URL: 'redis://:secret@keepsake',
        KEEPSAKE_REDIS_SENTINELS: '10.0.0.1:26379,10.0.0.2:26379',
        KEEPSAKE_REDIS_SENTINEL_PASSWORD: 'sentinel-secret',
        KEEPSAKE_REDIS_DURABILITY: 'replicas',
      },
    });
    expect(config.backend).toMatchObject({
      kind: 'redis',
      mode: 'sentinel',
      sentinels: '10.0.0.1:26379,10.0.0.2:26379',
      sentinelPassword: 'sentinel-secret',
      durability: 'replicas',
    });
    expect(describeBackend(config.backend)).toContain(
      'redis sentinel group keepsake via 10.0.0.1:26379,10.0.0.2:26379',
    );
    expect(describeBackend(config.backend)).not.toContain('secret');
    const base = { KEEPSAKE_BACKEND: 'redis', KEEPSAKE_REDIS_URL: 'redis://keepsake' };
    expect(() => loadConfig({ env: { ...base, KEEPSAKE_REDIS_MODE: 'sentinel' } })).toThrow(
      /KEEPSAKE_REDIS_SENTINELS/,
    );
    expect(() =>
      loadConfig({
        env: { ...base, KEEPSAKE_REDIS_MODE: 'sentinel', KEEPSAKE_REDIS_SENTINELS: 'no-port' },
      }),
    ).toThrow(/KEEPSAKE_REDIS_SENTINELS/);
    expect(() => loadConfig({ env: { ...base, KEEPSAKE_REDIS_SENTINELS: 'a:1' } })).toThrow(
      /KEEPSAKE_REDIS_SENTINELS.*sentinel/,
    );
  });

  it('B3: the adapter finds the primary through the sentinels and writes across a failover', async () => {
    const config = loadConfig({ env: sentinelEnv({ KEEPSAKE_REDIS_DURABILITY: 'replicas' }) });
    const adapter = createBackendAdapter(config.backend, 'alice');
    await adapter.open();
    const write = (revision: number) => ({
      kind: 'full' as const,
      revision,
      text: `{"r":${revision}}`,
    });
    await adapter.putDocument('sessions', 's1', write(1), {
      expectedRevision: null,
      durable: true,
    });
    await deployment.failover();
    // The first write after the failover may meet the lost connection (retryable); the
    // adapter reconnects to the new primary, probes it, and the write goes through.
    let result = null;
    for (let attempt = 0; result === null; attempt++) {
      result = await adapter
        .putDocument('sessions', 's1', write(2), { expectedRevision: 1, durable: true })
        .catch((error: { isRetryable?: boolean }) => {
          if (error.isRetryable !== true || attempt > 200) throw error;
          return new Promise<null>((resolve) => setTimeout(() => resolve(null), 25));
        });
    }
    expect(result).toEqual({ ok: true });
    expect((await adapter.getDocument('sessions', 's1'))?.revision).toBe(2);
    await adapter.close();
  }, 60_000);

  it('startup names KEEPSAKE_REDIS_SENTINELS when no sentinel answers, and the URL when none monitors the group', async () => {
    const silent = await startupFailure(sentinelEnv({ KEEPSAKE_REDIS_SENTINELS: '127.0.0.1:1' }));
    expect(silent.message).toMatch(/^KEEPSAKE_REDIS_SENTINELS=127\.0\.0\.1:1: no sentinel answers/);
    const unknown = await startupFailure(sentinelEnv({ KEEPSAKE_REDIS_URL: 'redis://elsewhere' }));
    expect(unknown.message).toMatch(
      /KEEPSAKE_REDIS_URL=redis:\/\/elsewhere names the Sentinel group 'elsewhere'/,
    );
  });

  it('a server starts in sentinel mode and serves a session', async () => {
    const server = await createServer(
      loadConfig({ env: sentinelEnv({ KEEPSAKE_TOKENS: 'alice:aaaaaaaaaaaaaaaaaaaa' }) }),
      { logger: false },
    );
    try {
      const response = await server.app.inject({
        method: 'POST',
        url: '/api/sessions',
        headers: { authorization: 'Bearer aaaaaaaaaaaaaaaaaaaa' },
        payload: { title: 'through sentinel' },
      });
      expect(response.statusCode, response.body).toBe(201);
    } finally {
      await server.close();
    }
  });
});
