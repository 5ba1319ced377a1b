/**
 * Data values in PostgreSQL's error messages. A report is posted on a pull request and kept as a
 * build artifact, while the workload was captured from a real database: a message such as
 * `Key (email)=(ann@example.com) already exists` would publish a customer's address. Messages are
 * masked by default, keeping what helps a reviewer (the constraint, column and type names) and
 * dropping the values.
 *
 * The rules, in order:
 * - always: the value list of `Key (…)=(…)` (unique, foreign key and exclusion violations,
 *   `could not create unique index`; also the `existing key (…)=(…)` of an exclusion conflict) and
 *   of `Failing row contains (…)`; these phrases only ever carry row data, whatever the SQLSTATE,
 *   so they are masked in migration messages too;
 * - SQLSTATE classes 22 (data exception) and 23 (integrity constraint violation): every quoted
 *   string (`"…"` or `'…'`) except one that follows a word naming an object (`column "email"`,
 *   `constraint "users_email_key"`, `type "mood"`), since in these classes quotes hold the
 *   offending input (`invalid input syntax for type integer: "abc"`).
 *
 * - SQLSTATE 42601 (syntax error): the quoted token (`at or near "…"`), which may be part of a
 *   literal; an unknown SQLSTATE (a migration command's output) is masked as classes 22 and 23;
 * - class P0 (`RAISE` in a function or trigger): the whole message, which is the function's own
 *   text and commonly carries the row's values (`customer ann@example.com not found`).
 *
 * Other classes keep their quotes: `column "emial" does not exist` (42703) names a column, not data.
 */

/** What replaces a value. */
export const MASK = '…';

/** Words after which a quoted string is an identifier, not a value. */
const IDENTIFIER_NOUNS = new Set([
  'column',
  'relation',
  'table',
  'constraint',
  'index',
  'type',
  'domain',
  'function',
  'procedure',
  'operator',
  'parameter',
  'schema',
  'sequence',
  'variable',
  'database',
  'role',
  'view',
  'trigger',
  'collation',
  'encoding',
]);

/**
 * `Key (cols)=(values)`: the value list ends at the `)` that is followed by the rest of the
 * sentence (` already exists`, ` is not present …`, ` is duplicated`, ` conflicts with …`), a
 * full stop or the end of a line, so values holding parentheses (ranges, `lower(…)`) are masked
 * whole.
 */
const KEY_VALUES = /(\b[Kk]ey \(.*?\)=\().*?\)(?=\s+(?:already|is|conflicts)\b|\.?\s*$|\.\s)/gm;

/** `Failing row contains (…)`: the whole row, to the last `)` of the line. */
const FAILING_ROW = /(\bFailing row contains \().*\)/gm;

/** A double- or single-quoted string (a doubled quote inside is part of it) and the word before it. */
const QUOTED = /(\b[A-Za-z_]+\s+)?("(?:[^"]|"")*"|'(?:[^']|'')*')/g;

/**
 * Masks data values in an error message.
 * @param message PostgreSQL's message (possibly with DETAIL lines)
 * @param sqlstate its SQLSTATE, or null when unknown (a migration command's output)
 * @returns the message with values replaced by `…`
 */
export function maskMessage(message: string, sqlstate: string | null): string {
  if (sqlstate?.startsWith('P0')) return `${MASK} (a function's own message, masked: it may carry data)`;
  let masked = message.replace(KEY_VALUES, `$1${MASK})`).replace(FAILING_ROW, `$1${MASK})`);
  if (sqlstate === null || sqlstate === '42601' || /^2[23]/.test(sqlstate)) {
    masked = masked.replace(QUOTED, (whole, before: string | undefined, quoted: string) => {
      const noun = before?.trim().toLowerCase();
      if (noun !== undefined && IDENTIFIER_NOUNS.has(noun)) return whole;
      const quote = quoted[0];
      return `${before ?? ''}${quote}${MASK}${quote}`;
    });
  }
  return masked;
}
