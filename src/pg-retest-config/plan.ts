/**
 * What a pg-retest pipeline config asks for, turned into what this tool will do (parse first,
 * then resolve): where the workload comes from, where it is replayed, which limits and which
 * comparison decide the verdict — and, for every key the file set, one sentence saying how it
 * was understood, which the report carries. No I/O here: a key that asks for something this
 * tool cannot do is refused with one line naming the key and the alternative (exit 2), before
 * any work starts.
 */
import { InputError } from '../exit-codes.js';
import { SUPPORTED_MAJORS } from '../provision/binaries.js';
import { conninfoToUrl } from './conninfo.js';
import type { PipelineConfig } from './config.js';

/** How the run gets a server when it starts one: pg-retest's docker backend, or one of ours. */
export type StartBackend = 'docker' | 'embedded' | 'local';

export type TargetPlan =
  | { kind: 'url'; url: string; key: 'replay.target' | 'provision.connection_string' }
  | { kind: 'start'; backend: StartBackend; image: string; major: number | undefined; restoreFrom: string | undefined };

export type WorkloadSource =
  | { kind: 'file'; path: string }
  | { kind: 'capture'; log: string; sourceHost: string | undefined; pgVersion: string | undefined };

export interface ReplaySettings {
  speed: number;
  readOnly: boolean;
  /** Write a workload's changes into a database the run did not create (refused otherwise). */
  allowWrites: boolean;
  /** Send statements that act beyond the database to a server the run did not start (skipped otherwise). */
  allowServerWide: boolean;
  scale: number;
  staggerMs: number;
  classScale: { scaleAnalytical?: number; scaleTransactional?: number; scaleMixed?: number; scaleBulk?: number };
}

/** pg-retest's absolute limits, inclusive, on the replayed (candidate) side. */
export interface PipelineLimits {
  p95MaxMs?: number;
  p99MaxMs?: number;
  /** Percent: 1 is 1 % of the executed statements. */
  errorRateMaxPct?: number;
}

export interface RunPlan {
  config: PipelineConfig;
  mode: 'single-target' | 'variants';
  workload: WorkloadSource;
  /** The one target (single-target mode). */
  target: TargetPlan | null;
  /** Baseline first (variants mode). */
  variants: { label: string; url: string }[];
  replay: ReplaySettings;
  limits: PipelineLimits;
  /** A fraction: regression_threshold_pct / 100, the comparison's p95 threshold. */
  p95Threshold: number;
  /** regression_max_count: slower queries a candidate may have and still pass; undefined when not set. */
  regressionMaxCount: number | undefined;
  outputs: { json?: string; junit?: string };
  /** How each key of the file was understood, by key (`replay.speed`); the run may refine them. */
  notes: Map<string, string>;
  warnings: string[];
}

/**
 * Resolves a config into a plan.
 * @param config the validated file
 * @returns the plan
 * @throws InputError naming the key, for what this tool cannot do or a config without a workload or a target
 */
