/**
 * What a gate run does before it starts any server: load the workload and check what can be
 * checked without one (the time budget fits, the seed file is there), then check out the base
 * commit whose migrations build the base schema. Mistakes in the inputs fail here, in seconds.
 */
import fs from 'node:fs';
import { fromEngineError } from '../engine/errors.js';
import { loadWorkload, type Workload } from '../engine/index.js';
import { InputError } from '../exit-codes.js';
import { plural } from '../format/units.js';
import type { Logger } from '../runtime/logger.js';
import { checkoutBase } from '../templates/base-checkout.js';
import { type CaptureEvidence, captureEvidence } from './capture-evidence.js';
import type { ChangeUnderTest } from './ci-change.js';
import { describeSource, type GateRecord } from './gate-record.js';
import type { GateConfig } from './options.js';
import type { Holdings } from './places.js';
import { replayPlan } from './time-budget.js';

/** The workload, with what the capture saw fail. */
export interface GateWorkload {
  workload: Workload;
  evidence: CaptureEvidence;
}

/**
 * Loads the workload and checks the time budget and the seed against it.
 * @param config the run's options
 * @param record where the workload and its warnings are noted
 * @param logger progress lines
 * @returns the workload and the capture's evidence
 * @throws InputError for a missing or unreadable workload, a budget it cannot fit, a missing seed file
 */
export async function readGateWorkload(config: GateConfig, record: GateRecord, logger: Logger): Promise<GateWorkload> {
  const workload = await loadGateWorkload(config.workload);
  record.environment.workload = { path: config.workload, sessions: workload.sessions, statements: workload.statements };
  logger.info(`workload ${config.workload}: ${plural(workload.sessions, 'session')}, ${plural(workload.statements, 'statement')}`);
  record.warnings.push(...workload.warnings);
  const evidence = captureEvidence(config.workload, workload);
  record.warnings.push(...evidence.warnings);
  // A budget the workload cannot fit even once is refused before any server work.
  if (config.timeBudgetMs !== undefined) replayPlan(config, workload, 0);
  checkSeed(config);
  return { workload, evidence };
}

/**
 * Checks out the commit the base schema is built from, unless base's migration files are given.
 * @param config the run's options
 * @param change the change under test, whose base is the default
 * @param record where base is described
 * @param held where the checkout is kept until the run ends
 * @param context working directory and log
 * @returns where base's files (or its migrate command) live
 * @throws InputError when nothing names a base
 */
export async function checkOutBaseSchema(
  config: GateConfig,
  change: ChangeUnderTest | undefined,
  record: GateRecord,
  held: Holdings,
  context: { cwd: string; logger: Logger },
): Promise<string> {
  if (config.schema.kind === 'files' && config.schema.base !== undefined) {
    record.environment.base.source = `files: ${config.schema.base.join(', ')}`;
    return context.cwd;
  }
  const ref = config.baseRef ?? change?.baseRef;
  if (ref === undefined) {
    throw new InputError(
      'no base schema: give --base-ref (the commit to compare against, e.g. origin/main) or --base-migrations; ' +
        "on a GitHub pull_request event, a GitLab merge request pipeline or a Jenkins change request the change's base is used",
    );
  }
  if (config.baseRef === undefined && change) context.logger.info(`base: ${change.describe} (${ref})`);
  const checkout = await checkoutBase(ref, context.cwd);
  held.checkout = checkout;
  record.environment.base = { ref, sha: checkout.sha, source: `${describeSource(config, 'base')} at ${checkout.sha.slice(0, 12)}` };
  context.logger.info(`base: ${ref} (${checkout.sha.slice(0, 12)}) checked out in ${checkout.root}`);
  return checkout.root;
}

/**
 * Loads a workload given as `--workload`.
 * @param file the `.wkl` file
 * @returns the workload
 * @throws InputError naming the option for a missing file, a directory or a file the engine refuses
 */
export async function loadGateWorkload(file: string): Promise<Workload> {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    throw new InputError(`option --workload: file ${file} does not exist; check the path (relative to ${process.cwd()})`);
  }
  if (!stat.isFile()) throw new InputError(`option --workload: ${file} is not a file`);
  try {
    return await loadWorkload(file);
  } catch (error) {
    throw fromEngineError(error);
  }
}

/**
 * Checks that a seed file given as `--seed` is there.
 * @param config the seed option
 * @throws InputError when it is missing
 */
export function checkSeed(config: Pick<GateConfig, 'seed'>): void {
  if (config.seed?.kind !== 'file') return;
  const file = config.seed.path;
  if (!fs.existsSync(file) || !fs.statSync(file).isFile()) {
    throw new InputError(`option --seed: file ${file} does not exist; check the path (relative to ${process.cwd()})`);
  }
}
