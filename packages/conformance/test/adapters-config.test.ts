import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidConfigError } from '@keepsake/core';
import { afterAll, expect, it } from 'vitest';
import { readAdaptersConfig } from '../src/report/adapters-config.js';

const directory = mkdtempSync(join(tmpdir(), 'keepsake-report-config-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function writeList(adapters: unknown[]): string {
  const file = join(directory, `list-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify({ adapters }));
  return file;
}

it('reads a third-party list: directories relative to the file', async () => {
  mkdirSync(join(directory, 'mine/test'), { recursive: true });
  writeFileSync(join(directory, 'mine/test/conformance.test.ts'), '');
  const file = writeList([
    { name: 'mine', directory: 'mine', testFile: 'test/conformance.test.ts' },
  ]);
  expect(await readAdaptersConfig(file)).toEqual([
    { name: 'mine', directory: join(directory, 'mine'), testFile: 'test/conformance.test.ts' },
  ]);
});

it('refuses, by name, an adapter whose test file or directory is missing', async () => {
  const file = writeList([{ name: 'memory', directory: '.', testFile: 'test/memory.test.ts' }]);
  const error = await readAdaptersConfig(file).catch((caught: unknown) => caught);
  expect(InvalidConfigError.isInstance(error)).toBe(true);
  expect((error as Error).message).toContain('adapter "memory" cannot run: its test file');
  expect((error as Error).message).toContain('keepsake-conformance-report.json');
  const noDirectory = writeList([{ name: 'fs', directory: '../fs-nowhere', testFile: 'x.ts' }]);
  await expect(readAdaptersConfig(noDirectory)).rejects.toThrow(
    /adapter "fs" cannot run: its directory/,
  );
});
