/**
 * What share of the captured workload a side actually ran, and what it did not run and why.
 *
 * A replay whose statements fail early in their transactions skips the rest of each
 * transaction: the statements a PR is most likely to slow down may then never run on either
 * side, and a latency comparison of what did run says nothing about them. So every report states
 * per side captured / executed / skipped / not executed with the reasons, names the fingerprints
 * that never ran, and a run where base executed less than `min-coverage` of what was captured is
 * inconclusive rather than a pass (docs/gate.md, "Coverage").
 */
import { oneLine } from '../format/table.js';
import { plural } from '../format/units.js';
import { maskMessage } from '../format/mask.js';
import type { FingerprintReport, ReplayReport } from '../types.js';
import type { Coverage, KeysSummary, NotCompared, SideCoverage } from './report-types.js';

/** The engine's skip and not-executed reasons, in words. */
const REASONS: Record<string, string> = {
  transaction_aborted: 'an earlier statement of its transaction failed',
  read_only: 'the replay was read-only',
  server_wide:
    "it acts beyond the replay's database (roles, server settings, other databases, server files, other sessions) on a server the run did not start",
  connect_failed: 'its session was refused a connection',
  connection_lost: 'its connection broke',
  server_unavailable: 'the server became unavailable',
  deadline: "the replay's deadline passed",
  cancelled: 'the replay was cancelled',
  unresponsive: 'the server stopped answering',
};

/**
 * A reason in words.
 * @param reason the engine's name (`transaction_aborted`, …)
 * @returns words, or the name itself for a reason this version does not know
 */
export function reasonInWords(reason: string): string {
  return REASONS[reason] ?? reason.replaceAll('_', ' ');
}

function add(into: Record<string, number>, from: Partial<Record<string, number>>): void {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + (v ?? 0);
}

function sideCoverage(reports: ReplayReport[]): SideCoverage {
  const side: SideCoverage = {
    captured: 0,
    executed: 0,
    skipped: 0,
    not_executed: 0,
    skipped_by_reason: {},
    not_executed_by_reason: {},
    executed_share: 1,
  };
  for (const r of reports) {
    side.captured += r.totals.captured;
    side.executed += r.totals.executed;
    side.skipped += r.totals.skipped;
    side.not_executed += r.totals.not_executed;
    add(side.skipped_by_reason, r.totals.skipped_by_reason);
    add(side.not_executed_by_reason, r.totals.not_executed_by_reason);
  }
  side.executed_share = side.captured === 0 ? 1 : side.executed / side.captured;
  return side;
}

/** The most frequent error of a side's replays, as `23503 on \`INSERT …\`: message`. */
function mostFrequentError(reports: ReplayReport[]): string | null {
  const counts = new Map<string, { n: number; f: FingerprintReport; sqlstate: string; message: string }>();
  for (const r of reports) {
    for (const f of r.fingerprints) {
      for (const e of f.errors) {
        const key = `${f.fingerprint}/${e.sqlstate}`;
        const seen = counts.get(key) ?? { n: 0, f, sqlstate: e.sqlstate, message: e.message };
        seen.n += e.count;
        counts.set(key, seen);
      }
    }
  }
  const top = [...counts.values()].sort((a, b) => b.n - a.n || a.f.fingerprint.localeCompare(b.f.fingerprint))[0];
  if (!top) return null;
  return `${top.sqlstate} on \`${oneLine(top.f.normalized, 80)}\`: ${maskMessage(top.message, top.sqlstate)}`;
}

/** The reason with the most statements, over both sides. */
function dominantReason(byReason: Record<string, number>): string | null {
  const top = Object.entries(byReason).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0];
  return top ? top[0] : null;
}

/**
 * Coverage of a gate run.
 * @param base base's replays (the noise replay included: it replays base)
 * @param head head's replays
 * @param minCoverage the share of captured statements base must execute (a fraction)
 * @returns per-side figures, whether base ran enough, and what never ran
 */
