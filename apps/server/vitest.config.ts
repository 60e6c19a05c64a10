import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // The e2e files start server processes and a browser; running them one at a time keeps
    // the two CI cores from being oversubscribed.
    fileParallelism: false,
  },
});
