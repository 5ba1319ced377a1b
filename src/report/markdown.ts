/**
 * The markdown report: the PR comment, the job summary and the CLI's report. One pure function;
 * posting it is someone else's job. GitHub refuses a comment over 65,536 characters, so the
 * report is rendered untruncated first and, when too long, again with fewer rows: first the
 * collapsed table of every fingerprint loses rows, then every other table, and a closing note
 * says what is missing and where to find it (the JSON report).
 */
import type { GateReport } from '../verdict/report-types.js';
import { count, plural } from '../format/units.js';
import {
  allFingerprintsSection,
  chartSection,
  environmentSection,
  errorSection,
  fidelitySection,
  migrationFailureSection,
  migrationsSection,
  newErrorsSection,
  varyingErrorsSection,
  regressionsSection,
  summarySection,
  verdictPhrase,
  verdictSection,
} from './markdown-sections.js';
import type { Context, Limits } from './markdown-context.js';
import { notComparedSection } from './markdown-coverage.js';
import { planChangesSection } from './markdown-plans.js';
import { workSection } from './markdown-work.js';
import { shardsSection } from './markdown-shards.js';
import { text } from './markdown-text.js';

/** GitHub's limit for a comment body, in characters. */
export const GITHUB_COMMENT_LIMIT = 65_536;

/** The default size, leaving room for a caller that wraps the report. */
export const DEFAULT_MAX_CHARS = 65_000;

export interface MarkdownOptions {
  /** The longest the result may be, in UTF-16 code units (what GitHub counts). Default 65,000. */
  maxChars?: number;
  /** Emitted first as a hidden HTML comment, so a later run finds and updates its own comment. */
  marker?: string;
  /** Replace data values in error messages (SQLSTATE classes 22 and 23, `Key (…)=(…)`). Default true. */
  maskValues?: boolean;
  /** A mermaid chart of the top regressions. Default true. */
  chart?: boolean;
}

/** Row counts tried for the other tables once the collapsed table is empty, most first. */
const ROW_STEPS = [10, 5, 3, 1, 0];

/**
 * Renders a gate report as markdown, under `maxChars`.
 * @param report the gate's report
 * @param options size limit, marker, masking, chart
 * @returns markdown ending in a newline
 */
export function renderMarkdown(report: GateReport, options: MarkdownOptions = {}): string {
  const maxChars = options.maxChars ?? DEFAULT_MAX_CHARS;
  const render = (limits: Limits) => renderWith(report, options, limits);

  const full = render({ all: Infinity, rows: Infinity });
  if (full.length <= maxChars) return full;

  // The length grows with the rows of the collapsed table: the most that fit, by bisection.
  const fingerprints = report.comparison?.fingerprints.length ?? 0;
  let low = 0;
  let high = fingerprints - 1;
  let best: string | null = null;
  while (low <= high) {
    const mid = Math.floor((low + high) / 2);
    const candidate = render({ all: mid, rows: Infinity });
    if (candidate.length <= maxChars) {
      best = candidate;
      low = mid + 1;
    } else {
      high = mid - 1;
    }
  }
  if (best !== null) return best;

  for (const rows of ROW_STEPS) {
    const candidate = render({ all: 0, rows });
    if (candidate.length <= maxChars) return candidate;
  }
  // Only a report whose headline, warnings or messages alone exceed the limit gets here.
  const last = [
    ...markerLines(options.marker),
    `### pg-retest: ${text(verdictPhrase(report).slice(0, 500))}`,
    '',
    '_Report too long to show here; the full report is in the JSON report / job artifacts._',
    '',
  ].join('\n');
  return last.length <= maxChars ? last : last.slice(0, Math.max(0, maxChars));
}

function renderWith(report: GateReport, options: MarkdownOptions, limits: Limits): string {
  const ctx: Context = { report, limits, mask: options.maskValues ?? true, hiddenFingerprints: 0, hiddenRows: 0 };
  const lines = [
    ...markerLines(options.marker),
    ...verdictSection(ctx),
    ...errorSection(ctx),
    ...migrationFailureSection(ctx),
    ...notComparedSection(report),
    ...summarySection(ctx),
    ...regressionsSection(ctx),
    ...(options.chart === false ? [] : chartSection(ctx)),
    ...newErrorsSection(ctx),
    ...varyingErrorsSection(ctx),
    ...planChangesSection(ctx),
    ...workSection(ctx),
    ...migrationsSection(ctx),
    ...fidelitySection(ctx),
    ...allFingerprintsSection(ctx),
    ...shardsSection(ctx),
    ...environmentSection(ctx),
  ];
  const note = truncationNote(ctx);
  if (note !== null) lines.push(note, '');
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return `${lines.join('\n')}\n`;
}

/** `_Report truncated: 4,800 fingerprints not shown; …_`, or null when nothing was left out. */
function truncationNote(ctx: Context): string | null {
  const parts: string[] = [];
  if (ctx.hiddenFingerprints > 0) parts.push(plural(ctx.hiddenFingerprints, 'fingerprint'));
  if (ctx.hiddenRows > 0) parts.push(`${count(ctx.hiddenRows)} other ${ctx.hiddenRows === 1 ? 'row' : 'rows'}`);
  if (parts.length === 0) return null;
  return `_Report truncated: ${parts.join(' and ')} not shown; the full report is in the JSON report / job artifacts._`;
}

/**
 * The marker as the first line. A marker given as a whole comment (`<!-- … -->`) is used as it is.
 * @throws Error when the marker would end the comment early
 */
function markerLines(marker: string | undefined): string[] {
  if (marker === undefined) return [];
  const trimmed = marker.trim();
  if (/^<!--[\s\S]*-->$/.test(trimmed) && !trimmed.slice(4, -3).includes('-->')) return [trimmed];
  if (trimmed.includes('-->') || /[\r\n]/.test(trimmed)) {
    throw new Error(`marker ${JSON.stringify(marker)}: must be one line without "-->"`);
  }
  return [`<!-- ${trimmed} -->`];
}