export function coverageOf(base: ReplayReport[], head: ReplayReport[], minCoverage: number): Coverage {
  const baseSide = sideCoverage(base);
  const headSide = sideCoverage(head);
  const firstCause = baseSide.skipped_by_reason.transaction_aborted ? mostFrequentError(base) : null;
  const byFingerprint = new Map<string, { f: FingerprintReport; captured: number; executed: number; reasons: Record<string, number> }>();
  for (const r of [...base, ...head]) {
    for (const f of r.fingerprints) {
      const seen = byFingerprint.get(f.fingerprint) ?? { f, captured: 0, executed: 0, reasons: {} };
      seen.captured += f.counts.captured;
      seen.executed += f.counts.executed;
      add(seen.reasons, f.counts.skipped_by_reason);
      add(seen.reasons, f.counts.not_executed_by_reason);
      byFingerprint.set(f.fingerprint, seen);
    }
  }
  const notCompared: NotCompared[] = [];
  for (const { f, captured, executed, reasons } of byFingerprint.values()) {
    if (captured === 0 || executed > 0) continue;
    const main = dominantReason(reasons);
    const why = main === null ? 'it was never sent' : reasonInWords(main);
    notCompared.push({ fingerprint: f.fingerprint, normalized: f.normalized, captured, reason: why });
  }
  notCompared.sort((a, b) => b.captured - a.captured || a.fingerprint.localeCompare(b.fingerprint));
  return {
    base: baseSide,
    head: headSide,
    min_coverage: minCoverage,
    sufficient: baseSide.executed_share >= minCoverage,
    first_cause: firstCause,
    not_compared: notCompared,
  };
}

/**
 * What key correlation and sequence alignment did over a run's replays.
 * @param reports every replay of the run
 * @returns null when the workload has no generated keys and no sequence was touched
 */
export function keysSummary(reports: ReplayReport[]): KeysSummary | null {
  const withKeys = reports.filter((r) => r.correlation);
  const sequences = reports.find((r) => r.sequences)?.sequences ?? null;
  if (withKeys.length === 0 && sequences === null) return null;
  const first = withKeys[0]?.correlation;
  const correlation = first
    ? {
        ...first,
        substituted: withKeys.reduce((n, r) => n + r.correlation!.substituted, 0),
        unresolved: withKeys.reduce((n, r) => n + r.correlation!.unresolved, 0),
      }
    : null;
  return { replays: reports.length, correlation, sequences };
}

/** `192 skipped (an earlier statement of its transaction failed)`, per reason, for headlines. */
function notRunParts(side: SideCoverage): string[] {
  const parts: string[] = [];
  for (const [reason, n] of Object.entries(side.skipped_by_reason).sort((a, b) => b[1] - a[1])) {
    if (n > 0) parts.push(`${plural(n, 'statement')} skipped because ${reasonInWords(reason)}`);
  }
  for (const [reason, n] of Object.entries(side.not_executed_by_reason).sort((a, b) => b[1] - a[1])) {
    if (n > 0) parts.push(`${plural(n, 'statement')} not sent because ${reasonInWords(reason)}`);
  }
  return parts;
}

/** `31 %` */
export function sharePercent(share: number): string {
  const pct = share * 100;
  return `${pct >= 10 || pct === 0 ? pct.toFixed(0) : pct.toFixed(1)} %`;
}

/**
 * The headline of an inconclusive run: what did not run on base, and why.
 * @param c the run's coverage
 * @returns one line
 */
export function inconclusiveHeadline(c: Coverage): string {
  const missing = 1 - c.base.executed_share;
  const parts = notRunParts(c.base);
  const cause = c.first_cause ? `; the most frequent error: ${c.first_cause}` : '';
  return (
    `inconclusive: ${sharePercent(missing)} of the captured statements did not run on base (minimum coverage ${sharePercent(c.min_coverage)}): ` +
    `${parts.join(', ') || 'none was sent'}${cause}`
  );
}

/**
 * Warnings for what was not compared, to go first among a report's warnings.
 * @param c the run's coverage
 * @returns one line per fingerprint that never ran (at most 20, then a count)
 */
export function notComparedWarnings(c: Coverage): string[] {
  const shown = c.not_compared
    .slice(0, 20)
    .map((n) => `not compared: \`${oneLine(n.normalized, 80)}\` (${n.fingerprint}) never executed on either side: ${n.reason}`);
  if (c.not_compared.length > shown.length)
    shown.push(
      `not compared: ${plural(c.not_compared.length - shown.length, 'more fingerprint')} never executed (listed in the JSON report)`,
    );
  return shown;
}
