/**
 * The two template databases every replay is copied from (design §3.4):
 *
 * - `base`: the base commit's migrations, then the seed, then VACUUM ANALYZE.
 * - `head`: a copy of base, data included, plus what the PR adds (its new migration files, or
 *   its migrate command, which applies only what is pending), then VACUUM, and ANALYZE of the
 *   tables the PR changed (head-statistics.ts): the way production gets the change, keeping the
 *   statistics of every table it leaves alone. Built from scratch instead (then VACUUM ANALYZE)
 *   when that would not give head's schema (see migration-plan.ts) or when asked.
 *
 * Each PR migration's wall time on the populated copy is recorded: a migration that rewrites a
 * big table under lock shows up here before it shows up in production.
 */
import type { SchemaSource, SeedSource } from './sources.js';
import { type CliError, InfraError } from '../exit-codes.js';

import { applySqlFile, SqlFileError } from '../provision/apply-sql.js';
import { extensionClue, extensionUnavailableError, unavailableExtension } from '../provision/missing-extension.js';
import { createDatabase, vacuumAnalyzeDatabase } from '../provision/database.js';
import type { Logger } from '../runtime/logger.js';
import { withDatabase } from '../provision/url.js';
import { type HeadStatistics, refreshHeadStatistics } from './head-statistics.js';
import { planHead } from './migration-plan.js';
import { loadSeed } from './seed.js';
import { CommandError, runCommand } from './shell-command.js';
import { type MigrationFile, resolveMigrationFiles } from './sql-files.js';

export interface TemplateInputs {
  /** A URL on the server whose user may create databases. */
  serverUrl: string;
  /** The server, for messages (kind, version, binaries): a migration may fail for what it lacks. */
  serverDescription?: string;
  /** Database names start with this (unique per run). */
  prefix: string;
  source: SchemaSource;
  /** Where base's files (or its migrate command) live: the base checkout, or the working directory with --base-migrations. */
  baseRoot: string;
  /** The working directory. */
  headRoot: string;
  seed: SeedSource | undefined;
  headFromScratch: boolean;
  logger: Logger;
  signal?: AbortSignal;
}

export interface Templates {
  base: string;
  /** Null when head's migrations failed. */
  head: string | null;
  migrations: MigrationRun[];
  /** Head's failing migration: the PR's migrations fail (a regression). */
  failure: MigrationFailure | null;
  /** Why head was built from scratch, or null. */
  headFromScratch: string | null;
  /**
   * The tables of head (a copy of base) analyzed after its migrations, and why; the others keep
   * base's statistics. Null when head was built from scratch (all analyzed) or not built.
   */
  headStatistics: HeadStatistics | null;
}

/** The base schema could not be built: the run cannot measure anything (exit 3). */
export class BaseSchemaError extends InfraError {
  constructor(
    message: string,
    readonly failure: MigrationFailure,
  ) {
    super(message);
  }
}

/** One step that changes a schema: a SQL file or the migrate command. */
interface Step {
  name: string;
  run(url: string): Promise<void>;
}

function fileSteps(files: MigrationFile[], signal: AbortSignal | undefined): Step[] {
  return files.map((file) => ({
    name: file.display,
    run: async (url) => {
      await applySqlFile(url, { path: file.path, role: 'migration' }, signal);
    },
  }));
}

function commandStep(command: string, cwd: string, side: 'base' | 'head', inputs: TemplateInputs): Step {
  return {
    name: 'migrate-command',
    run: (url) => runCommand(`migrate-command (${side})`, command, { cwd, url, logger: inputs.logger, signal: inputs.signal }),
  };
}

/**
 * A step's failure for lack of an extension on the server, as the error to throw (exit 3 on
 * either side: the PR's SQL is not at fault), or undefined for any other failure.
 */
async function missingExtension(error: unknown, url: string, server: string, where: string): Promise<Error | undefined> {
  if (error instanceof SqlFileError) {
    const name = await unavailableExtension(url, error.serverMessage, error.sqlstate);
    return name ? extensionUnavailableError(name, `${where}, line ${error.line}`, server, error.serverMessage) : undefined;
  }
  if (error instanceof CommandError) {
    // A command's output has no SQLSTATE: only the server's own words about the extension count.
    const clue = extensionClue(error.detail, null);
    return clue?.certain ? extensionUnavailableError(clue.name, where, server, error.detail) : undefined;
  }
  return undefined;
}

/**
 * Runs steps in order, timing each.
 * @returns the runs, and the failure if a step failed (later steps do not run)
 * @throws ExtensionUnavailableError when a step failed because the server lacks an extension
 */
