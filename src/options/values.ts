/**
 * zod schemas for option values that arrive as text from anywhere: command-line flags, a config
 * file (whose numbers and booleans are turned into text first, see config-file.ts) and GitHub
 * Action inputs (always strings; lists as lines). One set of rules for all three, with messages
 * in the user's words: what is allowed and what was given.
 */
import { z } from 'zod';

/** A boolean flag: true when given. */
export const flag = z
  .literal(true)
  .optional()
  .transform((value) => value === true);

/**
 * A number from a string.
 * @param expected what is allowed, as the message should say it ("a number ≥ 0")
 * @param accept the range check
 * @param integer whole numbers only
 * @returns a schema giving a number
 */
export function numberValue(expected: string, accept: (n: number) => boolean, integer = false) {
  return z.string().transform((raw, ctx) => {
    const trimmed = raw.trim();
    const n = Number(trimmed);
    if (trimmed === '' || !Number.isFinite(n) || (integer && !Number.isInteger(n)) || !accept(n)) {
      ctx.addIssue({ code: 'custom', message: `expected ${expected}, got '${raw}'` });
      return z.NEVER;
    }
    return n;
  });
}

/**
 * One of a fixed set of words.
 * @param choices the allowed words
 * @returns a schema giving one of them
 */
export function choice<const T extends readonly [string, ...string[]]>(choices: T) {
  return z.string().transform((raw, ctx) => {
    if ((choices as readonly string[]).includes(raw)) return raw as T[number];
    ctx.addIssue({ code: 'custom', message: `expected one of ${choices.join(', ')}, got '${raw}'` });
    return z.NEVER;
  });
}

/**
 * A file path (existence is checked later, when the command resolves its inputs).
 * @param what what the file is, for the "required" message
 * @returns a schema giving the path
 */
export function filePath(what: string) {
  return z.string({ error: (issue) => (issue.input === undefined ? `is required: ${what}` : `expected a path, ${what}`) }).min(1, {
    error: `expected a path, ${what}`,
  });
}

/**
 * The zod shape of an options object: each option's schema under the option's name.
 * @param options option definitions
 * @returns the shape for `z.object`
 */
export function schemasOf<O extends Record<string, { schema: z.ZodType }>>(options: O): { [K in keyof O]: O[K]['schema'] } {
  return Object.fromEntries(Object.entries(options).map(([name, def]) => [name, def.schema])) as { [K in keyof O]: O[K]['schema'] };
}

/**
 * A yes/no option: `true` from a CLI flag, or the words true/false (yes/no, 1/0) from a config
 * file or an action input.
 * @param fallback the value when absent
 * @returns a schema giving a boolean
 */
export function booleanValue(fallback: boolean) {
  return z
    .union([z.literal(true), z.string()])
    .optional()
    .transform((raw, ctx) => {
      if (raw === undefined || raw === '') return fallback;
      if (raw === true) return true;
      const word = raw.trim().toLowerCase();
      if (['true', 'yes', '1', 'on'].includes(word)) return true;
      if (['false', 'no', '0', 'off'].includes(word)) return false;
      ctx.addIssue({ code: 'custom', message: `expected true or false, got '${raw}'` });
      return z.NEVER;
    });
}

/**
 * A list of values: repeated flags, a YAML list, or (action inputs) one value per line.
 * Blank lines and surrounding spaces are dropped.
 * @param what what one entry is, for messages
 * @returns a schema giving the entries (possibly empty)
 */
export function listValue(what: string) {
  return z
    .union([z.string(), z.array(z.string())])
    .optional()
    .transform((raw, ctx) => {
      if (raw === undefined) return [];
      const items = (Array.isArray(raw) ? raw : raw.split('\n')).map((item) => item.trim()).filter((item) => item !== '');
      if (Array.isArray(raw) && items.length === 0) {
        ctx.addIssue({ code: 'custom', message: `expected at least one ${what}` });
        return z.NEVER;
      }
      return items;
    });
}

/**
 * The items of a comma- or space-separated value, or of a list of them (`10,25 50`, a YAML list).
 * @param raw one value, or several
 * @returns the non-empty items, in order
 */
