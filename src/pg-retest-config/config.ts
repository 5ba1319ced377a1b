/**
 * pg-retest's pipeline config (`.pg-retest.toml`, the file `pg-retest run --config` reads), read
 * as pg-retest reads it: the sections `[capture]`, `[provision]`, `[replay]`, `[thresholds]`,
 * `[output]` and `[[variants]]`, each key with pg-retest's type and default. Keys pg-retest does
 * not know are ignored by it; here each one is a warning, so a typo does not pass unseen. A value
 * of the wrong type or range stops the run with one line naming the key (exit 2).
 *
 * This module only reads and validates; what each key means for a run is decided in plan.ts.
 */
import fs from 'node:fs';
import { parse, TomlError } from 'smol-toml';
import { z } from 'zod';
import { InputError } from '../exit-codes.js';

/** One key of the file, as given (connection strings masked), for the report. */
export interface GivenKey {
  /** `replay.speed`, `variants[2].target`. */
  key: string;
  /** The value as written, connection strings replaced by `(connection string)`. */
  value: string;
}

export interface PipelineConfig {
  /** The file, as named. */
  file: string;
  capture: {
    workload?: string;
    sourceLog?: string;
    sourceType: 'pg-csv' | 'mysql-slow' | 'rds';
    sourceHost?: string;
    pgVersion?: string;
    maskValues: boolean;
    rdsInstance?: string;
    rdsRegion?: string;
    rdsLogFile?: string;
  };
  /** Null when the file has no `[provision]` section. */
  provision: {
    backend?: string;
    image: string;
    restoreFrom?: string;
    connectionString?: string;
    port: number;
  } | null;
  replay: {
    speed: number;
    readOnly: boolean;
    /** Ours (pg-retest ignores it): write a workload's changes into a database the run did not create. */
    allowWrites: boolean;
    /** Ours: send statements that act beyond the database to a server the run did not start. */
    allowServerWide: boolean;
    scale: number;
    staggerMs: number;
    scaleAnalytical?: number;
    scaleTransactional?: number;
    scaleMixed?: number;
    scaleBulk?: number;
    target?: string;
  };
  thresholds: {
    p95MaxMs?: number;
    p99MaxMs?: number;
    /** Percent, as pg-retest writes it: 1.0 is 1 %. */
    errorRateMaxPct?: number;
    regressionMaxCount?: number;
    /** Percent; pg-retest's default 20. */
    regressionThresholdPct: number;
  };
  output: { jsonReport?: string; junitXml?: string };
  variants: { label: string; target: string }[];
  /** Every key the file set, in file order. */
  given: GivenKey[];
  /** Unknown sections and keys, one line each. */
  warnings: string[];
}

/** pg-retest's defaults (its src/config/mod.rs). */
export const PG_RETEST_DEFAULTS = {
  sourceType: 'pg-csv',
  image: 'postgres:16',
  speed: 1,
  scale: 1,
  staggerMs: 0,
  regressionThresholdPct: 20,
} as const;

type Kind = 'text' | 'secret' | 'path' | 'bool' | 'number' | 'integer';

interface KeySpec {
  kind: Kind;
  /** What is allowed, in the user's words. */
  expected: string;
  accept?: (value: never) => boolean;
}

const text = (expected = 'a string'): KeySpec => ({ kind: 'text', expected });
const secret: KeySpec = { kind: 'secret', expected: 'a connection string (host=… port=… user=… dbname=…, or a postgres:// URL)' };
const path = (what: string): KeySpec => ({ kind: 'path', expected: `a path: ${what}` });
const bool: KeySpec = { kind: 'bool', expected: 'true or false' };
const number = (expected: string, accept: (n: number) => boolean): KeySpec => ({
  kind: 'number',
  expected,
  accept: accept as (value: never) => boolean,
});
const integer = (expected: string, accept: (n: number) => boolean): KeySpec => ({
  kind: 'integer',
  expected,
  accept: accept as (value: never) => boolean,
});
const classFactor = integer('a whole number of copies, 0 (leave the class out) or more', (n) => n >= 0 && n <= 10_000);

