import { defineConfig } from 'vitest/config';

/**
 * Files whose assertions compare timings between replays: capacity sweeps (throughput against
 * concurrency), the latency regressions of a dropped index (a ratio of p95s, which the
 * suite's own load on two cores compressed until a fresh-clone run passed the PR), and the
 * slowed write found on a workload recorded through the proxy. They run first
 * and one at a time, never beside other files: `npm test` runs this project on its own, with only
 * the Rust tests' build at nice 19 beside it, then the rest (docs/testing.md, "Timing").
 */
const ALONE = ['test/capacity.test.ts', 'test/gate-regression.test.ts', 'test/pipeline-run.test.ts', 'test/proxy-gate.test.ts'];

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
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          ...shared,
          name: 'alone',
          include: ALONE,
          maxWorkers: 1,
          fileParallelism: false,
          sequence: { groupOrder: 0 },
        },
      },
    ],
  },
});
