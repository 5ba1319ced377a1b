/**
 * `run --config .pg-retest.toml`: pg-retest's CI pipeline config, run with this tool's engine and
 * verdict (src/pg-retest-config/run.ts). Prints the markdown report, writes `[output] json_report` and
 * `junit_xml`, and exits 0 pass, 1 a threshold exceeded or a variant regressed, 2 bad config,
 * 3 infrastructure, 4 inconclusive, 130 interrupted.
 */
import { z } from 'zod';
import type { ExitCode } from '../exit-codes.js';
import { readPipelineConfig } from '../pg-retest-config/config.js';
import { planRun } from '../pg-retest-config/plan.js';
import { renderRunJunit, renderRunMarkdown, runReportJson } from '../pg-retest-config/render.js';
import type { RunReport } from '../pg-retest-config/report-types.js';
import { runPipeline } from '../pg-retest-config/run.js';
import type { CommandSpec } from '../options/argv.js';
import { flag } from '../options/values.js';
import type { Io } from '../runtime/io.js';
import type { ReportFile } from '../runtime/report-files.js';
import { runReportingCommand } from './reporting-command.js';

/** pg-retest's default config file. */
export const DEFAULT_PIPELINE_CONFIG = '.pg-retest.toml';

const options = {
  config: {
    shape: 'value',
    placeholder: 'FILE',
    help: `pg-retest's pipeline config (TOML: [capture], [provision], [replay], [thresholds], [output], [[variants]]; default ${DEFAULT_PIPELINE_CONFIG})`,
    schema: z.string().min(1).optional(),
  },
  'allow-writes': {
    shape: 'flag',
    help: "write a workload's changes into a target the run did not create, as [replay] allow_writes = true does (without either, or read_only = true, a workload that writes is refused there)",
    schema: flag,
  },
  'allow-server-wide': {
    shape: 'flag',
    help: 'send statements that act beyond the database (roles, ALTER SYSTEM, other databases, server files, other sessions) to a target the run did not start, as [replay] allow_server_wide = true does',
    schema: flag,
  },
} as const;

const schema = z
  .object({
    config: options.config.schema,
    'allow-writes': options['allow-writes'].schema,
    'allow-server-wide': options['allow-server-wide'].schema,
  })
  .transform((raw) => ({
    config: raw.config ?? DEFAULT_PIPELINE_CONFIG,
    allowWrites: raw['allow-writes'],
    allowServerWide: raw['allow-server-wide'],
  }));

export type RunConfig = z.output<typeof schema>;

export const runCommand: CommandSpec<RunConfig> = {
  name: 'run',
  summary:
    "Run pg-retest's CI pipeline config (.pg-retest.toml) with this tool's engine: capture or load the workload, get the target, " +
    'replay, judge the thresholds, and with two or more [[variants]] gate each against the first. See docs/migrating-from-pg-retest.md.',
  options,
  schema,
};

/**
 * Runs `run`.
 * @param config the options
 * @param io where to print
 * @returns the exit status
 */
export function runPipelineCommand(config: RunConfig, io: Io): Promise<ExitCode> {
  const plan = planRun(readPipelineConfig(config.config));
  plan.replay.allowWrites ||= config.allowWrites;
  plan.replay.allowServerWide ||= config.allowServerWide;
  const files: ReportFile<RunReport>[] = [
    { askedAs: `config ${config.config}: [output] json_report`, path: plan.outputs.json, render: runReportJson },
    { askedAs: `config ${config.config}: [output] junit_xml`, path: plan.outputs.junit, render: renderRunJunit },
  ];
  return runReportingCommand(io, (context) => runPipeline(plan, context), renderRunMarkdown, files);
}
