/**
 * The frame shared by the commands that run a whole job and end with a report (`gate`,
 * `capacity`, `run`): output directories checked first, progress on stderr (live on a terminal, plain
 * lines in CI), Ctrl-C turned into a clean stop, the report written however the job ended, and
 * the error or the headline as the last line.
 */
import type { ExitCode } from '../exit-codes.js';
import type { RunContext, RunOutcome } from '../runtime/run-context.js';
import { trapInterrupts } from '../runtime/interrupt.js';
import { type Io, isCi, stderrLogger } from '../runtime/io.js';
import { createProgressDisplay } from '../runtime/progress.js';
import { checkReportDirs, printAndWriteReport, type ReportFile } from '../runtime/report-files.js';

/**
 * Runs a job and reports it.
 * @param io where to print
 * @param job the job, given its logger, progress, environment and interrupt
 * @param print the report's text for stdout
 * @param files the report's files (the directories of those asked for must exist before anything runs)
 * @returns the job's exit status
 */
export async function runReportingCommand<R extends { headline: string }>(
  io: Io,
  job: (context: RunContext) => Promise<RunOutcome<R>>,
  print: (report: R) => string,
  files: readonly ReportFile<R>[],
): Promise<ExitCode> {
  checkReportDirs(files);
  const logger = stderrLogger(io);
  const live = io.stderr.isTTY === true && !isCi(io.env);
  const interrupt = trapInterrupts((name) => logger.info(`\nreceived ${name}: stopping and cleaning up (send it again to exit at once)`));
  try {
    const outcome = await job({
      logger,
      createProgress: () => createProgressDisplay(io.stderr, live),
      env: io.env,
      cwd: process.cwd(),
      signal: interrupt.signal,
    });
    printAndWriteReport(io, outcome.report, print, files);
    if (outcome.error) io.stderr.write(`error: ${outcome.error.message.replace(/\s*\n\s*/g, ' ')}\n`);
    else logger.info(outcome.report.headline);
    return outcome.exitCode;
  } finally {
    interrupt.dispose();
  }
}
