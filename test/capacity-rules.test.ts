// The knee rule, the capacity verdict and the chart, on synthetic curves: no server needed.
import { describe, expect, it } from 'vitest';
import { findKnee, growthPerDoubling, type CurvePoint } from '../src/capacity/knee.js';
import { renderCapacityMarkdown } from '../src/capacity/markdown.js';
import { combineRuns, type StepMetrics, type StepRun } from '../src/capacity/metrics.js';
import { capacityCommand } from '../src/capacity/options.js';
import type { CapacityReport, CapacitySideReport } from '../src/capacity/report-types.js';
import { niceAxis, renderCapacitySvg } from '../src/capacity/svg.js';
import { decideCapacity } from '../src/capacity/verdict.js';
import { parseOptions } from '../src/options/argv.js';

const curve = (connections: number[], throughput: number[], refused: number[] = []): CurvePoint[] =>
  connections.map((c, i) => ({ connections: c, throughput: throughput[i]!, refused_sessions: refused[i] ?? 0 }));

function run(throughput: number, extra: Partial<StepRun> = {}): StepRun {
  return {
    throughput,
    wall_time_ms: 1000,
    ok: Math.round(throughput),
    errors: 0,
    skipped_writes: 0,
    not_executed: 0,
    refused_sessions: 0,
    failed_sessions: 0,
    sessions: 100,
    p50_us: 100,
    p95_us: 1000,
    p99_us: 2000,
    status: 'completed',
    ...extra,
  };
}

function side(connections: number[], throughput: number[], refused: number[] = []): CapacitySideReport {
  const steps: StepMetrics[] = connections.map((c, i) => combineRuns(c, [run(throughput[i]!, { refused_sessions: refused[i] ?? 0 })]));
  return { side: 'base', steps, knee: findKnee(steps), headroom_to_knee: null, headroom_to_refusal: null };
}

describe('knee rule', () => {
  it('measures growth per doubling: linear scaling is +100 %, a flat curve 0', () => {
    expect(
      growthPerDoubling(
        { connections: 10, throughput: 100, refused_sessions: 0 },
        { connections: 40, throughput: 400, refused_sessions: 0 },
      ),
    ).toBeCloseTo(1);
    expect(
      growthPerDoubling(
        { connections: 10, throughput: 100, refused_sessions: 0 },
        { connections: 90, throughput: 100, refused_sessions: 0 },
      ),
    ).toBeCloseTo(0);
  });

  it('names the step where a rising curve flattens', () => {
    const knee = findKnee(curve([1, 2, 4, 8, 16], [1000, 1900, 3500, 3700, 3650]));
    expect(knee.connections).toBe(4);
    expect(knee.throughput).toBe(3500);
    expect(knee.recommended_connections).toBe(4);
    expect(knee.reason).toMatch(/less than 10% per doubling/);
  });

  it('works the same on an uneven sweep (10, 25, 50, 90)', () => {
    expect(findKnee(curve([10, 25, 50, 90], [1000, 2400, 2600, 2650])).connections).toBe(25);
  });

  it('is not fooled by one dip followed by a recovery', () => {
    // 4 is slowed by a burst of load; 8 still climbs well above 2.
    expect(findKnee(curve([1, 2, 4, 8, 16, 32], [1000, 1900, 1850, 3600, 3700, 3600])).connections).toBe(8);
  });

  it('says so when throughput never flattens', () => {
    const knee = findKnee(curve([1, 2, 4, 8], [1000, 2000, 3900, 7500]));
    expect(knee.connections).toBeNull();
    expect(knee.reason).toMatch(/no knee within the sweep/);
    expect(knee.recommended_connections).toBe(8);
  });

  it('needs enough steps below the refusal point, and never counts refused steps as the curve', () => {
    const few = findKnee(curve([1, 2, 120], [1000, 1100, 500], [0, 0, 30]));
    expect(few.connections).toBeNull();
    expect(few.refusal_connections).toBe(120);
    expect(few.reason).toMatch(/at least 3/);
    const knee = findKnee(curve([1, 2, 4, 8, 150], [1000, 1900, 2000, 2050, 400], [0, 0, 0, 0, 60]));
    expect(knee.connections).toBe(2);
    expect(knee.refusal_connections).toBe(150);
  });

  it('takes the median run of a confirmed step (the lower middle one for an even count)', () => {
    expect(combineRuns(8, [run(100), run(300), run(200)]).throughput).toBe(200);
    expect(combineRuns(8, [run(100), run(300)]).throughput).toBe(100);
    expect(combineRuns(8, [run(100), run(300)]).runs).toHaveLength(2);
  });
});

