import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/exit-codes.js';

describe('README', () => {
  it('documents every exit code with its number and name, and no other', async () => {
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## Exit codes'));
    const rows = [...section.matchAll(/^\| (\d+) +\| `(\w+)` +\|/gm)].map(
      ([, code, name]) => [name, Number(code)] as const,
    );
    expect(Object.fromEntries(rows)).toEqual(EXIT_CODES);
  });
});
