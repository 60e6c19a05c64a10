import { describe, expect, it } from 'vitest';
import { chooseRedisTarget, containerEngineAvailable } from '../src/testing/index.js';

/** Which Redis a test run uses: the URL given, else testcontainers, else the local binary. */
describe('test Redis selection', () => {
  it('prefers KEEPSAKE_TEST_REDIS_URL, then a container engine, then redis-server', () => {
    expect(
      chooseRedisTarget({ env: { KEEPSAKE_TEST_REDIS_URL: 'redis://x:1' }, containerEngine: true }),
    ).toBe('url');
    expect(
      chooseRedisTarget({ env: { KEEPSAKE_TEST_REDIS_URL: ' ' }, containerEngine: true }),
    ).toBe('testcontainers');
    expect(chooseRedisTarget({ env: {}, containerEngine: false })).toBe('binary');
  });

  it('sees a container engine from DOCKER_HOST or a socket', () => {
    expect(containerEngineAvailable({ DOCKER_HOST: 'tcp://x:2375' }, () => false)).toBe(true);
    expect(containerEngineAvailable({}, (path) => path === '/var/run/docker.sock')).toBe(true);
    expect(containerEngineAvailable({}, () => false)).toBe(false);
  });
});
