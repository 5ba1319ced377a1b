/**
 * The shards of a sharded run (`aggregate`, docs/scale-out.md): which part of the workload each
 * replayed, how long it took, and what it found in its part, so that a missing or failed shard
 * behind an inconclusive verdict is named where the reader looks. The verdict above is on all of
 * them pooled; a shard's own is on its part only.
 */
import { wallTime } from '../format/numbers.js';
import { count, plural } from '../format/units.js';
import type { ShardRun } from '../verdict/report-types.js';
import type { Context } from './markdown-context.js';
import { details, mdTable, text } from './markdown-text.js';

const MARK: Record<ShardRun['verdict'], string> = {
  pass: '✅ pass',
  regression: '❌ regression',
  inconclusive: '⚠️ inconclusive',
  error: '❌ failed',
  missing: '❌ missing',
};

/**
 * The shards table, collapsed unless a shard is missing or failed.
 * @param ctx the rendering
 * @returns the section's lines, none for a run of one runner
 */
export function shardsSection(ctx: Context): string[] {
  const shards = ctx.report.shards;
  if (!shards || shards.length === 0) return [];
  const rows = shards.map((s) => [
    `${s.index}/${s.count}`,
    MARK[s.verdict],
    count(s.sessions),
    count(s.statements),
    s.verdict === 'missing' ? '–' : count(s.rounds),
    s.verdict === 'missing' ? '–' : wallTime(s.wall_time_ms),
    text(s.runner) || '–',
  ]);
  const table = mdTable(['shard', 'its part', 'sessions', 'statements', 'rounds', 'wall time', 'runner'], rows, [
    'left',
    'left',
    'right',
    'right',
    'right',
    'right',
    'left',
  ]);
  const note = `Each shard replayed its part of the workload on its own server (base, head and the noise replay); the verdict pools their comparisons per fingerprint, shard by shard (docs/gate-statistics.md, "Shards").`;
  const trouble = shards.filter((s) => s.verdict === 'missing' || s.verdict === 'error');
  const summary = `${plural(shards.length, 'shard')}${trouble.length > 0 ? `, ${trouble.length} missing or failed` : ''}`;
  if (trouble.length > 0) return ['#### Shards', '', `${summary}.`, '', ...table, '', note, ''];
  return [...details(summary, [...table, '', note]), ''];
}
