/**
 * What a capacity sweep does before its first step: load the workload, check out the base commit
 * when base is swept too, start the server (or check the user's), and build the templates each
 * step copies, or take the user's database as it is.
 */
import type { Workload } from '../engine/index.js';
import { InfraError } from '../exit-codes.js';
import { plural } from '../format/units.js';
import type { ChangeUnderTest } from '../gate/ci-change.js';
import { checkSeed, loadGateWorkload } from '../gate/preflight.js';
import { largestFactor } from '../options/class-scale-options.js';
import { runStatements } from '../provision/database.js';
import type { Server } from '../provision/index.js';
import { serverForRun } from '../provision/run-server.js';
import type { Logger } from '../runtime/logger.js';
import type { RunContext } from '../runtime/run-context.js';
import { type Checkout, checkoutBase } from '../templates/base-checkout.js';
import { buildTemplates, runTemplateInputs } from '../templates/build.js';
import type { CapacityConfig } from './options.js';
import type { CapacityReport, SideName } from './report-types.js';
import type { Source } from './sweep.js';

/** What a sweep holds and gives back when it ends, however it ends: filled in as it is taken. */
export interface SweepHoldings {
  server?: Server;
  checkout?: Checkout;
  /** Databases created on the server and not dropped yet. */
  created: string[];
}

/**
 * Loads the workload and notes what the sweep replays of it.
 * @param config the sweep's options
 * @param report where the workload and its warnings are noted
 * @param logger progress lines
 * @returns the workload
 */
export async function readSweepWorkload(config: CapacityConfig, report: CapacityReport, logger: Logger): Promise<Workload> {
  const workload = await loadGateWorkload(config.workload);
  const summary = workload.summary(0);
  const replayed = config.allowWrites ? summary.statements : summary.statements - summary.writes;
  report.environment.workload = {
    path: config.workload,
    sessions: workload.sessions,
    statements: workload.statements,
    captured_rate: summary.duration_us > 0 ? replayed / (summary.duration_us / 1e6) : null,
  };
  logger.info(`workload ${config.workload}: ${plural(workload.sessions, 'session')}, ${plural(workload.statements, 'statement')}`);
  report.warnings.push(...workload.warnings);
  if (!config.allowWrites && summary.writes > 0) {
    logger.info(
      `read-only sweep: ${plural(summary.writes, 'statement')} that can change data are skipped at every step (--allow-writes replays them)`,
    );
  }
  checkSeed(config);
  return workload;
}

/**
 * Whether base is swept too: when a base schema is named, or the CI system names the change's base.
 * @param config the sweep's options
 * @param change the change under test
 * @returns whether the sweep compares base and head
 */
export function sweepsBase(config: CapacityConfig, change: ChangeUnderTest | undefined): boolean {
  return config.schema !== null && (config.compare || change !== undefined);
}

/**
 * Checks out the commit base is swept from.
 * @param ref the commit: `--base-ref`, or the change's base
 * @param report where base is described
 * @param held where the checkout is kept until the sweep ends
 * @param context working directory and log
 * @returns where base's files (or its migrate command) live
 */
export async function checkOutSweepBase(
  ref: string,
  report: CapacityReport,
  held: SweepHoldings,
  context: Pick<RunContext, 'cwd' | 'logger'>,
): Promise<string> {
  const checkout = await checkoutBase(ref, context.cwd);
  held.checkout = checkout;
  report.environment.base = `${ref} (${checkout.sha.slice(0, 12)})`;
  context.logger.info(`base: ${ref} (${checkout.sha.slice(0, 12)}) checked out in ${checkout.root}`);
  return checkout.root;
}

/**
 * Starts the server the sweep replays on (or checks the user's), with the extensions asked for
 * made available (or checked), and reads how many connections it allows.
 * @param config the sweep's options
 * @param report where the server is described
 * @param held where the server is kept until the sweep ends
 * @param workload for the sessions a step may open
 * @param logger progress lines
 * @returns the server
 */
export async function startSweepServer(
  config: CapacityConfig,
  report: CapacityReport,
  held: SweepHoldings,
  workload: Workload,
  logger: Logger,
): Promise<Server> {
  const server = await serverForRun(config.target, {
    sessions: workload.sessions * largestFactor(config.scale, config.classScale),
    maxConnections: Math.max(...config.connections),
    // As in the gate: autovacuum waking during one step and not another is noise.
    settings: { autovacuum: 'off', ...config.postgresConfig },
    extensions: config.extensions,
    image: config.image,
    logger,
  });
  held.server = server;
  const environment = report.environment;
  environment.server = server.description;
  environment.server_version = server.version;
  const shown = await runStatements(server.url, 'cannot read max_connections', ['SHOW max_connections']);
  environment.max_connections = Number(shown.rows[0]?.max_connections) || null;
  const over = config.connections.filter((c) => environment.max_connections !== null && c > environment.max_connections);
  if (over.length > 0) {
    logger.info(
      `the server allows ${environment.max_connections} connections: steps ${over.join(', ')} are above it, refused sessions will be counted`,
    );
  }
  return server;
}

/**
 * What each side's steps replay on: the templates built from the schema (base's and head's, or
 * the one schema), or the user's database as it is.
 * @param config the sweep's options
 * @param report where head is described
 * @param where the server, the run's database names, whether base is swept, where base's files live
 * @param context working directory, log and interrupt
 * @returns each side's source, in the order the first step replays them
 * @throws InfraError when head's migrations fail
 */
export async function sweepSources(
  config: CapacityConfig,
  report: CapacityReport,
  where: { server: Server; databases: { prefix: string; created: string[] }; compare: boolean; baseRoot: string },
  context: RunContext,
): Promise<Map<SideName, Source>> {
  const sources = new Map<SideName, Source>();
  if (config.schema === null) {
    sources.set('database', { kind: 'database', url: where.server.url });
    report.environment.head = 'the database behind --database-url, as it is';
    return sources;
  }
  const { prefix, created } = where.databases;
  created.push(`${prefix}_base`, `${prefix}_head`);
  const source = where.compare
    ? config.schema
    : { ...config.schema, ...(config.schema.kind === 'files' ? { base: config.schema.head } : {}) };
  const templates = await buildTemplates(
    runTemplateInputs(
      // The server's description names it in the one line of a migration that fails for lack of an extension.
      { serverUrl: where.server.url, serverDescription: where.server.description, prefix, source, baseRoot: where.baseRoot },
      config,
      context,
    ),
  );
  if (templates.head === null) {
    const failure = templates.failure!;
    throw new InfraError(
      `head's migration ${failure.name} fails${failure.line ? ` at line ${failure.line}` : ''}: ${failure.message}; fix it, then measure capacity`,
    );
  }
  report.environment.head =
    config.schema.kind === 'files' ? `files: ${config.schema.head.join(', ')}` : `migrate-command: ${config.schema.command}`;
  if (where.compare) {
    sources.set('base', { kind: 'template', name: templates.base });
    sources.set('head', { kind: 'template', name: templates.head });
  } else {
    sources.set('schema', { kind: 'template', name: templates.head });
  }
  return sources;
}