/** Every key pg-retest's pipeline config has (wkl-format §6), and `[replay] allow_writes` and `allow_server_wide` of ours. */
const SECTIONS = {
  capture: {
    workload: path('the captured workload (.wkl)'),
    source_log: path('the PostgreSQL log to capture'),
    source_type: {
      kind: 'text',
      expected: 'one of pg-csv, mysql-slow, rds',
      accept: ((v: string) => ['pg-csv', 'mysql-slow', 'rds'].includes(v)) as (value: never) => boolean,
    },
    source_host: text(),
    pg_version: text(),
    mask_values: bool,
    rds_instance: text(),
    rds_region: text(),
    rds_log_file: text(),
  },
  provision: {
    backend: text('a backend name: docker'),
    image: text('a Docker image such as postgres:16'),
    restore_from: path('a SQL file (or pg_dump archive) to load into the server'),
    connection_string: secret,
    port: integer('a port number from 0 (any free port) to 65535', (n) => n >= 0 && n <= 65_535),
  },
  replay: {
    speed: number('a number ≥ 0 (1 = captured timing, 0 = as fast as possible)', (n) => n >= 0),
    read_only: bool,
    allow_writes: bool,
    allow_server_wide: bool,
    scale: integer('a whole number of copies, 1 or more', (n) => n >= 1 && n <= 10_000),
    stagger_ms: integer('a whole number of milliseconds, 0 or more', (n) => n >= 0),
    scale_analytical: classFactor,
    scale_transactional: classFactor,
    scale_mixed: classFactor,
    scale_bulk: classFactor,
    target: secret,
  },
  thresholds: {
    p95_max_ms: number('a number of milliseconds ≥ 0', (n) => n >= 0 && n <= 1e9),
    p99_max_ms: number('a number of milliseconds ≥ 0', (n) => n >= 0 && n <= 1e9),
    error_rate_max_pct: number('a percentage from 0 to 100', (n) => n >= 0 && n <= 100),
    regression_max_count: integer('a whole number ≥ 0', (n) => n >= 0),
    regression_threshold_pct: number('a percentage above 0', (n) => n > 0 && n <= 100_000),
  },
  output: {
    json_report: path('where to write the JSON report'),
    junit_xml: path('where to write the JUnit XML'),
  },
} as const satisfies Record<string, Record<string, KeySpec>>;

const VARIANT_KEYS = { label: text('a name for the variant'), target: secret } as const satisfies Record<string, KeySpec>;

type Section = keyof typeof SECTIONS;
type Values = Record<string, string | number | boolean>;

const table = z.record(z.string(), z.unknown());

/**
 * Reads and validates a pipeline config file.
 * @param file the path (relative to the working directory)
 * @returns the config, with pg-retest's defaults filled in
 * @throws InputError (exit 2) for an unreadable file, invalid TOML, or a key with a wrong value
 */
export function readPipelineConfig(file: string): PipelineConfig {
  let source: string;
  try {
    source = fs.readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const hint =
      code === 'ENOENT' ? `there is no ${file} in ${process.cwd()}; give the file with --config` : 'check the path and its permissions';
    throw new InputError(`config ${file}: cannot read it (${code ?? String(error)}); ${hint}`);
  }
  let data: Record<string, unknown>;
  try {
    data = parse(source);
  } catch (error) {
    if (error instanceof TomlError) {
      const what = error.message.split('\n')[0]!.replace(/^Invalid TOML document:\s*/, '');
      throw new InputError(`config ${file}: not valid TOML at line ${error.line}, column ${error.column}: ${what}`);
    }
    throw error;
  }
  return pipelineConfigFrom(data, file);
}

/**
 * Validates parsed TOML.
 * @param data the document
 * @param file its name, for messages
 * @returns the config
 */
export function pipelineConfigFrom(data: Record<string, unknown>, file: string): PipelineConfig {
  const fail = (key: string, message: string): never => {
    throw new InputError(`config ${file}: ${key}: ${message}`);
  };
  const warnings: string[] = [];
  const given: GivenKey[] = [];
  const sections: Partial<Record<Section, Values>> = {};
  let variants: { label: string; target: string }[] = [];

  for (const [name, value] of Object.entries(data)) {
    if (name === 'variants') {
      variants = readVariants(value, given, warnings, fail);
      continue;
    }
    if (!(name in SECTIONS)) {
      warnings.push(
        `config ${file}: unknown ${isTable(value) ? 'section' : 'key'} '${name}' is ignored (pg-retest ignores it too); known sections: ${[...Object.keys(SECTIONS), 'variants'].map((s) => `[${s}]`).join(', ')}`,
      );
      continue;
    }
    const section = name as Section;
    if (!isTable(value)) fail(`[${section}]`, `expected a section ([${section}] followed by its keys), got ${describe(value)}`);
    sections[section] = readKeys(`[${section}]`, section, value as Record<string, unknown>, SECTIONS[section], given, warnings, fail);
  }

  const capture = sections.capture ?? {};
  const provision = sections.provision;
  const replay = sections.replay ?? {};
  const thresholds = sections.thresholds ?? {};
  const output = sections.output ?? {};
  const str = (v: Values, key: string) => v[key] as string | undefined;
  const num = (v: Values, key: string) => v[key] as number | undefined;
  return {
    file,
    capture: {
      workload: str(capture, 'workload'),
      sourceLog: str(capture, 'source_log'),
      sourceType: (str(capture, 'source_type') ?? PG_RETEST_DEFAULTS.sourceType) as PipelineConfig['capture']['sourceType'],
      sourceHost: str(capture, 'source_host'),
      pgVersion: str(capture, 'pg_version'),
      maskValues: capture.mask_values === true,
      rdsInstance: str(capture, 'rds_instance'),
      rdsRegion: str(capture, 'rds_region'),
      rdsLogFile: str(capture, 'rds_log_file'),
    },
    provision:
      provision === undefined
        ? null
        : {
            backend: str(provision, 'backend'),
            image: str(provision, 'image') ?? PG_RETEST_DEFAULTS.image,
            restoreFrom: str(provision, 'restore_from'),
            connectionString: str(provision, 'connection_string'),
            port: num(provision, 'port') ?? 0,
          },
    replay: {
      speed: num(replay, 'speed') ?? PG_RETEST_DEFAULTS.speed,
      readOnly: replay.read_only === true,
      allowWrites: replay.allow_writes === true,
      allowServerWide: replay.allow_server_wide === true,
      scale: num(replay, 'scale') ?? PG_RETEST_DEFAULTS.scale,
      staggerMs: num(replay, 'stagger_ms') ?? PG_RETEST_DEFAULTS.staggerMs,
      scaleAnalytical: num(replay, 'scale_analytical'),
      scaleTransactional: num(replay, 'scale_transactional'),
      scaleMixed: num(replay, 'scale_mixed'),
      scaleBulk: num(replay, 'scale_bulk'),
      target: str(replay, 'target'),
    },
    thresholds: {
      p95MaxMs: num(thresholds, 'p95_max_ms'),
      p99MaxMs: num(thresholds, 'p99_max_ms'),
      errorRateMaxPct: num(thresholds, 'error_rate_max_pct'),
      regressionMaxCount: num(thresholds, 'regression_max_count'),
      regressionThresholdPct: num(thresholds, 'regression_threshold_pct') ?? PG_RETEST_DEFAULTS.regressionThresholdPct,
    },
    output: { jsonReport: str(output, 'json_report'), junitXml: str(output, 'junit_xml') },
    variants,
    given,
    warnings,
  };
}

