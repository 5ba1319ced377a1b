// Which work counters moved between base and head, and how the report says it (docs/plans.md,
// "Work per call"): pure functions of work counts, and the markdown of a stored report given some.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseReport, renderMarkdown, toJson } from '../src/report/index.js';
import { workPhrase } from '../src/plans/work-phrase.js';
import { hasWalCounters } from '../src/plans/stat-statements.js';
import type { FingerprintPlan, PlanSide, WorkPerCall, WorkStats } from '../src/plans/types.js';
import { workChanges, workOfPlan } from '../src/plans/work.js';
import type { GateReport } from '../src/verdict/report-types.js';
import { NO_WORK } from './support/work.js';

const zero = NO_WORK;

/** Work with `per_call` and two replays at `low` and `high` (default: both the mean). */
function work(
  per: Partial<WorkPerCall>,
  low: Partial<WorkPerCall> = per,
  high: Partial<WorkPerCall> = per,
  noise?: Partial<WorkPerCall>,
): WorkStats {
  return {
    per_call: { ...zero, ...per },
    rounds: { replays: 2, min: { ...zero, ...low }, max: { ...zero, ...high } },
    noise: noise === undefined ? null : { ...zero, ...noise },
  };
}

describe('workChanges', () => {
  it('an index on an updated column: more WAL and more pages, WAL first', () => {
    const changes = workChanges(
      work(
        { shared_hit: 7.9, wal_bytes: 101, wal_records: 1.3 },
        { shared_hit: 7.8, wal_bytes: 100, wal_records: 1.3 },
        { shared_hit: 8, wal_bytes: 102, wal_records: 1.3 },
      ),
      work(
        { shared_hit: 22, wal_bytes: 303, wal_records: 4.1 },
        { shared_hit: 21.6, wal_bytes: 302, wal_records: 4.1 },
        { shared_hit: 22.4, wal_bytes: 305, wal_records: 4.1 },
      ),
      'update',
    );
    expect(changes.map((c) => [c.counter, c.direction])).toEqual([
      ['wal_bytes', 'more'],
      ['pages', 'more'],
      ['wal_records', 'more'],
    ]);
    expect(changes[0]!.change).toBeCloseTo(2, 1);
    expect(workPhrase(changes)).toBe('WAL 101 B → 303 B per call (+200 %), 7.9 → 22.0 pages (+178 %), 1.3 → 4.1 WAL records (+215 %)');
  });

  it('less work is an improvement', () => {
    const [pages] = workChanges(work({ shared_hit: 120 }), work({ shared_hit: 3 }), 'update');
    expect(pages).toMatchObject({ counter: 'pages', base: 120, head: 3, direction: 'less' });
    expect(workPhrase([pages!])).toBe('120 → 3.0 pages per call (−98 %)');
  });

  it('not moved: replays that overlap, a change the noise replay shows too, a few bytes, a small share', () => {
    // Head's replays reach into base's range.
    expect(
      workChanges(
        work({ wal_bytes: 250 }, { wal_bytes: 220 }, { wal_bytes: 280 }),
        work({ wal_bytes: 300 }, { wal_bytes: 270 }, { wal_bytes: 330 }),
        'update',
      ),
    ).toEqual([]);
    // The noise replay fell as far from base as head did.
    expect(workChanges(work({ wal_bytes: 100 }, {}, {}, { wal_bytes: 160 }), work({ wal_bytes: 150 }), 'update')).toEqual([]);
    // 10 bytes: under the absolute minimum, however large the share.
    expect(workChanges(work({ wal_bytes: 5 }), work({ wal_bytes: 15 }), 'update')).toEqual([]);
    // 5 % more pages: under the share.
    expect(workChanges(work({ shared_hit: 100 }), work({ shared_hit: 105 }), 'update')).toEqual([]);
  });

  it("pages range over each replay's hit + read, not over the extremes of each part", () => {
    const replays = (a: Partial<WorkPerCall>, b: Partial<WorkPerCall>): WorkStats => {
      const each = [
        { ...zero, ...a },
        { ...zero, ...b },
      ];
      const per = {
        ...zero,
        shared_hit: (each[0]!.shared_hit + each[1]!.shared_hit) / 2,
        shared_read: (each[0]!.shared_read + each[1]!.shared_read) / 2,
      };
      return { per_call: per, rounds: { replays: 2, min: per, max: per, each }, noise: null };
    };
    // Base's pages 10 in both replays, split differently by the cache; head's 12. By the parts'
    // extremes base would range 0–20 and overlap head; by each replay's sum it does not.
    const base = replays({ shared_hit: 10 }, { shared_read: 10 });
    const head = replays({ shared_hit: 12 }, { shared_hit: 6, shared_read: 6 });
    expect(workChanges(base, head, 'update').map((c) => c.counter)).toEqual(['pages']);
  });

  it('WAL not counted on a side: left out, the rest compared', () => {
    const base = work({ shared_hit: 3, wal_bytes: null, wal_records: null, wal_fpi: null });
    expect(workChanges(base, work({ shared_hit: 9, wal_bytes: 500 }), 'update').map((c) => c.counter)).toEqual(['pages']);
  });

  it("a read's WAL and dirtied pages are not its own work: left out, its pages compared", () => {
    const base = work({ shared_hit: 50, wal_bytes: 180, wal_records: 4, shared_dirtied: 3.7 });
    expect(workChanges(base, work({ shared_hit: 50 }), 'select')).toEqual([]);
    expect(workChanges(base, work({ shared_hit: 50 }), 'update').map((c) => c.counter)).toEqual(['wal_bytes', 'wal_records', 'dirtied']);
    expect(workChanges(base, work({ shared_hit: 100 }), 'select').map((c) => c.counter)).toEqual(['pages']);
  });

  it('from one EXPLAIN ANALYZE: no replays to compare, the thresholds alone', () => {
    const once = (w: Partial<WorkPerCall>): WorkStats => ({ per_call: { ...zero, ...w }, rounds: null, noise: null });
    expect(workChanges(once({ shared_hit: 3 }), once({ shared_hit: 7 }), 'update').map((c) => c.counter)).toEqual(['pages']);
  });
});

