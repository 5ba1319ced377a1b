/**
 * `gate`: run the whole comparison (src/gate/run-gate.ts), print the markdown report on stdout,
 * write the JSON and JUnit reports asked for, and exit 0 pass, 1 regression, 2 bad input,
 * 3 infrastructure, 4 inconclusive, 130 interrupted.
 */
import type { GateConfig } from '../gate/options.js';
import type { ExitCode } from '../exit-codes.js';
import { runGate } from '../gate/run-gate.js';
import type { Io } from '../runtime/io.js';
import { renderMarkdown } from '../report/markdown.js';
import { gateReportFiles } from './gate-report-files.js';
import { runReportingCommand } from './reporting-command.js';

/**
 * Runs `gate`.
 * @param config validated options
 * @param io where to print
 * @returns the exit status
 */
export function runGateCommand(config: GateConfig, io: Io): Promise<ExitCode> {
  return runReportingCommand(
    io,
    (context) => runGate(config, context),
    (report) => renderMarkdown(report),
    gateReportFiles(config.outputs),
  );
}
