import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';

const bin = fileURLToPath(new URL('../bin/keepsake-conformance.js', import.meta.url));
const initializer = fileURLToPath(new URL('./fixtures/memory-initializer.ts', import.meta.url));
const callersDirectory = mkdtempSync(join(tmpdir(), 'keepsake-conformance-bin-'));

afterAll(() => {
  rmSync(callersDirectory, { recursive: true, force: true });
});

// Issue 42 item 6: `--output-file runs/x.json` wrote into node_modules/@keepsake/conformance/
// (vitest's root); a relative path is the caller's.
it('keepsake-conformance writes --output-file relative to the directory it was run from', () => {
  const child = spawnSync(
    process.execPath,
    [
      bin,
      initializer,
      '--clauses',
      'A1',
      '-t',
      'A1: ids',
      '--reporter',
      'json',
      '--output-file',
      'runs/report.json',
    ],
    { cwd: callersDirectory, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } },
  );
  const written = join(callersDirectory, 'runs', 'report.json');
  expect(existsSync(written), `${child.stdout}\n${child.stderr}`).toBe(true);
  const report = JSON.parse(readFileSync(written, 'utf8')) as { numTotalTests: number };
  expect(report.numTotalTests).toBeGreaterThan(0);
  expect(existsSync(fileURLToPath(new URL('../runs/report.json', import.meta.url)))).toBe(false);
}, 60_000);
