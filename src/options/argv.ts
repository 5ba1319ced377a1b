/**
 * Command-line parsing in two steps (design: parse first, then resolve):
 *
 * 1. {@link tokenize} turns argv into raw strings per option, knowing only each option's shape
 *    (a flag, one value, a list of values, a positional). It catches unknown options, missing
 *    values and repeats.
 * 2. {@link parseOptions} runs the command's zod schema over those strings: types, ranges,
 *    defaults and rules across options. Every message names the option the user typed.
 *
 * Each option is declared once, in an {@link OptionDefs} object: its name (as typed, without
 * `--`), shape, help text and schema. The same object drives parsing, validation and `--help`.
 */
import type { z } from 'zod';
import { InputError } from '../exit-codes.js';

export interface OptionDef {
  /**
   * `flag`: present or not; `value`: one value (`--x v` or `--x=v`); `list`: one or more values,
   * repeatable (`--x a b --x c`); `positional`: a bare argument, in declaration order.
   */
  shape: 'flag' | 'value' | 'list' | 'positional';
  /** Placeholder for the value in help (`URL`, `FILE`). */
  placeholder?: string;
  /** One line for `--help`. */
  help: string;
  /** Validates the raw value (string, string[] or true; undefined when absent). */
  schema: z.ZodType;
  /**
   * Names the option had before, still accepted on the command line; using one prints a
   * deprecation note ({@link tokenize}'s `notes`).
   */
  formerNames?: readonly string[];
}

export type OptionDefs = Record<string, OptionDef>;

export type RawValue = string | string[] | true;

/** A command's definition: its options and how they become one typed config. */
export interface CommandSpec<Config> {
  name: string;
  summary: string;
  options: OptionDefs;
  /** Validates the raw values (keyed by option name) and builds the config. */
  schema: z.ZodType<Config>;
}

/**
 * Splits argv by the command's option shapes.
 * @param command the command's name, for messages
 * @param argv arguments after the command name
 * @param defs the command's options
 * @returns raw values by option name, whether help was asked for, and one deprecation note per
 *   former option name used
 * @throws InputError for an unknown option, a missing value, a repeated single-value option or a surplus argument
 */
export function tokenize(
  command: string,
  argv: string[],
  defs: OptionDefs,
): { values: Record<string, RawValue>; help: boolean; notes: string[] } {
  const values: Record<string, RawValue> = {};
  const notes: string[] = [];
  const positionals = Object.keys(defs).filter((name) => defs[name]!.shape === 'positional');
  let positionalIndex = 0;
  let help = false;
  let onlyPositionals = false;

  const addPositional = (arg: string) => {
    const name = positionals[positionalIndex++];
    if (name === undefined) {
      throw new InputError(`${command}: unexpected argument '${arg}'; see pg-retest-action ${command} --help`);
    }
    values[name] = arg;
  };

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (onlyPositionals || !arg.startsWith('-') || arg === '-') {
      addPositional(arg);
      continue;
    }
    if (arg === '--') {
      onlyPositionals = true;
      continue;
    }
    if (arg === '-h' || arg === '--help') {
      help = true;
      continue;
    }
    const equals = arg.indexOf('=');
    const typed = arg.startsWith('--') ? arg.slice(2, equals < 0 ? undefined : equals) : arg.slice(1);
    const inline = equals < 0 || !arg.startsWith('--') ? undefined : arg.slice(equals + 1);
    const name = currentName(typed, defs);
    const def = defs[name];
    if (!def || def.shape === 'positional' || !arg.startsWith('--')) {
      throw new InputError(
        `${command}: unknown option ${arg.split('=')[0]}${suggest(typed, defs)}; see pg-retest-action ${command} --help`,
      );
    }
    if (name !== typed) notes.push(`option --${typed} is deprecated: it is now called --${name}, which works the same`);
    const usage = `--${name}${def.placeholder ? ` ${def.placeholder}` : ''}`;
    if (def.shape === 'flag') {
      if (inline !== undefined) throw new InputError(`option --${name} takes no value (got '${inline}')`);
      values[name] = true;
      continue;
    }
    const taken: string[] = [];
    if (inline !== undefined) taken.push(inline);
    else if (i + 1 < argv.length && !argv[i + 1]!.startsWith('--')) taken.push(argv[++i]!);
    if (taken.length === 0 || taken[0] === '') throw new InputError(`option --${name} needs a value: ${usage}`);
    if (def.shape === 'value') {
      if (values[name] !== undefined) throw new InputError(`option --${name} is given more than once; give it once`);
      values[name] = taken[0]!;
      continue;
    }
    // A list takes every following argument up to the next option, so that a shell glob
    // (`--setup db/migrations/*.sql`) works as well as repeating the option.
    if (inline === undefined) while (i + 1 < argv.length && !argv[i + 1]!.startsWith('-')) taken.push(argv[++i]!);
    const before = values[name];
    values[name] = [...(Array.isArray(before) ? before : []), ...taken];
  }
  return { values, help, notes };
}

/** The option's name now: `name` itself, or the option that was once called `name`. */
function currentName(name: string, defs: OptionDefs): string {
  if (defs[name]) return name;
  return Object.keys(defs).find((candidate) => defs[candidate]!.formerNames?.includes(name)) ?? name;
}

/** ` (did you mean --speed?)` for a near miss, or nothing. */
function suggest(name: string, defs: OptionDefs): string {
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of Object.keys(defs)) {
    if (defs[candidate]!.shape === 'positional') continue;
    const d = distance(name, candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best ? ` (did you mean --${best}?)` : '';
}

/** Levenshtein distance, for suggestions. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * Validates raw values with the command's schema.
 * @param spec the command
 * @param values from tokenize
 * @returns the typed config
 * @throws InputError naming the option(s) and what is allowed
 */
export function parseOptions<Config>(spec: CommandSpec<Config>, values: Record<string, RawValue>): Config {
  const result = spec.schema.safeParse(values);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const name = typeof issue.path[0] === 'string' ? issue.path[0] : undefined;
    const def = name === undefined ? undefined : spec.options[name];
    if (!def) return issue.message;
    const label = def.shape === 'positional' ? (def.placeholder ?? name) : `option --${name}`;
    return `${label}: ${issue.message}`;
  });
  throw new InputError(`${[...new Set(problems)].join('; ')}; see pg-retest-action ${spec.name} --help`);
}

/**
 * `--help` for a command, from its option definitions.
 * @param spec the command
 * @returns the help text
 */
export function commandHelp(spec: CommandSpec<unknown>): string {
  const entries = Object.entries(spec.options);
  const positionals = entries.filter(([, d]) => d.shape === 'positional').map(([n, d]) => d.placeholder ?? n);
  const options = entries.filter(([, d]) => d.shape !== 'positional');
  const usage = `usage: pg-retest-action ${spec.name}${positionals.length ? ` ${positionals.join(' ')}` : ''} [options]`;
  const rows = options.map(([name, d]) => {
    const value = d.placeholder ? (d.shape === 'list' ? ` ${d.placeholder}...` : ` ${d.placeholder}`) : '';
    const former = d.formerNames?.length ? ` (formerly ${d.formerNames.map((f) => `--${f}`).join(', ')})` : '';
    return [`--${name}${value}`, `${d.help}${former}`] as const;
  });
  const width = Math.max(...rows.map(([left]) => left.length));
  return [
    usage,
    '',
    spec.summary,
    '',
    'options:',
    ...rows.map(([left, help]) => `  ${left.padEnd(width)}  ${help}`),
    `  ${'--help'.padEnd(width)}  show this help`,
    '',
  ].join('\n');
}
