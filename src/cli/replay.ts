/**
 * `replay`: load a workload, get a server (given, or started and later removed), prepare a
 * database with the setup and seed SQL, replay, print a summary, and exit with a status that
 * says whether everything was measured.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadWorkload, replay, type ReplayOptions, type Workload } from '../engine/index.js';
import { type ExitCode, InfraError, InputError, InterruptedError } from '../exit-codes.js';
import { renderReplaySummary } from '../format/replay-summary.js';
import { plural } from '../format/units.js';
import { applySqlFiles, type SqlFile } from '../provision/apply-sql.js';
import { createDatabase } from '../provision/database.js';
import type { Server } from '../provision/index.js';
import type { Logger } from '../runtime/logger.js';
import { serverForRun } from '../provision/run-server.js';
import { describeTarget, passwordOf, redact, replayUrl } from '../provision/url.js';
import type { ReplayReport } from '../types.js';
import { describeErrorsAgainstCapture, errorsAgainstCapture, readCaptureSidecar } from '../sidecars/capture.js';
import { largestFactor } from '../options/class-scale-options.js';
import { fromEngineError } from '../engine/errors.js';
import { trapInterrupts } from '../runtime/interrupt.js';
import { type Io, isCi, stderrLogger } from '../runtime/io.js';
import { createProgressDisplay } from '../runtime/progress.js';
import { checkReportDirs, type ReportFile, writeReportFiles } from '../runtime/report-files.js';
import type { ReplayConfig } from './replay-options.js';
import { replayOutcome } from '../engine/replay-outcome.js';
import { writesRefused } from '../engine/replay-writes.js';

/** The database created on a server we started. */
const REPLAY_DATABASE = 'pg_retest';

/**
 * Runs `replay`.
 * @param config validated options
 * @param io where to print
 * @returns the exit status (errors that end the run early are thrown)
 */
export async function runReplay(config: ReplayConfig, io: Io): Promise<ExitCode> {
  const logger = stderrLogger(io);
  checkInputs(config);

  const workload = await load(config.workload);
  logger.info(`workload ${config.workload}: ${plural(workload.sessions, 'session')}, ${plural(workload.statements, 'statement')}`);
  for (const warning of workload.warnings) logger.info(`warning: ${warning}`);
  refuseUnaskedWrites(config, workload);
  // With a capture sidecar, the per-statement results tell expected failures from new ones.
  const capture = readCaptureSidecar(config.workload);
  const scratch = capture && !config.resultsFile ? fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-results-')) : undefined;
  const run = scratch ? { ...config, resultsFile: path.join(scratch, 'results.jsonl') } : config;

  const interrupt = trapInterrupts((name) =>
    logger.info(`\nreceived ${name}: stopping the replay and cleaning up (send it again to exit at once)`),
  );
  let server: Server | undefined;
  try {
    server = await getServer(config, workload, logger);
    throwIfAborted(interrupt.signal);
    const url = server.kind === 'database-url' ? server.url : await createDatabase(server.url, REPLAY_DATABASE);
    throwIfAborted(interrupt.signal);

    const files: SqlFile[] = [
      ...config.setup.map((file) => ({ path: file, role: 'setup' as const })),
      ...(config.seed ? [{ path: config.seed, role: 'seed' as const }] : []),
    ];
    await applySqlFiles(url, files, { logger, signal: interrupt.signal });
    throwIfAborted(interrupt.signal);

    const report = await runEngine(run, workload, replayUrl(server, url), io, interrupt.signal);
    io.stdout.write(renderReplaySummary(report, { server: server.description }));
    if (capture && run.resultsFile && fs.existsSync(run.resultsFile)) {
      io.stdout.write(describeErrorsAgainstCapture(errorsAgainstCapture(capture, run.resultsFile)));
    }
    writeReportFiles([jsonFile(config)], report);

    const outcome = replayOutcome(report, {
      deadlineS: config.replayTimeoutMs === undefined ? undefined : config.replayTimeoutMs / 1000,
    });
    // The log of a server we started is removed with it: show its end while it still exists.
    if (report.status === 'server_unavailable' && server.logFile) showLogTail(server.logFile, io);
    if (outcome.problem) io.stderr.write(`error: ${redact(outcome.problem, passwordOf(url))}\n`);
    return outcome.exitCode;
  } finally {
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
    interrupt.dispose();
    if (server && server.kind !== 'database-url') {
      logger.info('stopping the server and removing its data directory');
      await server.stop();
    }
  }
}

