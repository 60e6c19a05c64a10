import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidConfigError } from '@keepsake/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBackendAdapter } from '../src/backends/backend-factory.js';
import { configSchema } from '../src/config/config-schema.js';
import { loadConfig } from '../src/config/load-config.js';

let directory: string;
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'keepsake-config-test-'));
});
afterAll(() => rm(directory, { recursive: true, force: true }));

function configError(env: Record<string, string>, file?: string): InvalidConfigError {
  try {
    loadConfig({ env, ...(file ? { file } : {}) });
  } catch (error) {
    expect(InvalidConfigError.isInstance(error)).toBe(true);
    return error as InvalidConfigError;
  }
  throw new Error('expected loadConfig to throw');
}

describe('configuration', () => {
  it('defaults: fs backend in ./data, scripted agent, open mode on loopback, port 3000', () => {
    const config = loadConfig({ env: {} });
    expect(config.backend).toEqual({ kind: 'fs', directory: './data' });
    expect(config.agent.kind).toBe('scripted');
    expect(config.auth.tokens).toEqual([]);
    expect(config.server).toMatchObject({ port: 3000, host: '127.0.0.1' });
  });

  it('reads PORT, the data directory and namespace:token pairs from the environment', () => {
    const config = loadConfig({
      env: {
        PORT: '8123',
        KEEPSAKE_DATA_DIR: '/var/lib/keepsake',
        KEEPSAKE_TOKENS: 'alice:aaaaaaaaaaaaaaaaaaaa, bob:bbbbbbbbbbbbbbbbbbbb',
        KEEPSAKE_JOURNAL_DURABILITY: 'each',
      },
    });
    expect(config.server.port).toBe(8123);
    expect(config.backend).toEqual({ kind: 'fs', directory: '/var/lib/keepsake' });
    expect(config.auth.tokens).toEqual([
      { namespace: 'alice', token: 'aaaaaaaaaaaaaaaaaaaa' },
      { namespace: 'bob', token: 'bbbbbbbbbbbbbbbbbbbb' },
    ]);
    expect(config.store.journalDurability).toBe('each');
  });

  it('uses the OpenAI-compatible agent once its URL and key are set', () => {
    const config = loadConfig({
      env: {
        KEEPSAKE_OPENAI_BASE_URL: 'http://127.0.0.1:9999/v1',
        KEEPSAKE_OPENAI_API_KEY: 'sk-test',
      },
    });
    expect(config.agent).toMatchObject({ kind: 'openai', model: 'gpt-4o-mini' });
  });

  it('reads a JSON file named by KEEPSAKE_CONFIG, with the environment on top', async () => {
    const file = join(directory, 'config.json');
    await writeFile(
      file,
      JSON.stringify({
        server: { port: 4000 },
        backend: { kind: 'fs', directory: '/srv/keepsake' },
        auth: { tokens: [{ namespace: 'team', token: 'team-token-0123456789' }] },
      }),
    );
    const config = loadConfig({ env: { KEEPSAKE_CONFIG: file, PORT: '4001' } });
    expect(config.server.port).toBe(4001);
    expect(config.backend).toEqual({ kind: 'fs', directory: '/srv/keepsake' });
    expect(config.auth.tokens[0]?.namespace).toBe('team');
  });

  it('names the variable to fix for every bad value', () => {
    expect(configError({ KEEPSAKE_BACKEND: 'mongo' }).message).toContain('KEEPSAKE_BACKEND');
    expect(configError({ PORT: 'eighty' }).message).toContain('PORT must be a whole number');
    expect(configError({ PORT: '70000' }).message).toMatch(/PORT: .*65535/);
    expect(configError({ KEEPSAKE_TOKENS: 'alice:short' }).message).toMatch(
      /KEEPSAKE_TOKENS \(0\.token\): must be at least 16 characters/,
    );
    expect(configError({ KEEPSAKE_TOKENS: 'no-namespace-here-at-all' }).message).toContain(
      'namespace:token',
    );
    expect(configError({ KEEPSAKE_TOKENS: 'a/b:0123456789abcdefgh' }).message).toContain(
      'KEEPSAKE_TOKENS (0.namespace)',
    );
    expect(configError({ KEEPSAKE_OPENAI_BASE_URL: 'http://127.0.0.1:9999/v1' }).message).toContain(
      'KEEPSAKE_OPENAI_API_KEY',
    );
    expect(configError({ KEEPSAKE_BACKEND: 'redis' }).message).toContain('KEEPSAKE_REDIS_URL');
    expect(configError({ KEEPSAKE_JOURNAL_DURABILITY: 'sometimes' }).message).toContain(
      'KEEPSAKE_JOURNAL_DURABILITY',
    );
  });

  it('refuses open mode on an address reachable from other machines', () => {
    const message = configError({ HOST: '0.0.0.0' }).message;
    expect(message).toContain('open mode is only allowed on a loopback host');
    expect(() =>
      loadConfig({ env: { HOST: '0.0.0.0', KEEPSAKE_TOKENS: 'ops:0123456789abcdefgh' } }),
    ).not.toThrow();
  });

  it('reports a missing or malformed configuration file by name', async () => {
    expect(configError({}, join(directory, 'missing.json')).message).toContain('missing.json');
    const broken = join(directory, 'broken.json');
    await writeFile(broken, '{ not json');
    expect(configError({}, broken).message).toContain('not valid JSON');
    const wrongShape = join(directory, 'wrong.json');
    await writeFile(wrongShape, JSON.stringify({ server: { port: 'x' } }));
    expect(configError({}, wrongShape).message).toContain(`${wrongShape} → server.port`);
  });

  it('H: the backend factory gives each namespace its own storage root', () => {
    const config = configSchema.parse({ backend: { kind: 'fs', directory: directory } });
    const alice = createBackendAdapter(config.backend, 'alice');
    const bob = createBackendAdapter(config.backend, 'bob');
    expect(alice.name).toBe('fs');
    expect(alice).not.toBe(bob);
    const redis = configSchema.parse({ backend: { kind: 'redis', url: 'redis://127.0.0.1:6379' } });
    expect(createBackendAdapter(redis.backend, 'alice').name).toBe('redis');
  });
});
