/**
 * `gate`: run the whole comparison (src/gate/run-gate.ts), print the markdown report on stdout,
 * write the JSON and JUnit reports asked for, and exit 0 pass, 1 regression, 2 bad input,
 * 3 infrastructure, 130 interrupted.
 */
import type { GateConfig } from '../config/gate-options.js';
import type { ExitCode } from '../exit-codes.js';
import { runGate } from '../gate/run-gate.js';
import { type Io, isCi, stderrLogger } from './io.js';
import { trapInterrupts } from './interrupt.js';
import { createProgressDisplay } from './progress.js';
import { checkOutputDirs, writeReports } from './report-files.js';

/**
 * Runs `gate`.
 * @param config validated options
 * @param io where to print
 * @returns the exit status
 */
export async function runGateCommand(config: GateConfig, io: Io): Promise<ExitCode> {
  checkOutputDirs(config.outputs);
  const logger = stderrLogger(io);
  const live = io.stderr.isTTY === true && !isCi(io.env);
  const interrupt = trapInterrupts((name) => logger.info(`\nreceived ${name}: stopping and cleaning up (send it again to exit at once)`));
  try {
    const outcome = await runGate(config, {
      logger,
      createProgress: () => createProgressDisplay(io.stderr, live),
      env: io.env,
      cwd: process.cwd(),
      signal: interrupt.signal,
    });
    writeReports(outcome.report, config.outputs, io);
    if (outcome.error) io.stderr.write(`error: ${outcome.error.message.replace(/\s*\n\s*/g, ' ')}\n`);
    else logger.info(outcome.report.headline);
    return outcome.exitCode;
  } finally {
    interrupt.dispose();
  }
}