export function planRun(config: PipelineConfig): RunPlan {
  const fail = (key: string, message: string): never => {
    throw new InputError(`config ${config.file}: ${key}: ${message}`);
  };
  const notes = new Map<string, string>();
  const note = (key: string, text: string) => notes.set(key, text);
  const warnings = [...config.warnings];
  const variantsMode = config.variants.length >= 2;

  const workload = workloadSource(config, note, fail);

  const variants = variantsMode
    ? config.variants.map((v, i) => {
        const url = targetUrl(v.target, `[[variants]] #${i + 1} target`, fail);
        note(
          `variants[${i + 1}].label`,
          i === 0 ? 'the baseline: every other variant is gated against it' : `a candidate, gated against '${config.variants[0]!.label}'`,
        );
        note(
          `variants[${i + 1}].target`,
          `where '${v.label}' is replayed: each replay runs on a fresh copy of this database when the user may create databases there, else in it`,
        );
        return { label: v.label, url };
      })
    : [];
  if (config.variants.length === 1) {
    const text = 'not used: one variant is no A/B comparison (pg-retest needs two as well)';
    note('variants[1].label', text);
    note('variants[1].target', text);
    warnings.push(`config ${config.file}: a single [[variants]] entry is ignored; A/B mode needs two or more`);
  }

  const target = variantsMode ? null : singleTarget(config, note, fail);
  if (variantsMode) {
    const unused = 'not used: with [[variants]], each variant is replayed against its own target (as pg-retest does)';
    if (config.replay.target !== undefined) note('replay.target', unused);
    for (const key of ['backend', 'image', 'restore_from', 'connection_string', 'port']) note(`provision.${key}`, unused);
  }

  const replay = replaySettings(config, variantsMode, note);
  const limits = limitsOf(config, variantsMode, note);
  const t = config.thresholds;
  const p95Threshold = t.regressionThresholdPct / 100;
  if (variantsMode) {
    note(
      'thresholds.regression_threshold_pct',
      `the p95 threshold of the comparison with '${config.variants[0]!.label}': a query regresses when its p95 grows by more than ${t.regressionThresholdPct} % ` +
        "and its 95 % confidence interval clears the noise floor measured by replaying the baseline twice (pg-retest compared single executions with the capture's durations)",
    );
    if (t.regressionMaxCount !== undefined) {
      note(
        'thresholds.regression_max_count',
        t.regressionMaxCount === 0
          ? 'any query slower than the baseline (by the rule above) fails the run'
          : `up to ${t.regressionMaxCount} queries may be slower than the baseline and the run still passes (pg-retest counted single executions slower than captured; here each is a query confirmed slower over all rounds)`,
      );
      if (t.regressionMaxCount > 0) {
        warnings.push(
          `regression_max_count = ${t.regressionMaxCount} lets ${t.regressionMaxCount} queries confirmed slower than the baseline pass; in pg-retest it absorbed per-execution noise that this comparison already accounts for, so 0 is what most configs mean`,
        );
      }
    }
  } else {
    const why =
      'a single target has no baseline replay to compare with; pg-retest compared the replay with the durations recorded at capture, on another server under another load, which is not a measure of a regression';
    if (t.regressionMaxCount !== undefined) {
      note(
        'thresholds.regression_max_count',
        `not evaluated: ${why}. The run is inconclusive (exit 4) unless a limit fails; give two [[variants]] (the baseline first) to gate regressions, or use pg-retest-action gate`,
      );
    }
    if (config.given.some((g) => g.key === 'thresholds.regression_threshold_pct')) {
      note('thresholds.regression_threshold_pct', `not used: it defines regression_max_count's regressions, and ${why}`);
    }
  }

  if (config.output.jsonReport !== undefined)
    note('output.json_report', "the run's JSON report (written whatever the outcome, errors included)");
  if (config.output.junitXml !== undefined) {
    note(
      'output.junit_xml',
      `JUnit XML: one test case per threshold, named as pg-retest names them${variantsMode ? ', and per compared query of each candidate' : ''}`,
    );
  }

  return {
    config,
    mode: variantsMode ? 'variants' : 'single-target',
    workload,
    target,
    variants,
    replay,
    limits,
    p95Threshold,
    regressionMaxCount: t.regressionMaxCount,
    outputs: { json: config.output.jsonReport, junit: config.output.junitXml },
    notes,
    warnings,
  };
}

type Note = (key: string, text: string) => void;
type Fail = (key: string, message: string) => never;

function workloadSource(config: PipelineConfig, note: Note, fail: Fail): WorkloadSource {
  const c = config.capture;
  const capturedKeys = ['source_host', 'pg_version', 'mask_values'];
  const rdsKeys = ['rds_instance', 'rds_region', 'rds_log_file'];
  if (c.workload !== undefined) {
    note('capture.workload', 'the workload replayed (a .wkl as pg-retest writes it, every format version)');
    for (const key of ['source_log', 'source_type', ...capturedKeys, ...rdsKeys])
      note(`capture.${key}`, 'not used: capture.workload is given and takes precedence, as in pg-retest');
    return { kind: 'file', path: c.workload };
  }
  if (c.sourceType === 'rds') {
    fail(
      '[capture] source_type',
      "'rds' is not supported here: pg-retest-action does not call AWS. Download the logs first (aws rds download-db-log-file-portion " +
        '--db-instance-identifier NAME --log-file-name error/postgresql.log.… --starting-token 0 --output text > postgresql.csv, with ' +
        'log_destination = csvlog in the parameter group) and set source_log to that file with source_type = "pg-csv", or capture with ' +
        'pg-retest and set workload to its .wkl',
    );
  }
  if (c.sourceType === 'mysql-slow') {
    fail(
      '[capture] source_type',
      "'mysql-slow' is not supported here: pg-retest-action replays PostgreSQL workloads captured from PostgreSQL logs. Convert the slow log " +
        'with pg-retest (pg-retest capture --source-type mysql-slow … -o workload.wkl) and set workload to that file',
    );
  }
  if (c.sourceLog === undefined) {
    fail('[capture]', 'no workload: set workload (a .wkl file) or source_log (a PostgreSQL csvlog or jsonlog file to capture)');
  }
  note(
    'capture.source_log',
    "captured with pg-retest-action's log capture (csvlog or jsonlog) into a workload kept for this run only; the statements that failed at capture time and those left out are in the capture summary",
  );
  if (config.given.some((g) => g.key === 'capture.source_type'))
    note('capture.source_type', 'pg-csv: a PostgreSQL csvlog (a jsonlog is recognised too)');
  for (const key of ['source_host', 'pg_version']) note(`capture.${key}`, 'recorded in the captured workload (informational)');
  note(
    'capture.mask_values',
    c.maskValues
      ? "not applied: pg-retest's masking replaces literals with $S and $N, which PostgreSQL cannot execute, so a masked workload cannot be replayed; the captured workload is removed after the run, and the reports mask data values in error messages"
      : 'literals kept (the workload must run)',
  );
  for (const key of rdsKeys) note(`capture.${key}`, 'not used: source_type is not rds');
  return { kind: 'capture', log: c.sourceLog!, sourceHost: c.sourceHost, pgVersion: c.pgVersion };
}