describe('capacity verdict', () => {
  const base = side([1, 2, 4, 8, 16], [1000, 1900, 3500, 3700, 3650]);

  it('passes an A/A pair within the threshold', () => {
    const head = side([1, 2, 4, 8, 16], [950, 1850, 3300, 3600, 3500]);
    const v = decideCapacity(base, head, 0.15);
    expect(v.verdict).toBe('pass');
    expect(v.compared_at).toBe(4);
    expect(v.compared_steps).toEqual([4, 8, 16]);
    // Medians of the plateau (4, 8, 16): 3,500 vs 3,650.
    expect(v.throughput_change!).toBeCloseTo(-0.041, 2);
  });

  it('reads the plateau, so one step slowed by a burst of load does not fail the PR', () => {
    const head = side([1, 2, 4, 8, 16], [1000, 1900, 2700, 3650, 3600]);
    const v = decideCapacity(base, head, 0.15);
    expect(v.verdict).toBe('pass');
    expect(v.throughput_change!).toBeCloseTo(-0.014, 2);
  });

  it('leaves refused steps out of the plateau', () => {
    const b = side([1, 2, 4, 8, 120], [1000, 1900, 3500, 3700, 1000], [0, 0, 0, 0, 40]);
    const h = side([1, 2, 4, 8, 120], [1000, 1900, 3400, 3600, 500], [0, 0, 0, 0, 60]);
    expect(decideCapacity(b, h, 0.15).compared_steps).toEqual([4, 8]);
  });

  it('fails when throughput at base knee falls beyond the threshold', () => {
    const head = side([1, 2, 4, 8, 16], [800, 1500, 2600, 2700, 2650]);
    const v = decideCapacity(base, head, 0.15);
    expect(v.verdict).toBe('fail');
    expect(v.reasons[0]).toMatch(/throughput at base's knee \(median of 4, 8, 16 connections, where base is flat\) fell by 27/);
  });

  it('fails when the knee moves left and head is slower there', () => {
    const wide = side([1, 2, 4, 8, 16, 32], [1000, 1900, 3500, 6500, 7000, 7100]);
    const head = side([1, 2, 4, 8, 16, 32], [1000, 1900, 3400, 3500, 3500, 3450]);
    const v = decideCapacity(wide, head, 0.4);
    expect(v.verdict).toBe('fail');
    expect(v.reasons.some((r) => /knee moved left: head flattens at 4 connections, base at 8/.test(r))).toBe(true);
  });

  it('does not fail on a knee that moves left while throughput at base knee holds', () => {
    const head = side([1, 2, 4, 8, 16], [1000, 1900, 3600, 3700, 3650]);
    const b = side([1, 2, 4, 8, 16], [1000, 1900, 3300, 3700, 3650]);
    expect(b.knee.connections).toBe(8);
    expect(head.knee.connections).toBe(4);
    expect(decideCapacity(b, head, 0.15).verdict).toBe('pass');
  });

  it('needs a plateau loss of more than half the threshold before a knee moved left counts', () => {
    const b = side([1, 2, 4, 8, 16], [1000, 1900, 3300, 3700, 3650]);
    const slightly = side([1, 2, 4, 8, 16], [1000, 1900, 3500, 3520, 3480]);
    expect(slightly.knee.connections).toBe(4);
    expect(decideCapacity(b, slightly, 0.15).verdict).toBe('pass');
    const clearly = side([1, 2, 4, 8, 16], [1000, 1900, 3300, 3250, 3200]);
    const v = decideCapacity(b, clearly, 0.15);
    expect(v.throughput_change!).toBeCloseTo(-0.123, 2);
    expect(v.reasons).toEqual([expect.stringMatching(/knee moved left: head flattens at 4 connections, base at 8/)]);
  });
});

function report(sides: CapacitySideReport[]): CapacityReport {
  return {
    schema_version: 1,
    tool: { name: 'pg-retest-action', version: '0' },
    verdict: 'report',
    headline: 'knee at 4 connections',
    reasons: [],
    warnings: [],
    error: null,
    settings: {
      connections: [1, 2, 4, 8, 16],
      scale: 5,
      class_scale: {},
      speed: 0,
      read_only: true,
      capacity_threshold: 0.15,
      knee_rule: { minGrowth: 0.1, minSteps: 3 },
      confirm_runs: 2,
    },
    environment: {
      server: null,
      server_version: '15.18',
      max_connections: 100,
      workload: { path: 'w.wkl', sessions: 40, statements: 2729, captured_rate: 570 },
      base: null,
      head: null,
      started_at: '2026-01-01T00:00:00Z',
      wall_time_ms: 1000,
    },
    sides,
    comparison: null,
  };
}

describe('capacity report', () => {
  it('renders a table per step and two mermaid xychart-beta charts', () => {
    const md = renderCapacityMarkdown(report([{ ...side([1, 2, 4, 8, 16], [1000, 1900, 3500, 3700, 3650]), side: 'schema' }]));
    expect(md).toContain('| 4 ◀ knee | 3,500 |');
    expect(md.match(/```mermaid\nxychart-beta/g)).toHaveLength(2);
    expect(md).toContain('x-axis "connections" ["1", "2", "4", "8", "16"]');
    expect(md).toContain('line [1000, 1900, 3500, 3700, 3650]');
    expect(md).toMatch(/Knee rule: .*10 % per doubling/);
  });

  it('draws an SVG with both axes, units, ticks and a legend', () => {
    const svg = renderCapacitySvg(
      report([
        side([1, 2, 4, 8, 16], [1000, 1900, 3500, 3700, 3650]),
        { ...side([1, 2, 4, 8, 16], [900, 1500, 2000, 2100, 2050]), side: 'head' },
      ]),
    );
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg).toContain('statements / s');
    expect(svg).toContain('milliseconds');
    expect(svg).toContain('concurrent connections');
    expect(svg).toContain('base (knee at 4)');
    expect(svg).toContain('head (knee at 4)');
    expect(svg.match(/<polyline/g)).toHaveLength(4);
    expect(svg).toContain('>4,000<');
    expect(niceAxis(3700)).toEqual({ top: 4000, step: 1000 });
    expect(niceAxis(0.62)).toEqual({ top: 0.8, step: 0.2 });
  });
});

describe('capacity options', () => {
  const parse = (values: Record<string, string | string[] | true>) => parseOptions(capacityCommand, values);

  it('sorts and deduplicates the connection steps, and fills the defaults', () => {
    const config = parse({ workload: 'w.wkl', 'database-url': 'postgres://u@h/db', connections: ['10,25', '90', '25'] });
    expect(config.connections).toEqual([10, 25, 90]);
    expect(config.speed).toBe(0);
    expect(config.threshold).toBe(0.15);
    expect(config.schema).toBeNull();
    expect(config.compare).toBe(false);
  });

  it('rejects bad steps and writes without a schema to copy, naming the fix', () => {
    expect(() => parse({ workload: 'w.wkl', 'database-url': 'postgres://u@h/db', connections: '10,abc' })).toThrow(
      /--connections: expected whole numbers/,
    );
    expect(() => parse({ workload: 'w.wkl', 'database-url': 'postgres://u@h/db', 'allow-writes': true })).toThrow(
      /--allow-writes: needs a schema/,
    );
    expect(() => parse({ workload: 'w.wkl' })).toThrow(/--migrations: is required/);
  });

  it('compares when a base schema is named', () => {
    const config = parse({
      workload: 'w.wkl',
      migrations: 'm/*.sql',
      'base-migrations': 'b/*.sql',
      'scale-analytical': '2',
      'capacity-threshold': '20%',
    });
    expect(config.compare).toBe(true);
    expect(config.classScale).toEqual({ scaleAnalytical: 2 });
    expect(config.threshold).toBe(0.2);
  });
});

describe('mode: capacity inputs and outputs', () => {
  it('builds the capacity config from input strings, naming the input on bad values', async () => {
    const { readCapacityConfig, inputNames, capacityOnlyInputs } = await import('../src/action/inputs.js');
    const reader = (inputs: Record<string, string>) => (name: string) => inputs[name] ?? '';
    const config = readCapacityConfig(
      reader({
        workload: 'w.wkl',
        migrations: 'db/*.sql',
        connections: '10,25,50,90',
        scale: '20',
        'scale-bulk': '0',
        'capacity-threshold': '20%',
      }),
    );
    expect(config.connections).toEqual([10, 25, 50, 90]);
    expect(config.scale).toBe(20);
    expect(config.classScale).toEqual({ scaleBulk: 0 });
    expect(config.threshold).toBe(0.2);
    expect(config.outputs).toEqual({ markdown: undefined, json: undefined, svg: undefined });
    expect(() => readCapacityConfig(reader({ workload: 'w.wkl', migrations: 'db/*.sql', connections: '10,x' }))).toThrow(
      /^input `connections`: expected whole numbers/,
    );
    expect(capacityOnlyInputs()).toEqual(expect.arrayContaining(['connections', 'scale', 'allow-writes', 'capacity-threshold']));
    expect(inputNames()).not.toContain('svg');
  });

  it('sets result, knee and change outputs', async () => {
    const { capacityOutputs } = await import('../src/action/capacity-mode.js');
    const r = report([
      side([1, 2, 4, 8, 16], [1000, 1900, 3500, 3700, 3650]),
      { ...side([1, 2, 4, 8, 16], [900, 1500, 2000, 2100, 2050]), side: 'head' },
    ]);
    r.verdict = 'fail';
    r.comparison = { compared_at: 4, compared_steps: [4, 8, 16], throughput_change: -0.4286 };
    const out = capacityOutputs(r, { markdown: 'a.md', json: 'a.json', svg: 'a.svg' }, undefined);
    expect(out).toMatchObject({
      result: 'regression',
      'knee-connections': '4',
      'capacity-change-pct': '-42.9',
      'capacity-svg-path': 'a.svg',
      'comment-url': '',
    });
  });
});
