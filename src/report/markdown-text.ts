/**
 * Building blocks of GitHub-flavoured markdown that stay intact whatever text they hold: SQL with
 * pipes and backticks, messages with `$` (GitHub reads `$…$` as math), multi-line output, and
 * mentions, references and URLs that must stay inert (below).
 */
import { oneLine } from '../format/table.js';

/** Characters that markdown (or GitHub's math and tables) would read as syntax. */
const SPECIAL = /[\\`*_[\]<>|$~#]/g;

/**
 * Invisible and without a line break (U+2060 WORD JOINER): put inside a mention, a reference or
 * a URL, it keeps the text as it reads while GitHub no longer recognises it.
 */
const JOINER = '\u2060';

/**
 * Text a report quotes (error messages, statements, names from a server or from an artifact a
 * PR produced) is not ours, and on GitHub some plain text acts: `@user` and `@org/team` notify
 * people, `#12` and `owner/repo#12` put a link into another issue's timeline, and `https://…`,
 * `ftp://…` and `www.…` become links. A joiner after the `@` (where GitHub would see a mention:
 * at the start or after a character that is not a letter, digit or `_`; an e-mail address is
 * left alone), after a `#` before a digit, inside `://` and after `www` makes each of them
 * plain text that reads the same. Code spans and blocks need none of this: GitHub leaves them
 * alone.
 * @param value markdown text outside code
 * @returns the same text, inert
 */
export function inert(value: string): string {
  return value
    .replace(/(^|[^A-Za-z0-9_])@(?=[A-Za-z0-9])/g, `$1@${JOINER}`)
    .replace(/#(?=[0-9])/g, `#${JOINER}`)
    .replace(/:\/\//g, `:${JOINER}//`)
    .replace(/\b(www)\./gi, `$1${JOINER}.`);
}

/**
 * Plain text for a paragraph, list item or table cell: syntax characters escaped, lines joined
 * (whitespace kept at the ends, so that pieces can be joined), mentions, references and URLs
 * made inert ({@link inert}).
 * @param text any text
 * @returns markdown showing exactly that text
 */
export function text(value: string): string {
  return inert(value.replace(/\s+/g, ' ').replace(SPECIAL, (c) => `\\${c}`));
}

/**
 * A sentence of the report (headline, reason, warning) that may quote code between backticks, as
 * in ``SQLSTATE 42703 in `SELECT …` ``: the quoted parts become code spans, the rest plain text.
 * @param value the sentence
 * @param inTable true inside a table row
 * @returns markdown
 */
export function prose(value: string, inTable = false): string {
  return value
    .split(/(`[^`]+`)/)
    .map((part, i) => (i % 2 === 1 ? code(part.slice(1, -1), Number.POSITIVE_INFINITY, inTable) : text(part)))
    .join('')
    .trim();
}

/**
 * Inline code: whitespace collapsed, cut to `max` characters with an ellipsis, fenced with more
 * backticks than the text holds in a row.
 * @param value the code, e.g. normalized SQL
 * @param max the longest it may be before `…`
 * @param inTable true inside a table row, where `|` must be written `\|` even in code
 * @returns the code span
 */
export function code(value: string, max = Number.POSITIVE_INFINITY, inTable = false): string {
  const flat = Number.isFinite(max) ? oneLine(value, max) : value.replace(/\s+/g, ' ').trim();
  const run = Math.max(0, ...Array.from(flat.matchAll(/`+/g), (m) => m[0].length));
  const fence = '`'.repeat(run + 1);
  const padded = run > 0 || flat.startsWith(' ') ? ` ${flat} ` : flat;
  const body = inTable ? padded.replace(/\|/g, '\\|') : padded;
  return `${fence}${body}${fence}`;
}

/**
 * A fenced code block, its fence longer than any backtick run inside.
 * @param value the text, lines kept
 * @param language the info string, e.g. `sql`
 * @returns the lines of the block
 */
export function codeBlock(value: string, language = ''): string[] {
  const run = Math.max(2, ...Array.from(value.matchAll(/`+/g), (m) => m[0].length));
  const fence = '`'.repeat(run + 1);
  return [`${fence}${language}`, ...value.replace(/\s+$/, '').split(/\r?\n/), fence];
}

export type Align = 'left' | 'right' | 'center';

/**
 * A markdown table. Cells must already be markdown (escaped with {@link text} or {@link code}).
 * @param header column titles
 * @param rows cells, one array per row
 * @param align per column; default left
 * @returns the lines
 */
export function mdTable(header: string[], rows: string[][], align: Align[] = []): string[] {
  const rule = header.map((_, column) => {
    const a = align[column] ?? 'left';
    return a === 'right' ? '---:' : a === 'center' ? ':---:' : '---';
  });
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(rule), ...rows.map(line)];
}

/**
 * A collapsed section. The blank lines around the body let GitHub render markdown inside it.
 * @param summary the always-visible line: plain words, since markdown is not rendered there
 * @param body the lines inside
 * @returns the lines
 */
export function details(summary: string, body: string[]): string[] {
  return ['<details>', `<summary>${summary}</summary>`, '', ...body, '', '</details>'];
}