/** Missing files are bad input (exit 2), found before any server is started. */
function checkInputs(config: ReplayConfig): void {
  const inputs: [string, string][] = [
    ['--workload', config.workload],
    ...config.setup.map((file): [string, string] => ['--setup', file]),
    ...(config.seed ? [['--seed', config.seed] as [string, string]] : []),
  ];
  for (const [option, file] of inputs) {
    let stat: fs.Stats;
    try {
      stat = fs.statSync(file);
    } catch {
      throw new InputError(`option ${option}: file ${file} does not exist; check the path (relative to ${process.cwd()})`);
    }
    if (!stat.isFile()) throw new InputError(`option ${option}: ${file} is not a file`);
  }
  checkReportDirs([
    { askedAs: 'option --results', path: config.resultsFile },
    { askedAs: 'option --pg-retest-results', path: config.pgRetestResultsFile },
    jsonFile(config),
  ]);
}

/** `--json`: the replay's report. */
function jsonFile(config: ReplayConfig): ReportFile<ReplayReport> {
  return { askedAs: 'option --json', path: config.jsonFile, render: (report) => `${JSON.stringify(report, null, 2)}\n` };
}

/**
 * A workload that writes is not replayed into a database the CLI did not create unless the user
 * said so; checked before anything is sent, the setup and seed files included.
 */
function refuseUnaskedWrites(config: ReplayConfig, workload: Workload): void {
  if (config.target.kind !== 'database-url' || config.readOnly || config.allowWrites) return;
  const refusal = writesRefused(workload.summary(0), describeTarget(config.target.url), {
    allow: 'pass --allow-writes',
    skip: '--read-only',
  });
  if (refusal) throw refusal;
}

async function load(file: string): Promise<Workload> {
  try {
    return await loadWorkload(file);
  } catch (error) {
    throw fromEngineError(error);
  }
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw new InterruptedError('interrupted; the replay did not run');
}

function getServer(config: ReplayConfig, workload: Workload, logger: Logger): Promise<Server> {
  return serverForRun(config.target, {
    sessions: workload.sessions * largestFactor(config.scale, config.classScale),
    maxConnections: config.maxConnections,
    logger,
  });
}

async function runEngine(config: ReplayConfig, workload: Workload, url: string, io: Io, signal: AbortSignal): Promise<ReplayReport> {
  const options: ReplayOptions = {
    conninfo: url,
    speed: config.speed,
    readOnly: config.readOnly,
    // A database the CLI did not create is on a server it did not start.
    skipServerWide: config.target.kind === 'database-url' && !config.allowServerWide,
    scale: config.scale,
    ...config.classScale,
    ...config.keys,
    staggerMs: config.staggerMs,
    maxConnections: config.maxConnections,
    statementTimeoutMs: config.statementTimeoutMs,
    deadlineMs: config.replayTimeoutMs,
    resultsPath: config.resultsFile,
    pgRetestResultsPath: config.pgRetestResultsFile,
    // The JSON report carries the latency samples, so that `compare` can read it.
    includeSamples: config.jsonFile !== undefined,
  };
  const live = io.stderr.isTTY === true && !isCi(io.env);
  const progress = createProgressDisplay(io.stderr, live);
  io.stderr.write(`replaying against ${describeTarget(url)}\n`);
  try {
    return await replay(workload, options, { onProgress: (p) => progress.update(p), signal });
  } catch (error) {
    const mapped = fromEngineError(error, url);
    throw mapped instanceof Error ? mapped : new InfraError(String(mapped));
  } finally {
    progress.finish();
  }
}

function showLogTail(file: string, io: Io, lines = 20): void {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8').trimEnd();
  } catch {
    return;
  }
  if (!text) return;
  io.stderr.write(
    `last lines of the server log:\n${text
      .split('\n')
      .slice(-lines)
      .map((line) => `  ${line}`)
      .join('\n')}\n`,
  );
}
