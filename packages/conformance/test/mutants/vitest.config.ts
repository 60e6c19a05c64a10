import { defineConfig } from 'vitest/config';

/** The mutant gallery's own run (a child of test/mutant-gallery.test.ts): failures expected. */
export default defineConfig({
  test: {
    include: ['test/mutants/gallery.fixture.ts'],
    // A broken adapter may leave a rejection unhandled; it is one more failure, not a crash.
    dangerouslyIgnoreUnhandledErrors: true,
    testTimeout: 5000,
  },
});