export function separatedItems(raw: string | readonly string[]): string[] {
  return (typeof raw === 'string' ? [raw] : raw).flatMap((item) => item.split(/[\s,]+/)).filter((item) => item !== '');
}

/**
 * A fraction written as a percentage (`20%`, `20 %`) or a plain fraction (`0.2`).
 * @param expected what is allowed, for the message
 * @param accept range check on the fraction
 * @param bareBelowOne refuse a plain number of 1 or more: for an option whose name says
 *   percent, `1` read as a fraction (100 %) is surely not what was meant
 * @returns a schema giving the fraction
 */
export function percentValue(expected: string, accept: (fraction: number) => boolean, bareBelowOne = false) {
  return z.string().transform((raw, ctx) => {
    const text = raw.trim();
    const match = /^([0-9]*\.?[0-9]+)\s*(%?)$/.exec(text);
    const fraction = match ? Number(match[1]) / (match[2] ? 100 : 1) : Number.NaN;
    if (bareBelowOne && match && !match[2] && fraction >= 1) {
      ctx.addIssue({
        code: 'custom',
        message: `a plain number is a fraction here: write '${match[1]}%' for that many percent, or '100%' to allow every one; got '${raw}'`,
      });
      return z.NEVER;
    }
    if (!Number.isFinite(fraction) || !accept(fraction)) {
      ctx.addIssue({ code: 'custom', message: `expected ${expected}, got '${raw}'` });
      return z.NEVER;
    }
    return fraction;
  });
}

/**
 * A value that can also be `off`: `off` (any case) gives null, anything else goes through `value`
 * (whose message should name `off` among what it expects).
 * @param value the schema of the value when it is not `off`
 * @returns a schema giving the value, or null for `off`
 */
export function offOr<T>(value: z.ZodType<T, string>) {
  return z.string().transform((raw, ctx): T | null => {
    if (/^\s*off\s*$/i.test(raw)) return null;
    const parsed = value.safeParse(raw);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) ctx.addIssue({ code: 'custom', message: issue.message });
    return z.NEVER;
  });
}

/**
 * Server settings: `name=value` pairs separated by spaces, commas or lines
 * (`shared_buffers=256MB work_mem=16MB`); a value may be single-quoted to hold spaces.
 */
export const settingsValue = z
  .union([z.string(), z.array(z.string())])
  .optional()
  .transform((raw, ctx) => {
    const settings: Record<string, string> = {};
    if (raw === undefined) return settings;
    const text = Array.isArray(raw) ? raw.join('\n') : raw;
    const pair = /([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*('(?:[^']|'')*'|[^\s,']+)/y;
    let i = 0;
    while (i < text.length) {
      if (/[\s,]/.test(text[i]!)) {
        i++;
        continue;
      }
      pair.lastIndex = i;
      const match = pair.exec(text);
      if (!match) {
        const bad = text.slice(i).split(/[\s,]/)[0];
        ctx.addIssue({ code: 'custom', message: `expected name=value pairs such as shared_buffers=256MB, got '${bad}'` });
        return z.NEVER;
      }
      const value = match[2]!;
      settings[match[1]!.toLowerCase()] = value.startsWith("'") ? value.slice(1, -1).replaceAll("''", "'") : value;
      i = pair.lastIndex;
    }
    return settings;
  });

/**
 * A duration: a number with a unit (`90s`, `5m`, `1.5h`) or a plain number of seconds.
 * @param expected what is allowed, for the message
 * @returns a schema giving milliseconds
 */
export function durationValue(expected: string) {
  const units: Record<string, number> = { '': 1000, s: 1000, m: 60_000, min: 60_000, h: 3_600_000 };
  return z.string().transform((raw, ctx) => {
    const match = /^([0-9]*\.?[0-9]+)\s*(s|m|min|h)?$/.exec(raw.trim());
    const ms = match ? Number(match[1]) * units[match[2] ?? '']! : Number.NaN;
    if (!Number.isFinite(ms) || ms <= 0) {
      ctx.addIssue({ code: 'custom', message: `expected ${expected}, got '${raw}'` });
      return z.NEVER;
    }
    return ms;
  });
}
