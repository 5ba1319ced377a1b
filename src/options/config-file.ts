/**
 * `--config FILE`: the gate's options from a YAML (or JSON) file, keyed by option name:
 *
 * ```yaml
 * workload: .pg-retest/checkout.wkl
 * migrations: [db/migrations/*.sql]
 * seed: db/seed.sql
 * p95-threshold: 20%
 * postgres-config: { shared_buffers: 256MB }
 * ```
 *
 * Values become the same raw text a flag would give, so one schema (the command's, such as
 * src/gate/options.ts) validates both; a flag given on the command line wins over the file. Paths are relative to the working
 * directory, as on the command line.
 */
import fs from 'node:fs';
import { parse } from 'yaml';
import type { OptionDefs, RawValue } from './argv.js';
import { InputError } from '../exit-codes.js';

/**
 * Reads a config file into raw option values.
 * @param file the file's path
 * @param defs the options it may set
 * @returns raw values by option name
 * @throws InputError for an unreadable or malformed file, an unknown key or a value of the wrong shape
 */
export function readConfigFile(file: string, defs: OptionDefs): Record<string, RawValue> {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new InputError(
      `option --config: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)}); check the path`,
    );
  }
  let data: unknown;
  try {
    data = parse(text, { prettyErrors: false });
  } catch (error) {
    const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new InputError(`config file ${file}: not valid YAML: ${message}`);
  }
  if (data === null || data === undefined) return {};
  if (typeof data !== 'object' || Array.isArray(data)) {
    throw new InputError(`config file ${file}: expected a mapping of option names to values (workload: ..., migrations: ...)`);
  }
  const values: Record<string, RawValue> = {};
  for (const [key, value] of Object.entries(data)) {
    const def = defs[key];
    if (!def || def.shape === 'positional' || key === 'config') {
      const known = Object.keys(defs).filter((name) => name !== 'config');
      throw new InputError(`config file ${file}: unknown option '${key}'; known options: ${known.join(', ')}`);
    }
    const raw = toRaw(value, def.shape === 'list', key === 'postgres-config');
    if (raw === undefined) {
      throw new InputError(
        `config file ${file}: option '${key}' expects ${def.shape === 'list' ? 'a value or a list of values' : 'a single value'}, got ${describe(value)}`,
      );
    }
    if (raw !== null) values[key] = raw;
  }
  return values;
}

/**
 * Raw values of the file, overridden by the command line's.
 * @param fromFile values read by {@link readConfigFile}
 * @param fromArgs values from the command line
 * @returns the merged values
 */
export function mergeValues(fromFile: Record<string, RawValue>, fromArgs: Record<string, RawValue>): Record<string, RawValue> {
  return { ...fromFile, ...fromArgs };
}

/** The value as flag text; null for an explicit null (treated as absent); undefined when the shape is wrong. */
function toRaw(value: unknown, list: boolean, settings: boolean): RawValue | null | undefined {
  if (value === null) return null;
  if (settings && typeof value === 'object' && !Array.isArray(value)) {
    const pairs = Object.entries(value as Record<string, unknown>).map(([k, v]) =>
      scalar(v) === undefined ? undefined : `${k}=${quote(scalar(v)!)}`,
    );
    return pairs.every((pair) => pair !== undefined) ? (pairs as string[]) : undefined;
  }
  if (Array.isArray(value)) {
    if (!list) return undefined;
    const items = value.map(scalar);
    return items.every((item) => item !== undefined) ? (items as string[]) : undefined;
  }
  return scalar(value);
}

function scalar(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  return undefined;
}

/** Settings values with spaces need quotes to survive the `name=value` parsing. */
function quote(value: string): string {
  return /[\s,']/.test(value) ? `'${value.replaceAll("'", "''")}'` : value;
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object' && value !== null) return 'a mapping';
  return `'${String(value)}'`;
}
