/**
 * The markdown of work per call (docs/plans.md, "Work per call"): the fingerprints whose pages,
 * WAL, rows or temporary blocks per call moved between base and head, beside the spread of each
 * side's replays and the noise replay, those the work rule failed marked (plans/work-rule.ts); the
 * latency regressions whose work did not move (their time went elsewhere: waits, CPU).
 */
import { bytes, count, plural } from '../format/units.js';
import type { FingerprintPlan, PlansReport, WorkChange, WorkPerCall, WorkRule, WorkStats } from '../plans/types.js';
import { replayRange, WORK_COUNTERS } from '../plans/work.js';
import { amount, figure, labelled, movedWorkPhrase } from '../plans/work-phrase.js';
import type { Context } from './markdown-context.js';
import { code, mdTable, text } from './markdown-text.js';

const SQL_CHARS = 100;
const CAP = 20;

/** `WAL 185–195 B, 2.9–3.1 pages`: each moved counter's lowest and highest replay; with the noise replay's on base. */
function spread(changes: WorkChange[], w: WorkStats | undefined, noise: boolean): string {
  if (!w?.rounds || changes.length === 0) return '–';
  const rounds = w.rounds;
  const parts = changes.map((c) => {
    const pick = WORK_COUNTERS[c.counter];
    const [lowest, highest] = replayRange(pick, rounds) ?? [0, 0];
    const [low, high] = [figure(c.counter, lowest), figure(c.counter, highest)];
    const shown = low === high ? low : `${low}–${high}`;
    const n = noise && w.noise ? pick(w.noise) : null;
    return `${labelled(c.counter, shown)}${n === null ? '' : ` (noise replay ${figure(c.counter, n)})`}`;
  });
  return `${parts.join(', ')} over ${plural(rounds.replays, 'replay')}`;
}

/** The main counters of a side, for a regression whose work did not move: `3.0 pages, WAL 190 B per call`. */
function summary(w: WorkPerCall): string {
  const walBytes = WORK_COUNTERS.wal_bytes(w);
  const wal = walBytes === null ? '' : `, WAL ${bytes(walBytes)}`;
  return `${amount(WORK_COUNTERS.pages(w) ?? 0)} pages${wal} per call`;
}

/** Where work was counted, in one sentence; EXPLAIN ANALYZE is named as the weaker source. */
function sourceLine(p: PlansReport): string {
  const note = p.stats.work_note ? ` ${text(p.stats.work_note)}.` : '';
  if (p.stats.source === 'pg_stat_statements') {
    const unjoined =
      p.stats.unjoined > 0
        ? ` ${plural(p.stats.unjoined, 'fingerprint')} not matched exactly: one EXPLAIN (ANALYZE, BUFFERS, WAL) instead, the weaker source (one execution, no spread).`
        : '';
    return `Counted by pg_stat_statements ${text(p.stats.pg_stat_statements ?? '')} in every replay of each side (summed, divided by the calls; the spread is the lowest and highest replay).${unjoined}${note}`;
  }
  const why = p.stats.unavailable_reason === null ? '' : ` (pg_stat_statements not available: ${text(p.stats.unavailable_reason)})`;
  return `Counted by one EXPLAIN (ANALYZE, BUFFERS, WAL) of the captured example per fingerprint and side, rolled back${why}: a weaker source than pg_stat_statements, one execution and no spread between replays.${note}`;
}

/** What an added index costs a write of this kind. */
export const ADDED_COSTS: Record<string, string> = {
  update: 'an UPDATE that sets an indexed column is no longer heap-only, so every index of the table gets a new entry',
  insert: 'every INSERT writes one more index entry',
  merge: 'every row it writes goes into one more index',
};

/** The index changes and plan changes beside the work that moved: why, and the migration line that did it. */
function whyLines(shown: FingerprintPlan[]): string[] {
  const lines: string[] = [];
  for (const f of shown) {
    const reasons = (f.index_changes ?? []).map((c) => {
      const where = c.migration ? ` by ${code(c.migration.file, 200)}, line ${c.migration.line}` : '';
      const cost = c.change === 'added' && ADDED_COSTS[f.kind] ? ` — ${ADDED_COSTS[f.kind]}` : '';
      return `index ${code(c.index, 120)} ${c.change} on ${text(c.relation)}${where}${cost}`;
    });
    if (f.changed && f.change) reasons.push(`plan changed: ${code(f.change, 200)}`);
    if (reasons.length > 0) lines.push(`- ${code(f.normalized, 80)}: ${reasons.join('; ')}`);
  }
  return lines.length > 0 ? ['What explains it:', '', ...lines, ''] : [];
}

