import { existsSync } from 'node:fs';
import { RedisServerProcess, type TestPersistence } from './redis-server.js';

/**
 * Where an adapter test finds its Redis (house style: a `KEEPSAKE_TEST_*_URL` reuses a
 * running server; otherwise the harness starts one):
 * - `url`: KEEPSAKE_TEST_REDIS_URL names a server to use as it is;
 * - `testcontainers`: a container engine is present (DOCKER_HOST, or a Docker socket), so
 *   testcontainers' Redis module starts one;
 * - `binary`: `redis-server` is on the machine, and the harness runs it.
 */
export type RedisTargetKind = 'url' | 'testcontainers' | 'binary';

export interface RedisTargetEnvironment {
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Whether a container engine answers here (a Docker socket exists, DOCKER_HOST is set). */
  readonly containerEngine: boolean;
}

export function chooseRedisTarget(environment: RedisTargetEnvironment): RedisTargetKind {
  const url = environment.env.KEEPSAKE_TEST_REDIS_URL;
  if (url !== undefined && url.trim() !== '') return 'url';
  if (environment.containerEngine) return 'testcontainers';
  return 'binary';
}

/** A Redis for one test file: its URL, and how to let go of it. */
export interface RedisTarget {
  readonly kind: RedisTargetKind;
  readonly url: string;
  /** The server process when the harness started it (crash tests need one). */
  readonly server: RedisServerProcess | null;
  dispose(): Promise<void>;
}

/**
 * Starts (or names) the Redis a test file uses. The testcontainers path loads
 * `@testcontainers/redis` only when chosen; it is not a dependency of this package, so a
 * machine with a container engine installs it to use it.
 */
export async function startRedisTarget(
  environment: RedisTargetEnvironment,
  persistence: TestPersistence = 'aof-always',
): Promise<RedisTarget> {
  const kind = chooseRedisTarget(environment);
  if (kind === 'url') {
    return {
      kind,
      url: environment.env.KEEPSAKE_TEST_REDIS_URL!.trim(),
      server: null,
      dispose: async () => undefined,
    };
  }
  if (kind === 'testcontainers') {
    const moduleName = '@testcontainers/redis';
    const { RedisContainer } = (await import(moduleName)) as {
      RedisContainer: new (
        image: string,
      ) => {
        withCommand(command: string[]): {
          start(): Promise<{ getConnectionUrl(): string; stop(): Promise<unknown> }>;
        };
      };
    };
    const container = await new RedisContainer('redis:7')
      .withCommand([
        'redis-server',
        '--appendonly',
        persistence === 'none' ? 'no' : 'yes',
        '--appendfsync',
        persistence === 'aof-everysec' ? 'everysec' : 'always',
      ])
      .start();
    return {
      kind,
      url: container.getConnectionUrl(),
      server: null,
      dispose: async () => {
        await container.stop();
      },
    };
  }
  const server = await RedisServerProcess.start({ persistence });
  return { kind, url: server.url, server, dispose: () => server.dispose() };
}

/** Whether a container engine is reachable here: DOCKER_HOST, or a Docker socket on disk. */
export function containerEngineAvailable(
  env: Readonly<Record<string, string | undefined>> = process.env,
  socketExists: (path: string) => boolean = existsSync,
): boolean {
  if (env.DOCKER_HOST !== undefined && env.DOCKER_HOST !== '') return true;
  return socketExists('/var/run/docker.sock') || socketExists('/run/podman/podman.sock');
}
