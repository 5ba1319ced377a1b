/**
 * zod schemas for raw option values (always strings from argv), with messages in the user's
 * words: what is allowed and what was given.
 */
import { z } from 'zod';
import { urlCredentialProblem } from '../provision/url.js';

/** A boolean flag: true when given. */
export const flag = z.literal(true).optional().transform((value) => value === true);

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

/** A postgres:// or postgresql:// URL. Its password is never repeated in a message. */
export const postgresUrl = z.string().transform((raw, ctx) => {
  const problem = urlCredentialProblem(raw);
  if (problem !== undefined) {
    ctx.addIssue({ code: 'custom', message: problem });
    return z.NEVER;
  }
  let parsed: URL | undefined;
  try {
    parsed = new URL(raw);
  } catch {
    parsed = undefined;
  }
  if (!parsed || !['postgres:', 'postgresql:'].includes(parsed.protocol) || !parsed.hostname) {
    ctx.addIssue({
      code: 'custom',
      // The value may hold a password in a form we failed to parse: do not echo it.
      message: 'expected a URL such as postgres://user:password@host:5432/database',
    });
    return z.NEVER;
  }
  return raw;
});

/**
 * The zod shape of an options object: each option's schema under the option's name.
 * @param options option definitions
 * @returns the shape for `z.object`
 */
export function schemasOf<O extends Record<string, { schema: z.ZodType }>>(options: O): { [K in keyof O]: O[K]['schema'] } {
  return Object.fromEntries(Object.entries(options).map(([name, def]) => [name, def.schema])) as { [K in keyof O]: O[K]['schema'] };
}
