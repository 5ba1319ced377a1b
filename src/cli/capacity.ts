/**
 * `capacity`: run the sweep (src/capacity/run-sweep.ts), print the markdown report on stdout,
 * write the JSON report and the SVG chart where asked, and exit 0 (a sweep, or a capacity gate
 * that passed), 1 (the PR lowers capacity), 2 bad input, 3 infrastructure, 130 interrupted.
 */
import { renderCapacityMarkdown } from '../capacity/markdown.js';
import type { CapacityConfig } from '../capacity/options.js';
import { capacityJson } from '../capacity/report-types.js';
import { runCapacity } from '../capacity/run-sweep.js';
import { renderCapacitySvg } from '../capacity/svg.js';
import type { ExitCode } from '../exit-codes.js';
import type { Io } from '../runtime/io.js';
import { runReportingCommand } from './reporting-command.js';

/**
 * Runs `capacity`.
 * @param config validated options
 * @param io where to print
 * @returns the exit status
 */
export function runCapacityCommand(config: CapacityConfig, io: Io): Promise<ExitCode> {
  const { outputs } = config;
  return runReportingCommand(io, (context) => runCapacity(config, context), renderCapacityMarkdown, [
    { askedAs: 'option --markdown', path: outputs.markdown, render: renderCapacityMarkdown },
    { askedAs: 'option --json', path: outputs.json, render: capacityJson },
    // A chart needs at least one swept side; an early error has none.
    { askedAs: 'option --svg', path: outputs.svg, render: (report) => (report.sides.length > 0 ? renderCapacitySvg(report) : undefined) },
  ]);
}