async function runSteps(
  side: 'base' | 'head',
  steps: Step[],
  url: string,
  inputs: Pick<TemplateInputs, 'logger' | 'serverDescription'>,
): Promise<{ runs: MigrationRun[]; failure: MigrationFailure | null; error?: CliError }> {
  const runs: MigrationRun[] = [];
  const logger = inputs.logger;
  for (const step of steps) {
    const started = performance.now();
    try {
      await step.run(url);
    } catch (error) {
      const wall = Math.round(performance.now() - started);
      runs.push({ side, name: step.name, wall_time_ms: wall, ok: false });
      const where = step.name === 'migrate-command' ? `migrate-command (${side})` : `${side} migration ${step.name}`;
      const lacking = await missingExtension(error, url, inputs.serverDescription ?? 'the server', where);
      if (lacking) throw lacking;
      if (error instanceof SqlFileError) {
        return {
          runs,
          failure: { side, name: step.name, line: error.line, message: error.serverMessage, sqlstate: error.sqlstate ?? null },
          error,
        };
      }
      if (error instanceof CommandError)
        return { runs, failure: { side, name: step.name, line: null, message: error.detail, sqlstate: null }, error };
      throw error;
    }
    const wall = Math.round(performance.now() - started);
    runs.push({ side, name: step.name, wall_time_ms: wall, ok: true });
    logger.info(`${side}: ${step.name} applied in ${(wall / 1000).toFixed(2)} s`);
  }
  return { runs, failure: null };
}

/** What a run's own context gives every template build: head's files, the log, the interrupt. */
export interface TemplateContext {
  cwd: string;
  logger: Logger;
  signal?: AbortSignal;
}

/**
 * The inputs of a run's template build (the gate's or a capacity sweep's).
 * @param where the server, the names, the schemas and where base's files are
 * @param run the run's seed and whether head is built from scratch
 * @param context the run's working directory, log and interrupt
 * @returns the inputs
 */
export function runTemplateInputs(
  where: Pick<TemplateInputs, 'serverUrl' | 'serverDescription' | 'prefix' | 'source' | 'baseRoot'>,
  run: Pick<TemplateInputs, 'seed' | 'headFromScratch'>,
  context: TemplateContext,
): TemplateInputs {
  return {
    ...where,
    headRoot: context.cwd,
    seed: run.seed,
    headFromScratch: run.headFromScratch,
    logger: context.logger,
    signal: context.signal,
  };
}

/** The steps of each schema, and whether head is built on a copy of base. */
interface SchemaSteps {
  base: Step[];
  headFull: Step[];
  /** What head adds to a copy of base; null when head is built from scratch. */
  headDelta: Step[] | null;
  scratchReason: string | null;
}

async function planSteps(inputs: TemplateInputs, forHead: boolean): Promise<SchemaSteps> {
  const { logger, source } = inputs;
  if (source.kind === 'files') {
    const explicitBase = source.base !== undefined;
    const baseFiles = await resolveMigrationFiles(
      source.base ?? source.head,
      inputs.baseRoot,
      explicitBase ? 'base-migrations' : 'migrations',
      explicitBase,
    );
    const headFiles = await resolveMigrationFiles(source.head, inputs.headRoot, 'migrations', true);
    if (baseFiles.length === 0) logger.info('base: no migration files in the base commit; base starts from an empty database');
    const plan = planHead(baseFiles, headFiles, inputs.headFromScratch);
    if (forHead && plan.mode === 'copy')
      logger.info(
        `head: base plus ${plan.newFiles.length} new migration file(s): ${plan.newFiles.map((f) => f.name).join(', ') || 'none'}`,
      );
    return {
      base: fileSteps(baseFiles, inputs.signal),
      headFull: fileSteps(headFiles, inputs.signal),
      headDelta: plan.mode === 'copy' ? fileSteps(plan.newFiles, inputs.signal) : null,
      scratchReason: plan.mode === 'scratch' ? plan.reason : null,
    };
  }
  const headFull = [commandStep(source.command, inputs.headRoot, 'head', inputs)];
  return {
    base: [commandStep(source.command, inputs.baseRoot, 'base', inputs)],
    headFull,
    headDelta: inputs.headFromScratch ? null : headFull,
    scratchReason: inputs.headFromScratch ? 'head-from-scratch was requested' : null,
  };
}

