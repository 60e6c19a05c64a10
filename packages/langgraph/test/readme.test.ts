import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';

describe('README', () => {
  it('shows the usage example that test/readme-example.ts typechecks', async () => {
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
    const example = await readFile(new URL('./readme-example.ts', import.meta.url), 'utf8');
    const snippet = /## Usage\n\n```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(snippet?.replace("'@keepsake/langgraph'", "'../src/index.js'")).toBe(example);
  });
});
