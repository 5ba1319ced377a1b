/**
 * `aggregate`: the shards' partial reports → the run's report (src/shards/aggregate.ts), printed
 * as markdown and written as the gate writes its report files, with the gate's exit statuses.
 */
import type { ExitCode } from '../exit-codes.js';
import type { Io } from '../runtime/io.js';
import { renderMarkdown } from '../report/markdown.js';
import { aggregatePartials } from '../shards/aggregate.js';
import { partialFiles } from '../shards/partial-files.js';
import type { AggregateConfig } from './aggregate-options.js';
import { gateReportFiles } from './gate-report-files.js';
import { runReportingCommand } from './reporting-command.js';

/**
 * Runs `aggregate`.
 * @param config validated options
 * @param io where to print
 * @returns the exit status
 */
export async function runAggregate(config: AggregateConfig, io: Io): Promise<ExitCode> {
  const files = await partialFiles(config.partials, process.cwd(), 'option --partial');
  return runReportingCommand(
    io,
    async (context) => aggregatePartials(files, context.logger),
    (report) => renderMarkdown(report),
    gateReportFiles(config.outputs),
  );
}