/** What the work rule made of the moves: `(the work rule failed 1: …)`, or that it is off. */
function ruleLine(rule: WorkRule | null | undefined, measured: FingerprintPlan[]): string {
  if (rule === undefined) return '(reported, not gated: written before the work rule)';
  if (rule === null) return '(reported, not gated: the work rule is off)';
  const failed = measured.filter((f) => f.work_regression).length;
  const terms = `pages or WAL per call more than ${Math.round(rule.growth * 100)} % above base in every replay, or a changed plan that reads more than ${Math.round(rule.growth * 100)} % more rows at a higher cost, at least ${rule.min_share * 100} % of head's calls, pages or WAL`;
  return failed > 0 ? `(the work rule failed ${count(failed)}: ${terms})` : `(none failed the work rule: ${terms})`;
}

function moved(f: FingerprintPlan): boolean {
  return (f.work_changes?.length ?? 0) > 0 || !!f.work_regression?.rows_read;
}

/**
 * The "Work per call" section.
 * @param ctx the report, its limits
 * @returns its lines; none when the report has no work counts
 */
export function workSection(ctx: Context): string[] {
  const p = ctx.report.plans;
  if (!p || p.error !== null) return [];
  const measured = p.fingerprints.filter((f) => f.base.stats?.work && f.head.stats?.work);
  if (measured.length === 0) return [];
  const slower = new Set((ctx.report.comparison?.fingerprints ?? []).filter((f) => f.regressed).map((f) => f.fingerprint));
  // What failed the gate: slower, or more work by the work rule.
  const regressed = new Set([...slower, ...measured.filter((f) => f.work_regression).map((f) => f.fingerprint)]);
  // Latency regressions first, then more work, then less.
  const more = (f: FingerprintPlan) => !!f.work_regression?.rows_read || f.work_changes!.some((c) => c.direction === 'more');
  const rank = (f: FingerprintPlan) => (regressed.has(f.fingerprint) ? 0 : more(f) ? 1 : 2);
  const changed = measured.filter(moved).sort((a, b) => rank(a) - rank(b));
  const moreCount = changed.filter(more).length;
  const lines = ['#### Work per call', ''];
  if (changed.length === 0) {
    lines.push(
      `No fingerprint's work per call moved beyond base's own replays: ${plural(measured.length, 'fingerprint')} measured on both sides ${ruleLine(ctx.report.thresholds.work_rule, measured)}. ${sourceLine(p)}`,
      '',
    );
  } else {
    lines.push(
      `${count(moreCount)} of ${plural(measured.length, 'fingerprint')} measured did more work per call on head, ${count(changed.length - moreCount)} less ${ruleLine(ctx.report.thresholds.work_rule, measured)}. ${sourceLine(p)}`,
      '',
    );
    const cap = Math.min(CAP, ctx.limits.rows);
    const shown = changed.slice(0, cap);
    if (ctx.limits.rows < CAP) ctx.hiddenRows += Math.min(changed.length, CAP) - shown.length;
    const rows = shown.map((f) => {
      const changes = f.work_changes!;
      const label = !more(f) ? '✅ less' : regressed.has(f.fingerprint) ? '❌ more' : 'more';
      return [
        code(f.normalized, SQL_CHARS, true),
        label,
        movedWorkPhrase(f),
        spread(changes, f.base.stats?.work, true),
        spread(changes, f.head.stats?.work, false),
      ];
    });
    lines.push(
      ...mdTable(['statement', '', 'work per call, base → head', "base's replays", "head's replays"], rows, [
        'left',
        'left',
        'left',
        'left',
        'left',
      ]),
      ...(changed.length > shown.length ? ['', `_… ${plural(changed.length - shown.length, 'statement')} more in the JSON report._`] : []),
      '',
      ...whyLines(shown),
    );
  }
  const steady = measured.filter((f) => slower.has(f.fingerprint) && !moved(f));
  if (steady.length > 0) {
    lines.push(
      `${plural(steady.length, 'slower statement')} did the same work per call on both sides: the time went elsewhere (waits on locks or I/O, CPU), not to more pages or WAL.`,
      '',
      ...steady.slice(0, CAP).map((f) => `- ${code(f.normalized, 80)}: ${summary(f.head.stats!.work!.per_call)}`),
      '',
    );
  }
  return lines;
}
