// The rows a plan reads (src/plans/rows-read.ts): what its scans returned and what their filters
// and rechecks removed, over every loop.
import { describe, expect, it } from 'vitest';
import { rowsRead, rowsReadPhrase } from '../src/plans/rows-read.js';
import type { RawPlanNode } from '../src/plans/shape.js';

const node = (type: string, rows: number, extra: Partial<RawPlanNode> = {}, ...children: RawPlanNode[]): RawPlanNode => ({
  'Node Type': type,
  'Actual Rows': rows,
  'Actual Loops': 1,
  ...extra,
  ...(children.length > 0 ? { Plans: children } : {}),
});

describe('rowsRead', () => {
  it('counts the rows scans read, not what a bitmap index scan found for its heap scan, nor what a sort passes on', () => {
    const base = node('Limit', 24, {}, node('Index Scan', 24));
    const head = node(
      'Limit',
      24,
      {},
      node('Sort', 24, {}, node('Bitmap Heap Scan', 247, { 'Rows Removed by Index Recheck': 3 }, node('Bitmap Index Scan', 250))),
    );
    expect(rowsRead(base)).toBe(24);
    expect(rowsRead(head)).toBe(250);
  });

  it('counts filtered rows and every loop: a nested loop probing its inner side once per outer row', () => {
    const plan = node(
      'Nested Loop',
      30,
      {},
      node('Seq Scan', 10, { 'Rows Removed by Filter': 990 }),
      node('Index Scan', 3, { 'Actual Loops': 10 }),
    );
    expect(rowsRead(plan)).toBe(1000 + 30);
  });

  it('says it in words, with the plan costs', () => {
    expect(rowsReadPhrase({ base: 24, head: 250, base_cost: 10.56, head_cost: 40.62 })).toBe(
      '24 → 250 rows read per call (+942 %), plan cost 10.6 → 40.6',
    );
    expect(rowsReadPhrase({ base: 0, head: 1200, base_cost: 1, head_cost: 30 })).toBe(
      '0 → 1,200 rows read per call (from 0), plan cost 1.0 → 30.0',
    );
  });
});
