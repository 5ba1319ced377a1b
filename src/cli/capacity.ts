/**
 * `capacity`: run the sweep (src/capacity/run-sweep.ts), print the markdown report on stdout,
 * write the JSON report and the SVG chart where asked, and exit 0 (a sweep, or a capacity gate
 * that passed), 1 (the PR lowers capacity), 2 bad input, 3 infrastructure, 130 interrupted.
 */
import fs from 'node:fs';
import { renderCapacityMarkdown } from '../capacity/markdown.js';
import type { CapacityConfig } from '../capacity/options.js';
import type { CapacityReport } from '../capacity/report-types.js';
import { runCapacity } from '../capacity/run-sweep.js';
import { renderCapacitySvg } from '../capacity/svg.js';
import { type ExitCode, InputError } from '../exit-codes.js';
import type { Io } from '../runtime/io.js';
import { runReportingCommand } from './reporting-command.js';

/**
 * Runs `capacity`.
 * @param config validated options
 * @param io where to print
 * @returns the exit status
 */
export function runCapacityCommand(config: CapacityConfig, io: Io): Promise<ExitCode> {
  return runReportingCommand(
    io,
    config.outputs,
    (context) => runCapacity(config, context),
    (report) => writeCapacityReports(report, config.outputs, io),
  );
}

/**
 * Prints the markdown and writes the files asked for.
 * @param report the capacity report
 * @param outputs file names by option
 * @param io where stdout goes
 */
export function writeCapacityReports(report: CapacityReport, outputs: CapacityConfig['outputs'], io: Io): void {
  const markdown = renderCapacityMarkdown(report);
  io.stdout.write(markdown);
  const files: [string, string | undefined, () => string][] = [
    ['markdown', outputs.markdown, () => markdown],
    ['json', outputs.json, () => `${JSON.stringify(report, null, 2)}\n`],
    // A chart needs at least one swept side; an early error has none.
    ['svg', report.sides.length > 0 ? outputs.svg : undefined, () => renderCapacitySvg(report)],
  ];
  for (const [option, file, render] of files) {
    if (file === undefined) continue;
    try {
      fs.writeFileSync(file, render());
    } catch (error) {
      throw new InputError(`option --${option}: cannot write ${file}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}
