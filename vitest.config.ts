import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Tests talk to real PostgreSQL servers (and may start their own), which
    // is slow on a busy 2-core runner; no test asserts on timing.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    teardownTimeout: 120_000,
  },
});