/** Loads the seed; a seed that fails for lack of an extension says so (exit 3, as any seed failure). */
async function seedInto(inputs: TemplateInputs, url: string): Promise<void> {
  try {
    await loadSeed(inputs.seed!, url, inputs.headRoot, inputs.logger, inputs.signal);
  } catch (error) {
    const seed = inputs.seed!;
    const where = seed.kind === 'file' ? `seed ${seed.path}` : 'seed-command';
    throw (await missingExtension(error, url, inputs.serverDescription ?? 'the server', where)) ?? error;
  }
}

/** Base's migrations, the seed, VACUUM ANALYZE; a failing migration throws {@link BaseSchemaError}. */
async function buildBase(inputs: TemplateInputs, steps: Step[]): Promise<{ name: string; runs: MigrationRun[] }> {
  const name = `${inputs.prefix}_base`;
  inputs.logger.info(`building the base schema (${name})`);
  const url = await createDatabase(inputs.serverUrl, name);
  const base = await runSteps('base', steps, url, inputs);
  if (base.failure) {
    throw new BaseSchemaError(`the base schema cannot be built: ${base.error!.message}`, base.failure);
  }
  if (inputs.seed) await seedInto(inputs, url);
  await vacuumAnalyzeDatabase(url);
  return { name, runs: base.runs };
}

/**
 * Builds base's template alone: on base's server when head replays on a server of its own
 * (which builds both, see {@link buildTemplates}).
 * @param inputs where the schema comes from and where it goes
 * @returns the template's name and its migrations' timings
 * @throws BaseSchemaError when base cannot be built; InputError for bad globs
 */
export async function buildBaseTemplate(inputs: TemplateInputs): Promise<{ name: string; migrations: MigrationRun[] }> {
  const built = await buildBase(inputs, (await planSteps(inputs, false)).base);
  return { name: built.name, migrations: built.runs };
}

/**
 * Builds both templates.
 * @param inputs where the schemas come from and where they go
 * @returns the template names, the PR migrations' timings and head's failure if any
 * @throws BaseSchemaError when base cannot be built; InputError for bad globs
 */
export async function buildTemplates(inputs: TemplateInputs): Promise<Templates> {
  const { logger } = inputs;
  const headName = `${inputs.prefix}_head`;
  const steps = await planSteps(inputs, true);
  const base = await buildBase(inputs, steps.base);

  let headUrl: string;
  let head: Awaited<ReturnType<typeof runSteps>>;
  if (steps.headDelta) {
    logger.info(`building the head schema (${headName}) from a copy of base`);
    headUrl = await createDatabase(inputs.serverUrl, headName, base.name);
    head = await runSteps('head', steps.headDelta, headUrl, inputs);
  } else {
    logger.info(`building the head schema (${headName}) from scratch: ${steps.scratchReason}`);
    headUrl = await createDatabase(inputs.serverUrl, headName);
    head = await runSteps('head', steps.headFull, headUrl, inputs);
    if (!head.failure && inputs.seed) await seedInto(inputs, headUrl);
  }
  if (head.failure) {
    logger.info(`head: ${head.error!.message}`);
    return {
      base: base.name,
      head: null,
      migrations: [...base.runs, ...head.runs],
      failure: head.failure,
      headFromScratch: steps.scratchReason,
      headStatistics: null,
    };
  }
  // A copy of base keeps base's statistics where the PR left a table alone (head-statistics.ts);
  // a head built from scratch has none to keep.
  let headStatistics: HeadStatistics | null = null;
  if (steps.headDelta)
    headStatistics = { analyzed: await refreshHeadStatistics(withDatabase(inputs.serverUrl, base.name), headUrl, logger) };
  else await vacuumAnalyzeDatabase(headUrl);
  return {
    base: base.name,
    head: headName,
    migrations: [...base.runs, ...head.runs],
    failure: null,
    headFromScratch: steps.scratchReason,
    headStatistics,
  };
}

/** One migration applied to a schema. */
export interface MigrationRun {
  side: 'base' | 'head';
  /** The file (repository-relative when possible) or `migrate-command`. */
  name: string;
  wall_time_ms: number;
  ok: boolean;
}

/** A migration that failed. */
export interface MigrationFailure {
  side: 'base' | 'head';
  /** The file, or the command. */
  name: string;
  /** 1-based line of the failing statement in the file; null for commands. */
  line: number | null;
  /** PostgreSQL's message (or the command's exit status and last output lines). */
  message: string;
  /** PostgreSQL's SQLSTATE for a failing file; null for a command (or reports written before). */
  sqlstate?: string | null;
}
