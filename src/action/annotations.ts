/**
 * Check annotations on the migration lines behind a statement's extra work (docs/action.md,
 * "Annotations"): the report names, per fingerprint, the indexes head added or dropped on the
 * tables it writes and the migration statement that did it (docs/plans.md, "Index changes"). A
 * fingerprint that regressed or whose work per call moved puts one annotation on each such line,
 * so the PR's Files tab shows the line that costs the work, not only the comment.
 *
 * GitHub shows at most 10 errors, 10 warnings and 10 notices per step: the most important lines
 * are annotated, the rest are named in the job summary. This module decides; publish.ts prints.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { oneLine } from '../format/table.js';
import { micros, plural } from '../format/units.js';
import type { FingerprintPlan, IndexChange } from '../plans/types.js';
import { ADDED_COSTS } from '../report/markdown-work.js';
import { movedWorkPhrase } from '../plans/work-phrase.js';
import { text } from '../report/markdown-text.js';
import type { FingerprintComparison } from '../types.js';
import type { GateReport } from '../verdict/report-types.js';

export type AnnotationLevel = 'error' | 'warning' | 'notice';

/** One annotation on one migration line. */
export interface MigrationAnnotation {
  level: AnnotationLevel;
  /** The migration file: as the report names it, then relative to the repository's root. */
  file: string;
  line: number;
  title: string;
  message: string;
}

/**
 * How many of each level are printed. GitHub shows 10 of each per step; the step's own failure
 * (`core.setFailed`) is one error, and a comment that cannot be written or a regression that does
 * not fail the step is a warning, so those keep their place.
 */
export const ANNOTATION_CAPS: Record<AnnotationLevel, number> = { error: 9, warning: 8, notice: 10 };

/** Statements named in one annotation; the rest are counted. */
const STATEMENTS_PER_LINE = 3;
const SQL_CHARS = 100;

/** Why a fingerprint is annotated, most important first. */
const Weight = {
  /** A regression that fails the gate. */
  Fails: 0,
  /** A regression that does not fail the step (`fail-on-regression: false`). */
  Regressed: 1,
  More: 2,
  Less: 3,
} as const;
type Weight = (typeof Weight)[keyof typeof Weight];

interface Annotated {
  plan: FingerprintPlan;
  weight: Weight;
  /** The largest relative growth of a counter (Infinity from 0): orders lines of one weight. */
  growth: number;
  regression: FingerprintComparison | undefined;
}

/**
 * The annotations a report asks for, most important first: one per migration line, naming every
 * statement that line explains.
 * @param report the gate's report
 * @param failOnRegression the input: whether a regression fails the step (its lines are errors then)
 * @returns the annotations, `file` as the report names it
 */
export function migrationAnnotations(report: GateReport, failOnRegression: boolean): MigrationAnnotation[] {
  const plans = report.plans;
  if (!plans || plans.error !== null) return [];
  const regressed = new Map((report.comparison?.fingerprints ?? []).filter((f) => f.regressed).map((f) => [f.fingerprint, f]));
  const fails = failOnRegression && report.verdict === 'regression';
  const byLine = new Map<string, { file: string; line: number; changes: IndexChange[]; statements: Annotated[] }>();
  for (const plan of plans.fingerprints) {
    const annotated = annotatedOf(plan, regressed.get(plan.fingerprint), fails);
    if (!annotated) continue;
    for (const change of plan.index_changes ?? []) {
      if (!change.migration) continue;
      const key = `${change.migration.line}:${change.migration.file}`;
      const group = byLine.get(key) ?? { ...change.migration, changes: [], statements: [] };
      byLine.set(key, group);
      if (!group.changes.some((c) => c.index === change.index && c.change === change.change)) group.changes.push(change);
      if (!group.statements.includes(annotated)) group.statements.push(annotated);
    }
  }
  const groups = [...byLine.values()].map((g) => ({ ...g, statements: g.statements.sort(byImportance) }));
  groups.sort((a, b) => byImportance(a.statements[0]!, b.statements[0]!));
  return groups.map((g) => {
    const top = g.statements[0]!;
    return {
      level: top.weight === Weight.Fails ? 'error' : top.weight === Weight.Less ? 'notice' : 'warning',
      file: g.file,
      line: g.line,
      title: titleOf(g.changes, top.weight),
      message: messageOf(g.changes, g.statements),
    };
  });
}

