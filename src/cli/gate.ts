/**
 * `gate`: run the whole comparison (src/gate/run-gate.ts), print the markdown report on stdout,
 * write the JSON and JUnit reports asked for, and exit 0 pass, 1 regression, 2 bad input,
 * 3 infrastructure, 4 inconclusive, 130 interrupted. With `--shard i/N` it runs one shard
 * (src/shards/run-shard.ts): `--json` gets the partial report, and the exit status is 0 whatever
 * the shard found in its part (`aggregate` decides), the failure's when it could not measure.
 */
import type { GateConfig } from '../gate/options.js';
import { type ExitCode, InputError } from '../exit-codes.js';
import { runGate } from '../gate/run-gate.js';
import type { ShardSpec } from '../gate/shard-option.js';
import type { Io } from '../runtime/io.js';
import { renderMarkdown } from '../report/markdown.js';
import { partialJson } from '../shards/partial.js';
import { runShard, type ShardOutcome } from '../shards/run-shard.js';
import { gateReportFiles } from './gate-report-files.js';
import { runReportingCommand } from './reporting-command.js';

/**
 * Runs `gate`.
 * @param config validated options
 * @param io where to print
 * @returns the exit status
 */
export function runGateCommand(config: GateConfig, io: Io): Promise<ExitCode> {
  if (config.shard) return runShardCommand(config, config.shard, io);
  return runReportingCommand(
    io,
    (context) => runGate(config, context),
    (report) => renderMarkdown(report),
    gateReportFiles(config.outputs),
  );
}

function runShardCommand(config: GateConfig, shard: ShardSpec, io: Io): Promise<ExitCode> {
  const json = config.outputs.json;
  if (json === undefined)
    throw new InputError('option --shard: give --json FILE, where the shard writes its partial report for `aggregate`');
  const print = (outcome: ShardOutcome) => (outcome.partial ? renderMarkdown(outcome.partial.report) : outcome.headline);
  return runReportingCommand(io, (context) => runShard(config, shard, context), print, [
    { askedAs: 'option --markdown', path: config.outputs.markdown, render: print },
    { askedAs: 'option --json', path: json, render: (outcome) => (outcome.partial ? partialJson(outcome.partial) : undefined) },
  ]);
}
