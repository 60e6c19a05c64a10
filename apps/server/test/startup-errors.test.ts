import { InvalidConfigError } from '@keepsake/core';
import { RedisClusterProcesses, RedisServerProcess } from '@keepsake/redis/testing';
import { S3CapabilityError } from '@keepsake/s3';
import { containerEngineAvailable, type S3Target, startS3Target } from '@keepsake/s3/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3BackendSchema } from '../src/config/config-schema.js';
import { loadConfig } from '../src/config/load-config.js';
import { createServer } from '../src/server.js';
import { explainOpenFailure } from '../src/startup/explain-open-failure.js';
import { StartupError } from '../src/startup/startup-error.js';
import { runChildServerToExit } from './helpers/child-server.js';

/**
 * Issue 41 item 3: a server that cannot start says which setting to change, to what, with
 * secrets masked, instead of an adapter's option name or "UnknownError". Real servers: a
 * redis-server with and without AOF, a 3-node Redis Cluster, a Ceph RADOS Gateway.
 */
async function startupFailure(env: Record<string, string>): Promise<Error> {
  const config = loadConfig({ env: { KEEPSAKE_LOG_LEVEL: 'silent', ...env } });
  const server = await createServer(config, { logger: false }).catch((error: Error) => error);
  if (!(server instanceof Error)) {
    await server.close();
    throw new Error(`the server started with ${JSON.stringify(env)}`);
  }
  return server;
}

