import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { typeCheckReadmeBlocks } from '../../../tooling/readme/type-check-blocks.mjs';

describe('README', () => {
  it('shows the usage example that test/readme-example.ts typechecks', async () => {
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
    const example = await readFile(new URL('./readme-example.ts', import.meta.url), 'utf8');
    const snippet = /## Usage\n\n```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(snippet?.replace("'@keepsake/langgraph'", "'../src/index.js'")).toBe(example);
  });

  it('every ts block type-checks (strict, NodeNext), the backend snippets included', () => {
    const { blocks, problems } = typeCheckReadmeBlocks({
      packageDirectory: fileURLToPath(new URL('../', import.meta.url)),
      packageName: '@keepsake/langgraph',
    });
    expect(blocks).toBeGreaterThanOrEqual(3);
    expect(problems).toEqual([]);
    // A whole TypeScript program with LangGraph's types: seconds alone, far more on a busy machine.
  }, 180_000);
});
