// `capacity` end to end: the CLI (dist/cli.js, as users run it) sweeps the example shop on a
// server of its own with max_connections = 100, the limit the issue names. Sweeps are small
// (the workload × 5, as fast as possible, a handful of steps), so the file stays within a few
// minutes; assertions are on structure and counts, with generous margins for a noisy runner.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { findKnee } from '../src/capacity/knee.js';
import { writeWorkload } from '../src/engine/index.js';
import { startPostgres } from './support/postgres.js';
import { syntheticProfile } from './support/profile.js';
import { useCapacityServer } from './support/capacity-run.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const shop = (...parts: string[]): string => path.join(root, 'examples', 'shop', ...parts);
/** A comparison with confirmation runs takes about 1–2 minutes here; room for a slow runner. */
const SWEEP_TIMEOUT_MS = 300_000;

const fixture = useCapacityServer();
const { capacity } = fixture;

const base = ['--base-migrations', shop('migrations', '*.sql')];

describe('capacity sweep on the example shop (max_connections = 100)', () => {
  it(
    'throughput rises then flattens, and the knee the report names is the rule applied to its steps',
    async () => {
      const run = await capacity('sweep', ['--migrations', shop('migrations', '*.sql'), '--connections', '1,2,4,8,16,32,64']);
      expect(run.code, run.stderr).toBe(0);
      const { report } = run;
      expect(report.verdict).toBe('report');
      expect(report.environment.max_connections).toBe(100);
      expect(report.sides).toHaveLength(1);
      const [sweep] = report.sides;
      const at = (c: number) => sweep!.steps.find((s) => s.connections === c)!;
      expect(sweep!.steps.map((s) => s.connections)).toEqual([1, 2, 4, 8, 16, 32, 64]);
      // Flattens: on 2 cores, 64 connections cannot do twice what 4 to 32 do (the best of those
      // four steps, so that one step measured in a burst of other load cannot decide it). Where
      // exactly the knee falls moves with the runner's load (docs/capacity.md has the measured
      // spread), so the test asserts that the report's knee is the rule's answer for the steps it
      // measured; the rule itself is tested on fixed curves in capacity-rules.test.ts.
      const middle = Math.max(...[4, 8, 16, 32].map((c) => at(c).throughput));
      expect(at(64).throughput).toBeLessThan(middle * 2);
      expect(sweep!.knee).toEqual(findKnee(sweep!.steps));
      expect(sweep!.knee.recommended_connections).not.toBeNull();
      for (const c of [1, 2, 4, 8, 16, 32, 64]) {
        expect(at(c).refused_sessions).toBe(0);
        expect(at(c).ok).toBe(at(1).ok);
        expect(at(c).errors).toBe(0);
      }
      // Read-only by default: the writes are skipped and counted at every step.
      expect(report.settings.read_only).toBe(true);
      expect(at(1).skipped_writes).toBeGreaterThan(0);
      expect(run.stdout).toMatch(/no refused sessions up to 64 connections/);
      expect(run.stdout.match(/```mermaid\nxychart-beta/g)).toHaveLength(2);
    },
    SWEEP_TIMEOUT_MS,
  );

  it(
    "sessions refused above the server's limit are counted, not retried away, and the refusal point is named",
    async () => {
      // Whether short sessions overlap enough to pass a server's limit depends on scheduling, so
      // refusal is tested with sessions that each hold their connection for a second: 16 of them
      // at once against max_connections = 8 cannot all connect unless opening eight connections
      // took longer than that second.
      const small = await startPostgres({ settings: { max_connections: '8' } });
      try {
        const workload = path.join(fixture.tmp, 'sleepers.wkl');
        await writeWorkload(
          workload,
          syntheticProfile(
            Array.from({ length: 16 }, () => [[0, 'SELECT pg_sleep(1)']]),
            { user: 'postgres', database: 'postgres' },
          ),
        );
        const run = await capacity(
          'refusal',
          ['--database-url', small.url, '--workload', workload, '--scale', '1', '--connections', '4,32'],
          { seed: false },
        );
        expect(run.code, run.stderr).toBe(0);
        const [sweep] = run.report.sides;
        const at = (c: number) => sweep!.steps.find((s) => s.connections === c)!;
        expect(run.report.environment.max_connections).toBe(8);
        expect(at(4).refused_sessions).toBe(0);
        expect(at(4).ok).toBe(16);
        expect(at(32).refused_sessions).toBeGreaterThan(0);
        expect(at(32).refused_sessions + at(32).ok).toBe(16);
        expect(at(32).failed_sessions).toBe(0);
        expect(sweep!.knee.refusal_connections).toBe(32);
        expect(sweep!.knee.recommended_connections).toBe(4);
        expect(run.stdout).toMatch(/\| 32 \| [\d,]+ \|.*\*\*\d+\*\* \|/);
        expect(run.stdout).toMatch(/sessions refused from 32 connections/);
        expect(run.svg).toContain('sessions refused');
      } finally {
        await small.stop();
      }
    },
    SWEEP_TIMEOUT_MS,
  );

  it(
    'the drop-index variant lowers throughput at the knee and fails the capacity gate (exit 1)',
    async () => {
      const run = await capacity('drop-index', [
        ...base,
        '--migrations',
        shop('migrations', '*.sql'),
        shop('variants', 'drop-index', '*.sql'),
        '--connections',
        '1,2,4,8,16,32',
        // The loss must hold, not be measured five times: two more runs keep the file short.
        '--confirm-runs',
        '2',
        // 10 %, not the 15 % default: the sequential scans cost 29–41 % of the throughput in the
        // runs measured (docs/capacity.md), three times this threshold rather than twice.
        '--capacity-threshold',
        '10%',
      ]);
      expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(1);
      expect(run.report.verdict).toBe('fail');
      expect(run.report.sides.map((s) => s.side)).toEqual(['base', 'head']);
      expect(run.report.comparison!.throughput_change!).toBeLessThan(-0.1);
      expect(run.report.reasons.join('\n')).toMatch(/throughput at .* fell by/);
      expect(run.report.comparison!.compared_steps.length).toBeGreaterThan(0);
      expect(run.stdout).toMatch(/❌ pg-retest capacity: fail/);
      expect(run.svg).toContain('head (');
    },
    SWEEP_TIMEOUT_MS,
  );
});