describe('work of one EXPLAIN (ANALYZE, BUFFERS, WAL)', () => {
  it("the root node's counters; WAL null when EXPLAIN did not count it", () => {
    const root = {
      'Node Type': 'ModifyTable',
      'Actual Rows': 0,
      'Shared Hit Blocks': 9,
      'Shared Read Blocks': 1,
      'Shared Dirtied Blocks': 2,
      'WAL Records': 3,
      'WAL FPI': 1,
      'WAL Bytes': 620,
    };
    expect(workOfPlan(root)).toMatchObject({
      shared_hit: 9,
      shared_read: 1,
      shared_dirtied: 2,
      wal_records: 3,
      wal_fpi: 1,
      wal_bytes: 620,
    });
    expect(workOfPlan({ 'Node Type': 'Seq Scan', 'Shared Hit Blocks': 4 })).toMatchObject({
      shared_hit: 4,
      wal_bytes: null,
      wal_records: null,
    });
  });

  it('pg_stat_statements counts WAL from 1.8 on', () => {
    expect([hasWalCounters('1.7'), hasWalCounters('1.8'), hasWalCounters('1.10'), hasWalCounters('1.11'), hasWalCounters('2.0')]).toEqual([
      false,
      true,
      true,
      true,
      true,
    ]);
  });
});