function annotatedOf(plan: FingerprintPlan, regression: FingerprintComparison | undefined, fails: boolean): Annotated | null {
  const changes = plan.work_changes ?? [];
  const more = changes.filter((c) => c.direction === 'more');
  const growth = Math.max(0, ...more.map((c) => (c.change === null ? Number.POSITIVE_INFINITY : c.change)));
  let weight: Weight;
  // A work regression fails the gate like a slower statement does.
  if (regression || plan.work_regression) weight = fails ? Weight.Fails : Weight.Regressed;
  else if (more.length > 0) weight = Weight.More;
  else if (changes.length > 0) weight = Weight.Less;
  else return null;
  return { plan, weight, growth, regression };
}

function byImportance(a: Annotated, b: Annotated): number {
  return a.weight - b.weight || b.growth - a.growth || a.plan.fingerprint.localeCompare(b.plan.fingerprint);
}

const EFFECTS: Record<Weight, string> = {
  [Weight.Fails]: 'a statement it affects regressed',
  [Weight.Regressed]: 'a statement it affects is slower',
  [Weight.More]: 'more work per call',
  [Weight.Less]: 'less work per call',
};

/** `pg-retest: index customers_last_login_idx added, more work per call` */
function titleOf(changes: IndexChange[], weight: Weight): string {
  const indexes = changes.map((c) => `${c.index} ${c.change}`).join(', ');
  return `pg-retest: index ${indexes}, ${EFFECTS[weight]}`;
}

/** One line per statement (what moved), then what the index costs. */
function messageOf(changes: IndexChange[], statements: Annotated[]): string {
  const lines = statements.slice(0, STATEMENTS_PER_LINE).map((s) => `${oneLine(s.plan.normalized, SQL_CHARS)}: ${movedOf(s)}`);
  if (statements.length > STATEMENTS_PER_LINE) lines.push(`and ${plural(statements.length - STATEMENTS_PER_LINE, 'more statement')}`);
  const kind = statements[0]!.plan.kind;
  for (const c of changes) {
    const cost = c.change === 'added' && ADDED_COSTS[kind] ? `: ${ADDED_COSTS[kind]}` : '';
    lines.push(`index ${c.index} ${c.change} on ${c.relation}${cost}`);
  }
  return lines.join('\n');
}

/** `slower (p95 1.20 ms → 3.40 ms); WAL 91 B → 307 B per call (+239 %)` */
function movedOf(s: Annotated): string {
  const parts: string[] = [];
  const r = s.regression;
  if (r) {
    // The rule that fired: the server-time median's, else the client's p95.
    const server = r.rules.includes('server_time') ? r.server_time : null;
    const times = server
      ? `server time median ${micros(server.base.p50_us)} → ${micros(server.head.p50_us)}`
      : `p95 ${micros(r.base.p95_us)} → ${micros(r.head.p95_us)}`;
    parts.push(`slower (${times})${s.weight === Weight.Fails ? ', fails the gate' : ''}`);
  }
  const work = movedWorkPhrase(s.plan);
  const ruled = !r && s.plan.work_regression && s.weight === Weight.Fails ? ', fails the gate (the work rule)' : '';
  parts.push(work === '' ? 'the same work per call' : `${work}${ruled}`);
  return parts.join('; ');
}

/**
 * A migration file as GitHub names it in an annotation: relative to the root of the repository
 * it is in (the workspace, unless the checkout went to a subdirectory of it). A file of another
 * repository (a path outside the workspace) has no line in this PR.
 * @param file the file as the report names it (relative to the working directory)
 * @param workspace the working directory
 * @returns the path, or null for a file outside the workspace and its repository
 */