/** How a target the run did not create is used. */
const IN_PLACE =
  'the database replayed against, in place, as pg-retest does; a workload that may change data is refused there unless ' +
  '[replay] allow_writes = true (its writes then stay in it) or read_only = true';

function singleTarget(config: PipelineConfig, note: Note, fail: Fail): TargetPlan {
  const p = config.provision;
  const provisionKeys = ['backend', 'image', 'restore_from', 'connection_string', 'port'];
  if (config.replay.target !== undefined) {
    note('replay.target', IN_PLACE);
    for (const key of provisionKeys)
      note(`provision.${key}`, 'not used: [replay] target is set, and pg-retest ignores [provision] then too');
    return { kind: 'url', url: targetUrl(config.replay.target, '[replay] target', fail), key: 'replay.target' };
  }
  if (p?.connectionString !== undefined) {
    note('provision.connection_string', IN_PLACE);
    for (const key of ['backend', 'image', 'port'])
      note(`provision.${key}`, 'not used: connection_string is given, so no server is started (as in pg-retest)');
    note(
      'provision.restore_from',
      'not applied: pg-retest loads it only into the server it starts; the database behind connection_string is used as it is',
    );
    return { kind: 'url', url: targetUrl(p.connectionString, '[provision] connection_string', fail), key: 'provision.connection_string' };
  }
  if (p === null) {
    return fail(
      '[replay] target',
      'no target: set [replay] target (a connection string), [provision] connection_string, [provision] backend = "docker" (a throwaway server), or two [[variants]]',
    );
  }
  if (p.backend === undefined)
    return fail(
      '[provision] backend',
      'is required when [provision] has no connection_string: "docker" starts a throwaway server for the run',
    );
  if (!['docker', 'embedded', 'local'].includes(p.backend)) {
    return fail(
      '[provision] backend',
      `expected "docker" (pg-retest's only backend), or "embedded" or "local" (servers pg-retest-action starts without Docker), got ${JSON.stringify(p.backend)}`,
    );
  }
  const major = majorOfImage(p.image);
  if (p.backend !== 'docker' && major !== undefined && !(SUPPORTED_MAJORS as readonly number[]).includes(major)) {
    return fail(
      '[provision] image',
      `PostgreSQL ${major} cannot be started without Docker; the ${p.backend} backend has majors ${SUPPORTED_MAJORS.join(', ')}`,
    );
  }
  note(
    'provision.image',
    major === undefined ? `${p.image}: no major in the tag, so the newest available` : `${p.image}: PostgreSQL ${major}`,
  );
  note('provision.port', 'not used: the server listens on a free port of 127.0.0.1 (nothing outside the run connects to it)');
  if (p.restoreFrom !== undefined) note('provision.restore_from', 'loaded into the started server before the replay');
  return { kind: 'start', backend: p.backend as StartBackend, image: p.image, major, restoreFrom: p.restoreFrom };
}

/**
 * The PostgreSQL major an image tag names: `postgres:16`, `postgres:16.4-alpine`,
 * `postgis/postgis:16-3.4`, `timescale/timescaledb:latest-pg16`.
 * @param image the image
 * @returns the major, or undefined for `latest` or no tag
 */
