import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { typeCheckReadmeBlocks } from '../../../tooling/readme/type-check-blocks.mjs';

/**
 * The README's TypeScript blocks compile as a user's code would (strict, NodeNext), against
 * this package's source and the installed SDK (`@openai/agents` re-exports what the blocks
 * use from `@openai/agents-core`, which is what is installed here).
 */
it('every ts block of the README type-checks', () => {
  const { blocks, problems } = typeCheckReadmeBlocks({
    packageDirectory: fileURLToPath(new URL('../', import.meta.url)),
    packageName: '@keepsake/openai-agents',
    aliases: { '@openai/agents': '@openai/agents-core' },
  });
  expect(blocks).toBeGreaterThanOrEqual(4);
  expect(problems).toEqual([]);
  // A whole TypeScript program with the SDK's types: seconds alone, far more on a busy machine.
}, 180_000);
