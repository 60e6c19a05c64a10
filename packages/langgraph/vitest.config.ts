import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Unhandled rejections fail the run, also one raised after a file's last test: see
    // tooling/vitest/unhandled-rejections-fatal.ts for why both settings are needed.
    execArgv: ['--unhandled-rejections=strict'],
    setupFiles: ['../../tooling/vitest/unhandled-rejections-fatal.ts'],
    include: ['test/**/*.test.ts'],
    // @langchain/langgraph-checkpoint-validation registers its specs with vitest's globals
    // (describe, it, beforeEach…), as its own CLI runs them; they are turned on for that.
    globals: true,
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // The Redis and S3 files start their own servers; two files at a time keep a 2-core
    // machine responsive.
    maxWorkers: 2,
  },
});