export function majorOfImage(image: string): number | undefined {
  const slash = image.lastIndexOf('/');
  const colon = image.indexOf(':', slash + 1);
  if (colon < 0) return undefined;
  const tag = image.slice(colon + 1);
  const match = /^(\d+)(?:[.\-_]|$)/.exec(tag) ?? /(?:^|-)pg(\d+)(?:[.\-_]|$)/.exec(tag);
  return match ? Number(match[1]) : undefined;
}

function targetUrl(conninfo: string, key: string, fail: Fail): string {
  try {
    return conninfoToUrl(conninfo);
  } catch (error) {
    return fail(key, (error as Error).message);
  }
}

function replaySettings(config: PipelineConfig, variantsMode: boolean, note: Note): ReplaySettings {
  const r = config.replay;
  note('replay.speed', r.speed === 0 ? 'as fast as possible (0), as in pg-retest' : `${r.speed}× the captured timing, as in pg-retest`);
  note(
    'replay.read_only',
    r.readOnly
      ? "only statements that cannot change data are sent, as PostgreSQL's parser judges them (pg-retest sends whatever starts with SELECT or WITH, data-modifying CTEs included); the others are reported as skipped and not held against coverage"
      : 'every statement is sent',
  );
  note(
    'replay.allow_writes',
    r.allowWrites
      ? 'a workload that may change data is written into a target the run did not create'
      : 'a workload that may change data is refused on a target the run did not create',
  );
  note(
    'replay.allow_server_wide',
    r.allowServerWide
      ? 'statements that act beyond the database (roles, server settings, other databases, server files, other sessions) are sent to the targets'
      : 'statements that act beyond the database are skipped on a target the run did not start',
  );
  const scaling = variantsMode ? ', in every replay of every variant (pg-retest does not scale A/B replays)' : '';
  note('replay.scale', `${r.scale} cop${r.scale === 1 ? 'y' : 'ies'} of every session${scaling}`);
  note('replay.stagger_ms', `copy k of a session starts k × ${r.staggerMs} ms later${scaling}`);
  for (const [key, value] of [
    ['scale_analytical', r.scaleAnalytical],
    ['scale_transactional', r.scaleTransactional],
    ['scale_mixed', r.scaleMixed],
    ['scale_bulk', r.scaleBulk],
  ] as const) {
    if (value !== undefined)
      note(`replay.${key}`, `${value} cop${value === 1 ? 'y' : 'ies'} of each ${key.slice(6)} session instead of scale${scaling}`);
  }
  const classScale: ReplaySettings['classScale'] = {};
  if (r.scaleAnalytical !== undefined) classScale.scaleAnalytical = r.scaleAnalytical;
  if (r.scaleTransactional !== undefined) classScale.scaleTransactional = r.scaleTransactional;
  if (r.scaleMixed !== undefined) classScale.scaleMixed = r.scaleMixed;
  if (r.scaleBulk !== undefined) classScale.scaleBulk = r.scaleBulk;
  return {
    speed: r.speed,
    readOnly: r.readOnly,
    allowWrites: r.allowWrites,
    allowServerWide: r.allowServerWide,
    scale: r.scale,
    staggerMs: r.staggerMs,
    classScale,
  };
}

function limitsOf(config: PipelineConfig, variantsMode: boolean, note: Note): PipelineLimits {
  const t = config.thresholds;
  const on = variantsMode ? 'every variant but the first, all its replays pooled' : 'the replay';
  if (t.p95MaxMs !== undefined) {
    note(
      'thresholds.p95_max_ms',
      `fails when the whole-workload p95 of successful statements on ${on} is above ${t.p95MaxMs} ms (inclusive limit, as in pg-retest, which also counted failed and skipped statements as 0 µs)`,
    );
  }
  if (t.p99MaxMs !== undefined)
    note(
      'thresholds.p99_max_ms',
      `fails when the whole-workload p99 of successful statements on ${on} is above ${t.p99MaxMs} ms (inclusive limit)`,
    );
  if (t.errorRateMaxPct !== undefined) {
    note(
      'thresholds.error_rate_max_pct',
      `fails when more than ${t.errorRateMaxPct} % of the statements executed on ${on} fail (pg-retest also counted statements skipped after a failed transaction as errors)`,
    );
  }
  return { p95MaxMs: t.p95MaxMs, p99MaxMs: t.p99MaxMs, errorRateMaxPct: t.errorRateMaxPct };
}