function readVariants(
  value: unknown,
  given: GivenKey[],
  warnings: string[],
  fail: (key: string, message: string) => never,
): { label: string; target: string }[] {
  if (!Array.isArray(value)) return fail('variants', `expected [[variants]] entries (each with label and target), got ${describe(value)}`);
  const labels = new Set<string>();
  return value.map((entry, i) => {
    const where = `[[variants]] #${i + 1}`;
    if (!isTable(entry)) fail(where, `expected a table with label and target, got ${describe(entry)}`);
    const values = readKeys(where, `variants[${i + 1}]`, entry as Record<string, unknown>, VARIANT_KEYS, given, warnings, fail);
    for (const key of ['label', 'target'] as const) {
      if (values[key] === undefined) fail(`${where} ${key}`, `is required (${VARIANT_KEYS[key].expected})`);
    }
    const label = values.label as string;
    if (labels.has(label)) fail(`${where} label`, `'${label}' is used by an earlier variant; give each variant its own label`);
    labels.add(label);
    return { label, target: values.target as string };
  });
}

/** Validates one table's keys; unknown keys become warnings. */
function readKeys(
  where: string,
  prefix: string,
  entries: Record<string, unknown>,
  specs: Record<string, KeySpec>,
  given: GivenKey[],
  warnings: string[],
  fail: (key: string, message: string) => never,
): Values {
  const values: Values = {};
  for (const [key, raw] of Object.entries(entries)) {
    const spec = specs[key];
    if (spec === undefined) {
      warnings.push(`${where} ${key}: unknown key, ignored (pg-retest ignores it too); known keys: ${Object.keys(specs).join(', ')}`);
      continue;
    }
    const value = checkValue(raw, spec);
    if (value === undefined) {
      // A connection string may hold a password: never repeat it.
      const got = spec.kind === 'secret' ? describeType(raw) : describe(raw);
      fail(`${where} ${key}`, `expected ${spec.expected}, got ${got}`);
    }
    values[key] = value!;
    given.push({ key: `${prefix}.${key}`, value: spec.kind === 'secret' ? '(connection string)' : String(value) });
  }
  return values;
}

/** The value when it fits its spec, else undefined. */
function checkValue(raw: unknown, spec: KeySpec): string | number | boolean | undefined {
  const accept = (spec.accept ?? (() => true)) as (value: unknown) => boolean;
  switch (spec.kind) {
    case 'bool':
      return typeof raw === 'boolean' ? raw : undefined;
    case 'number':
      return typeof raw === 'number' && Number.isFinite(raw) && accept(raw) ? raw : undefined;
    case 'integer':
      return typeof raw === 'number' && Number.isInteger(raw) && accept(raw) ? raw : undefined;
    default:
      return typeof raw === 'string' && raw.trim() !== '' && accept(raw) ? raw : undefined;
  }
}

function isTable(value: unknown): boolean {
  return table.safeParse(value).success && !Array.isArray(value) && !(value instanceof Date);
}

function describeType(value: unknown): string {
  if (typeof value === 'string') return value.trim() === '' ? 'an empty string' : 'a string';
  if (Array.isArray(value)) return 'a list';
  if (isTable(value)) return 'a table';
  return typeof value === 'number' ? 'a number' : typeof value;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return value.trim() === '' ? 'an empty string' : JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return describeType(value);
}
