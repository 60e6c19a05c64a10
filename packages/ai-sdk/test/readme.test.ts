import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { typeCheckReadmeBlocks } from '../../../tooling/readme/type-check-blocks.mjs';

/**
 * The README's TypeScript blocks compile as a user's code would (strict, NodeNext), against
 * this package's source and the installed `ai`: a README that drifts from the API fails here.
 */
it('every ts block of the README type-checks', () => {
  const { blocks, problems } = typeCheckReadmeBlocks({
    packageDirectory: fileURLToPath(new URL('../', import.meta.url)),
    packageName: '@keepsake/ai-sdk',
  });
  expect(blocks).toBeGreaterThanOrEqual(2);
  expect(problems).toEqual([]);
  // A whole TypeScript program with the AI SDK's types: seconds alone, far more on a busy machine.
}, 180_000);
