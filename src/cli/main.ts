/**
 * The CLI's one function: argv in, exit status out. Picks the command, parses its options,
 * runs it, and turns whatever it throws into one `error:` line and an exit status. Nothing
 * else in the CLI prints errors or decides exit statuses (src/exit-codes.ts).
 */
import { CliError, ExitCode, exitCodeOf, InputError } from '../exit-codes.js';
import { commandHelp, type CommandSpec, parseOptions, type RawValue, tokenize } from '../options/argv.js';
import { capacityCommand } from '../capacity/options.js';
import { readConfigFile, mergeValues } from '../options/config-file.js';
import { aggregateCommand } from './aggregate-options.js';
import { runAggregate } from './aggregate.js';
import { captureCommand } from './capture-options.js';
import { runCapture } from './capture.js';
import { cleanupCommand } from './cleanup-options.js';
import { runCleanup } from './cleanup.js';
import { condenseCommand } from './condense-options.js';
import { runCondense } from './condense.js';
import { gateCommand } from '../gate/options.js';
import { compareCommand } from './compare-options.js';
import { runCapacityCommand } from './capacity.js';
import { runCompare } from './compare.js';
import { runGateCommand } from './gate.js';
import { inspectCommand, runInspect } from './inspect.js';
import { proxyCommand } from './proxy-options.js';
import { runProxy } from './proxy.js';
import { type Io, processIo } from '../runtime/io.js';
import { maskUrlsIn } from '../provision/url.js';
import { replayCommand } from './replay-options.js';
import { runReplay } from './replay.js';
import { runCommand, runPipelineCommand } from './run.js';
import { TOOL_VERSION } from '../tool.js';

interface Command {
  spec: CommandSpec<unknown>;
  /** Validates the raw values with the command's schema, then runs it. */
  execute(values: Record<string, RawValue>, io: Io): Promise<ExitCode>;
}

function command<Config>(spec: CommandSpec<Config>, runCommand: (config: Config, io: Io) => Promise<ExitCode>): Command {
  return { spec, execute: (values, io) => runCommand(parseOptions(spec, values), io) };
}

/** `gate` also takes its options from a `--config` file; flags win. */
const gate: Command = {
  spec: gateCommand,
  execute: (values, io) => {
    const file = values.config;
    const merged = typeof file === 'string' ? mergeValues(readConfigFile(file, gateCommand.options), values) : values;
    return runGateCommand(parseOptions(gateCommand, merged), io);
  },
};

const commands: Record<string, Command> = {
  gate,
  aggregate: command(aggregateCommand, runAggregate),
  capture: command(captureCommand, runCapture),
  cleanup: command(cleanupCommand, runCleanup),
  capacity: command(capacityCommand, runCapacityCommand),
  compare: command(compareCommand, runCompare),
  condense: command(condenseCommand, runCondense),
  inspect: command(inspectCommand, runInspect),
  proxy: command(proxyCommand, runProxy),
  replay: command(replayCommand, runReplay),
  run: command(runCommand, runPipelineCommand),
};

function usage(): string {
  const width = Math.max(...Object.keys(commands).map((name) => name.length));
  return [
    'usage: pg-retest-action <command> [options]',
    '',
    'Replays captured PostgreSQL workloads (pg-retest .wkl files) against the base and the PR schema and gates on regressions.',
    '',
    'commands:',
    ...Object.entries(commands).map(([name, c]) => `  ${name.padEnd(width)}  ${c.spec.summary.split('. ')[0]!.replace(/\.$/, '')}`),
    '',
    'Run `pg-retest-action <command> --help` for its options. Exit status: 0 ok, 1 regression (gate, run),',
    '2 bad input or configuration, 3 infrastructure failure, 4 inconclusive, 130 interrupted. See docs/cli.md.',
    '',
  ].join('\n');
}

/**
 * Runs the CLI.
 * @param argv arguments after the program name
 * @param io streams and environment (default: the process's)
 * @returns the exit status
 */
export async function run(argv: string[], io: Io = processIo()): Promise<ExitCode> {
  try {
    const [name, ...rest] = argv;
    if (name === undefined) {
      io.stderr.write(usage());
      return ExitCode.BadInput;
    }
    if (name === '--help' || name === '-h' || name === 'help') {
      io.stdout.write(usage());
      return ExitCode.Ok;
    }
    if (name === '--version' || name === '-V') {
      io.stdout.write(`${TOOL_VERSION}\n`);
      return ExitCode.Ok;
    }
    const chosen = commands[name];
    if (!chosen) {
      throw new InputError(`unknown command '${name}'; expected one of: ${Object.keys(commands).join(', ')} (see pg-retest-action --help)`);
    }
    const { values, help, notes } = tokenize(name, rest, chosen.spec.options);
    for (const note of notes) io.stderr.write(`warning: ${note}\n`);
    if (help) {
      io.stdout.write(commandHelp(chosen.spec));
      return ExitCode.Ok;
    }
    return await chosen.execute(values, io);
  } catch (error) {
    if (!(error instanceof CliError) && error instanceof Error && error.stack && debugEnabled(io)) {
      io.stderr.write(`${error.stack}\n`);
    }
    io.stderr.write(`error: ${describeError(error)}\n`);
    return exitCodeOf(error);
  }
}

function describeError(error: unknown): string {
  // Errors may echo what was typed, a connection string among it.
  if (error instanceof CliError) return maskUrlsIn(oneLine(error.message));
  // Not ours: a bug. Say so; the stack is printed above with PG_RETEST_DEBUG=1.
  const detail = error instanceof Error ? error.message : String(error);
  return `unexpected failure: ${maskUrlsIn(oneLine(detail))}; this is a bug in pg-retest-action, please report it (PG_RETEST_DEBUG=1 shows the stack)`;
}

function debugEnabled(io: Io): boolean {
  return io.env.PG_RETEST_DEBUG === '1' || io.env.RUNNER_DEBUG === '1';
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
