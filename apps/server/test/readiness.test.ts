import { BackendUnavailableError } from '@keepsake/core';
import { RedisServerProcess } from '@keepsake/redis/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load-config.js';
import { BackendReadiness } from '../src/health/backend-readiness.js';
import { call } from './helpers/http-client.js';
import { aliceToken, startTestServer, type TestServer } from './helpers/test-server.js';

/** A probe the test settles by hand, counting how often it was asked. */
function manualProbe() {
  const pending: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  return {
    calls: () => pending.length,
    probe: () =>
      new Promise<void>((resolve, reject) => {
        pending.push({ resolve, reject });
      }),
    settle(index: number, error?: Error) {
      if (error === undefined) pending[index]!.resolve();
      else pending[index]!.reject(error);
    },
  };
}

describe('BackendReadiness', () => {
  it('shares one probe between concurrent checks and reuses its result for cacheMs', async () => {
    let now = 1_000;
    const probe = manualProbe();
    const readiness = new BackendReadiness({
      probe: probe.probe,
      cacheMs: 1_000,
      timeoutMs: 60_000,
      now: () => now,
    });
    const first = readiness.check();
    const second = readiness.check();
    expect(probe.calls()).toBe(1);
    probe.settle(0);
    expect(await first).toEqual({ ready: true, checkedAt: 1_000 });
    expect(await second).toBe(await first);
    now += 999;
    expect(await readiness.check()).toEqual({ ready: true, checkedAt: 1_000 });
    expect(probe.calls()).toBe(1);
    now += 1;
    const third = readiness.check();
    expect(probe.calls()).toBe(2);
    probe.settle(1, new BackendUnavailableError('test', 'connection refused'));
    expect(await third).toMatchObject({ ready: false, reason: 'BackendUnavailableError' });
  });

  it('counts a probe that never answers as unreachable once timeoutMs passed', async () => {
    const probe = manualProbe();
    const readiness = new BackendReadiness({ probe: probe.probe, cacheMs: 0, timeoutMs: 20 });
    expect(await readiness.check()).toMatchObject({ ready: false, reason: 'timeout' });
    // The late answer changes nothing already reported, and the next check probes again.
    probe.settle(0);
    const next = readiness.check();
    expect(probe.calls()).toBe(2);
    probe.settle(1);
    expect(await next).toMatchObject({ ready: true });
  });
});

describe('readiness settings', () => {
  it('come from KEEPSAKE_READINESS_TIMEOUT_MS and _CACHE_MS; a bad value names the variable', () => {
    const config = loadConfig({
      env: { KEEPSAKE_READINESS_TIMEOUT_MS: '500', KEEPSAKE_READINESS_CACHE_MS: '0' },
    });
    expect(config.server).toMatchObject({ readinessTimeoutMs: 500, readinessCacheMs: 0 });
    expect(loadConfig({ env: {} }).server).toMatchObject({
      readinessTimeoutMs: 2_000,
      readinessCacheMs: 1_000,
    });
    expect(() => loadConfig({ env: { KEEPSAKE_READINESS_TIMEOUT_MS: '0' } })).toThrow(
      /KEEPSAKE_READINESS_TIMEOUT_MS/,
    );
  });
});

describe('/readyz on Redis', () => {
  let redis: RedisServerProcess;
  let harness: TestServer;
  beforeAll(async () => {
    redis = await RedisServerProcess.start({ persistence: 'aof-always' });
    harness = await startTestServer({
      config: {
        backend: { kind: 'redis', url: redis.url, keyPrefix: `readyz-${process.pid}` },
        server: { readinessCacheMs: 0, readinessTimeoutMs: 2_000 },
      },
    });
  }, 60_000);
  afterAll(async () => {
    await harness?.close();
    await redis?.dispose();
  });

  /** Asks /readyz until it answers `status` (each answer waits on a real probe). */
  async function readinessBecomes(status: number) {
    for (;;) {
      const response = await call(harness.url, '/readyz');
      if (response.status === status) return response;
      await new Promise((resolve) => setTimeout(resolve, 20)); // not a deadline: a pause between asks
    }
  }

  it('is 503 backend-unavailable while Redis is down and 200 once it is back; /healthz stays 200', async () => {
    expect(await call(harness.url, '/readyz')).toMatchObject({
      status: 200,
      body: { status: 'ready', backend: 'redis' },
    });
    await redis.stop();
    const down = await readinessBecomes(503);
    expect(down.body).toMatchObject({ status: 'backend-unavailable', backend: 'redis' });
    expect(typeof down.body.reason).toBe('string');
    expect(await call(harness.url, '/healthz')).toMatchObject({ status: 200 });
    // The API answers 503 meanwhile, and the metrics count it (issue 41 item 2).
    const refused = await call(harness.url, '/api/sessions', { token: aliceToken });
    expect(refused.status).toBe(503);
    const metrics = (await call(harness.url, '/metrics')).body as string;
    expect(metrics).toMatch(
      /keepsake_backend_errors_total\{code="backend_unavailable",backend="redis",instance="[^"]+"\} [1-9]/,
    );
    expect(metrics).toContain('# TYPE keepsake_durable_write_duration_seconds ');
    expect(metrics).not.toContain('keepsake_fsync_duration_seconds');
    await redis.start();
    expect((await readinessBecomes(200)).body).toMatchObject({ status: 'ready' });
  }, 120_000);
});