export function repositoryPath(file: string, workspace: string): string | null {
  let absolute = path.resolve(workspace, file);
  try {
    absolute = fs.realpathSync(absolute);
  } catch {
    // Gone since the run: still named as the report names it.
  }
  const ws = realpath(workspace);
  const within = (dir: string, root: string): string | null => {
    const relative = path.relative(root, dir);
    return relative.startsWith('..') || path.isAbsolute(relative) ? null : relative.split(path.sep).join('/');
  };
  const root = gitRoot(path.dirname(absolute));
  // The workspace's repository, or one checked out inside the workspace.
  const ours = root !== null && (within(root, ws) !== null || within(ws, root) !== null) ? root : ws;
  const relative = within(absolute, ours);
  return relative === '' ? null : relative;
}

function gitRoot(dir: string): string | null {
  try {
    return (
      execFileSync('git', ['rev-parse', '--show-toplevel'], {
        cwd: dir,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
        timeout: 10_000,
      }).trim() || null
    );
  } catch {
    return null;
  }
}

function realpath(dir: string): string {
  try {
    return fs.realpathSync(dir);
  } catch {
    return path.resolve(dir);
  }
}

/** The annotations to print, and those left out (by GitHub's limits or a path it cannot show). */
export interface AnnotationPlan {
  shown: MigrationAnnotation[];
  /** Left out: `db/migrations/006.sql line 2` and why. */
  left: { annotation: MigrationAnnotation; reason: 'limit' | 'outside' }[];
}

/**
 * Puts each annotation's file relative to its repository and keeps, per level, as many as
 * {@link ANNOTATION_CAPS} allows, in their order.
 * @param annotations most important first, files as the report names them
 * @param toRepository a file's path for GitHub, or null when it has none
 * @returns what to print and what is left out
 */
export function capAnnotations(annotations: MigrationAnnotation[], toRepository: (file: string) => string | null): AnnotationPlan {
  const plan: AnnotationPlan = { shown: [], left: [] };
  const used: Record<AnnotationLevel, number> = { error: 0, warning: 0, notice: 0 };
  for (const annotation of annotations) {
    const file = toRepository(annotation.file);
    if (file === null) plan.left.push({ annotation, reason: 'outside' });
    else if (used[annotation.level] >= ANNOTATION_CAPS[annotation.level]) plan.left.push({ annotation, reason: 'limit' });
    else {
      used[annotation.level]++;
      plan.shown.push({ ...annotation, file });
    }
  }
  return plan;
}

/** Lines of the left-out annotations named in the summary; the rest are counted. */
const LEFT_NAMED = 10;

/**
 * The job summary's paragraph on the migration lines that were not annotated; empty when none.
 * @param plan the annotations printed and left out
 * @returns markdown
 */
export function leftOutNote(plan: AnnotationPlan): string {
  if (plan.left.length === 0) return '';
  const limit = plan.left.filter((l) => l.reason === 'limit').length;
  const outside = plan.left.length - limit;
  const why = [
    limit > 0 ? `${limit} over GitHub's limit of 10 annotations of a kind per step` : '',
    outside > 0 ? `${outside} outside the repository` : '',
  ]
    .filter((s) => s !== '')
    .join(', ');
  const named = plan.left.slice(0, LEFT_NAMED).map((l) => `${l.annotation.file} line ${l.annotation.line}`);
  const more = plan.left.length > LEFT_NAMED ? ` and ${plan.left.length - LEFT_NAMED} more` : '';
  return `\n_Annotated ${plural(plan.shown.length, 'migration line')}; ${plural(plan.left.length, 'more line')} behind statements' work not annotated (${why}): ${text(named.join(', '))}${more}. The JSON report names every one (index\\_changes)._\n`;
}
