import { defineConfig } from 'vitest/config';

/**
 * Files that measure throughput against concurrency (capacity sweeps): their steps compare
 * replays with each other, so they run on their own, after the rest, never beside other files.
 */
const ALONE = ['test/capacity.test.ts'];

const shared = {
  globalSetup: ['test/support/global-setup.ts'],
  // Generous: a real server on a busy runner, with other files running beside.
  testTimeout: 240_000,
  hookTimeout: 240_000,
  teardownTimeout: 120_000,
};

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          ...shared,
          name: 'parallel',
          include: ['test/**/*.test.ts'],
          exclude: ALONE,
          // Test files spend most of their time waiting: on replays that keep the captured
          // timing, on servers starting, on seeds loading. Several run at once even on 2 cores
          // (vitest's default there is one). Nothing here asserts on timing that load could
          // flip: docs/testing.md, "Timing".
          maxWorkers: Number(process.env.PG_RETEST_TEST_WORKERS || 4),
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          ...shared,
          name: 'alone',
          include: ALONE,
          maxWorkers: 1,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
