import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Unhandled rejections fail the run, also one raised after a file's last test: see
    // tooling/vitest/unhandled-rejections-fatal.ts for why both settings are needed.
    execArgv: ['--unhandled-rejections=strict'],
    setupFiles: ['../../tooling/vitest/unhandled-rejections-fatal.ts'],
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file starts its own Ceph cluster (about 1 s, 150 MiB); two files at a time keep a
    // 2-core machine responsive.
    maxWorkers: 2,
  },
});
