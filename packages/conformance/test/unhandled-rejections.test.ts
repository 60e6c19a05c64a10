import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The process-level check (issue 14): every test run of this repository treats an
 * unhandled rejection as fatal, also one raised after a file's last test finished. Each
 * case runs vitest as a child process, with this package's own settings, on one fixture
 * file, and reads its exit code.
 */
const packageDirectory = fileURLToPath(new URL('..', import.meta.url));
const fixtureConfig = join(packageDirectory, 'test/fixtures/unhandled-rejection/vitest.config.ts');
const vitestEntry = join(
  dirname(createRequire(import.meta.url).resolve('vitest/package.json')),
  'vitest.mjs',
);

function runFixture(name: string): { status: number | null; output: string } {
  const child = spawnSync(
    process.execPath,
    [vitestEntry, 'run', '--config', fixtureConfig, `test/fixtures/unhandled-rejection/${name}`],
    { cwd: packageDirectory, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1', CI: '1' } },
  );
  return { status: child.status, output: `${child.stdout}\n${child.stderr}` };
}

describe('unhandled rejections fail the test run', () => {
  it('a rejection raised by a timer after the last test finished fails the run', () => {
    const { status, output } = runFixture('leaks-after-its-test.fixture.ts');
    expect(output).toContain('rejected after the test finished (fixture)');
    expect(status, output).toBe(1);
  });

  it('a rejection at the end of an I/O chain after the last test fails the run', () => {
    const { status, output } = runFixture('leaks-from-io.fixture.ts');
    expect(output).toContain('rejected at the end of an I/O chain (fixture)');
    expect(status, output).toBe(1);
  });

  it('a file that leaks nothing passes (the check itself adds no failure)', () => {
    const { status, output } = runFixture('leaks-nothing.fixture.ts');
    expect(status, output).toBe(0);
  });
});