describe('the report with work counts', () => {
  const stored = parseReport(readFileSync(new URL('./fixtures/reports/regression.json', import.meta.url), 'utf8'), 'regression');
  const side = (w: WorkStats): PlanSide => ({
    shape: ['Index Scan on orders'],
    total_cost: 8,
    plan_rows: 1,
    query_id: '1',
    stats: {
      source: 'pg_stat_statements',
      calls: 1210,
      rows: 1210,
      shared_hit: 0,
      shared_read: 0,
      buffers_per_call: 0,
      total_ms: 1,
      mean_ms: 0.1,
      work: w,
    },
    stats_note: null,
  });
  const fingerprint = (fp: string, normalized: string, base: WorkStats, head: WorkStats): FingerprintPlan => ({
    fingerprint: fp,
    normalized,
    kind: normalized.split(' ')[0]!.toLowerCase(),
    base: side(base),
    head: side(head),
    changed: false,
    change: null,
    assessment: null,
    seq_scans: [],
    buffers_ratio: 1,
    work_changes: workChanges(base, head, normalized.split(' ')[0]!.toLowerCase()),
  });

  function withWork(): GateReport {
    const r = structuredClone(stored);
    r.plans = {
      stats: { source: 'pg_stat_statements', pg_stat_statements: '1.10', unavailable_reason: null, unjoined: 0, work_note: null },
      not_explainable: 0,
      fingerprints: [
        // The regressed SELECT, its work unchanged: its time went elsewhere.
        fingerprint('5c2e9b1a7d3f4e60', stored.comparison!.fingerprints[0]!.normalized, work({ shared_hit: 4 }), work({ shared_hit: 4 })),
        fingerprint(
          'c3a8e1f9b2d47c06',
          'UPDATE products SET stock = stock - $1 WHERE id = $2 AND stock >= $1',
          work(
            { shared_hit: 3, wal_bytes: 190 },
            { shared_hit: 3, wal_bytes: 185 },
            { shared_hit: 3, wal_bytes: 195 },
            { shared_hit: 3, wal_bytes: 191 },
          ),
          work({ shared_hit: 7.1, wal_bytes: 620 }),
        ),
        fingerprint(
          '47f2b9c1e8a3d6b5',
          'SELECT p.id, p.name, p.price_cents FROM products p WHERE p.category_id = $1',
          work({ shared_hit: 120 }),
          work({ shared_hit: 3 }),
        ),
      ],
      failures: [],
      error: null,
    };
    return r;
  }

  it('lists what moved, more and less, with the spread of the replays and the noise replay; the regression whose work held', () => {
    const md = renderMarkdown(withWork());
    expect(md).toContain('#### Work per call');
    expect(md).toContain(
      '1 of 3 fingerprints measured did more work per call on head, 1 less (reported, not gated: written before the work rule).',
    );
    expect(md).toMatch(
      /\| `UPDATE products SET stock[^|]*` \| more \| WAL 190 B → 620 B per call \(\+226 %\), 3\.0 → 7\.1 pages \(\+137 %\) \| WAL 185 B–195 B \(noise replay 191 B\), 3\.0 pages \(noise replay 3\.0\) over 2 replays \|/,
    );
    expect(md).toMatch(/\| `SELECT p\.id[^|]*` \| ✅ less \| 120 → 3\.0 pages per call \(−98 %\) \|/);
    expect(md).toMatch(
      /1 slower statement did the same work per call on both sides[^\n]*\n\n- `SELECT o\.id[^`]*`: 4\.0 pages, WAL 0 B per call/,
    );
  });

  it('the JSON keeps the work and reads it back; a report without it reads as before', () => {
    const r = withWork();
    const again = parseReport(toJson(r), 'again');
    expect(again.plans!.fingerprints[1]!.base.stats!.work).toEqual(r.plans!.fingerprints[1]!.base.stats!.work);
    expect(again.plans!.fingerprints[1]!.work_changes).toEqual(r.plans!.fingerprints[1]!.work_changes);
    expect(renderMarkdown(stored)).not.toContain('Work per call');
  });

  it('EXPLAIN ANALYZE is named as the weaker source', () => {
    const r = withWork();
    r.plans!.stats = {
      ...r.plans!.stats,
      source: 'explain-analyze',
      pg_stat_statements: null,
      unavailable_reason: 'the server does not load it',
    };
    expect(renderMarkdown(r)).toMatch(
      /Counted by one EXPLAIN \(ANALYZE, BUFFERS, WAL\) of the captured example per fingerprint and side, rolled back \(pg_stat_statements not available: the server does not load it\): a weaker source than pg_stat_statements/,
    );
  });
});