describe('Redis settings', () => {
  let withAof: RedisServerProcess;
  let withoutAof: RedisServerProcess;
  let cluster: RedisClusterProcesses;
  beforeAll(async () => {
    [withAof, withoutAof, cluster] = await Promise.all([
      RedisServerProcess.start({ persistence: 'aof-always' }),
      RedisServerProcess.start({ persistence: 'none' }),
      RedisClusterProcesses.start(),
    ]);
  }, 120_000);
  afterAll(async () => {
    await Promise.all([withAof?.dispose(), withoutAof?.dispose(), cluster?.dispose()]);
  });

  const redis = (env: Record<string, string>) => ({ KEEPSAKE_BACKEND: 'redis', ...env });
  // A user the server does not have: AUTH answers WRONGPASS, as for a wrong password.
  const withPassword = (url: string, password: string) =>
    url.replace('redis://', `redis://nobody:${password}@`);

  it('a URL without redis:// names KEEPSAKE_REDIS_URL when the configuration loads', () => {
    let error: unknown;
    try {
      loadConfig({ env: redis({ KEEPSAKE_REDIS_URL: 'localhost:6391' }) });
    } catch (thrown) {
      error = thrown;
    }
    expect(InvalidConfigError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/KEEPSAKE_REDIS_URL.*redis:\/\//);
  });

  it('nothing listening: names the variable and the socket error', async () => {
    const error = await startupFailure(redis({ KEEPSAKE_REDIS_URL: 'redis://127.0.0.1:1' }));
    expect(error).toBeInstanceOf(StartupError);
    expect(error.message).toMatch(/^KEEPSAKE_REDIS_URL=redis:\/\/127\.0\.0\.1:1.*ECONNREFUSED/);
  });

  it('a wrong password: says the credentials were refused, never prints the password', async () => {
    const error = await startupFailure(
      redis({ KEEPSAKE_REDIS_URL: withPassword(withAof.url, 'wrong-secret') }),
    );
    expect(error).toBeInstanceOf(StartupError);
    expect(error.message).toMatch(/refused the credentials/);
    expect(error.message).not.toContain('wrong-secret');
    expect(error.message).toContain('****');
  });

  it('cluster mode on a standalone server, standalone mode on a cluster node: names KEEPSAKE_REDIS_MODE', async () => {
    const standalone = await startupFailure(
      redis({
        KEEPSAKE_REDIS_URL: withAof.url,
        KEEPSAKE_REDIS_MODE: 'cluster',
      }),
    );
    expect(standalone.message).toMatch(/Set KEEPSAKE_REDIS_MODE=standalone/);
    const node = await startupFailure(redis({ KEEPSAKE_REDIS_URL: cluster.nodes[0]!.url }));
    expect(node.message).toMatch(/node of a Redis Cluster.*Set KEEPSAKE_REDIS_MODE=cluster/);
  });

  it('a server without AOF under durability aof: names KEEPSAKE_REDIS_DURABILITY and the fix', async () => {
    const error = await startupFailure(redis({ KEEPSAKE_REDIS_URL: withoutAof.url }));
    expect(error).toBeInstanceOf(StartupError);
    expect(error.message).toMatch(/KEEPSAKE_REDIS_DURABILITY.*appendonly yes/);
  });

  it('the process exits 1 printing the message alone', async () => {
    const { code, output } = await runChildServerToExit(
      redis({ KEEPSAKE_REDIS_URL: 'redis://127.0.0.1:1' }),
    );
    expect(code).toBe(1);
    expect(output.trim()).toMatch(/^KEEPSAKE_REDIS_URL=redis:\/\/127\.0\.0\.1:1: nothing answers/);
  }, 60_000);
});

describe('S3 capability hints', () => {
  it("name the server's variables instead of the adapter's options", () => {
    const hint = new S3CapabilityError(
      'if-match',
      'http://rgw:7480',
      "open: http://rgw:7480 does not honour conditional writes: set the option `compatibility: 'ceph-rgw'`",
    );
    const explained = explainOpenFailure(hint, {
      ...s3BackendSchema.parse({ kind: 's3', bucket: 'chats', endpoint: 'http://rgw:7480' }),
    });
    expect(explained?.message).toMatch(/KEEPSAKE_S3_COMPATIBILITY=ceph-rgw/);
    expect(explained?.message).not.toMatch(/compatibility: /);
  });
});

describe('S3 settings', () => {
  let target: S3Target;
  beforeAll(async () => {
    target = await startS3Target({ env: process.env, containerEngine: containerEngineAvailable() });
  }, 180_000);
  afterAll(() => target?.dispose());

  const s3 = (env: Record<string, string>) => ({
    KEEPSAKE_BACKEND: 's3',
    KEEPSAKE_S3_BUCKET: target.bucket,
    KEEPSAKE_S3_ENDPOINT: target.endpoint,
    KEEPSAKE_S3_REGION: target.region,
    KEEPSAKE_S3_ACCESS_KEY_ID: target.credentials.accessKeyId,
    KEEPSAKE_S3_SECRET_ACCESS_KEY: target.credentials.secretAccessKey,
    KEEPSAKE_S3_COMPATIBILITY: target.compatibility,
    ...env,
  });

  it('a wrong secret or key id: names both variables, masks them, says 403', async () => {
    for (const env of [
      { KEEPSAKE_S3_SECRET_ACCESS_KEY: 'not-the-secret' },
      { KEEPSAKE_S3_ACCESS_KEY_ID: 'NOBODY-AT-ALL' },
    ]) {
      const error = await startupFailure(s3(env));
      expect(error).toBeInstanceOf(StartupError);
      expect(error.message).toMatch(
        /refused the credentials.*KEEPSAKE_S3_SECRET_ACCESS_KEY=\*\*\*\*/,
      );
      expect(error.message).toMatch(/403/);
      expect(error.message).not.toContain('not-the-secret');
      expect(error.message).not.toContain(target.credentials.secretAccessKey);
    }
  });

  it('a missing bucket names KEEPSAKE_S3_CREATE_BUCKET, not the adapter option', async () => {
    const error = await startupFailure(s3({ KEEPSAKE_S3_BUCKET: 'no-such-bucket-here' }));
    expect(error.message).toMatch(/KEEPSAKE_S3_CREATE_BUCKET=true/);
    expect(error.message).not.toMatch(/createBucket/);
  });

  it('nothing listening at the endpoint names KEEPSAKE_S3_ENDPOINT', async () => {
    const error = await startupFailure(s3({ KEEPSAKE_S3_ENDPOINT: 'http://127.0.0.1:1' }));
    expect(error).toBeInstanceOf(StartupError);
    expect(error.message).toMatch(
      /KEEPSAKE_S3_ENDPOINT=http:\/\/127\.0\.0\.1:1.*Check KEEPSAKE_S3_ENDPOINT/,
    );
  });
});
