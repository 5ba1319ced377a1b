/**
 * Splits a SQL file into statements the way psql does, so that each statement runs on its own
 * (as `psql -f` runs it) and a failure can be pinned to a line of the file.
 *
 * Understood: '…' strings (with '' and, in E'…', backslash escapes), "…" identifiers,
 * $tag$…$tag$ bodies, -- and nested /* *\/ comments, parentheses, and SQL-standard function
 * bodies (BEGIN ATOMIC … END), whose inner semicolons do not end the statement.
 * Not supported, and reported with their line: psql meta-commands (\i, \copy, \set, …) and
 * COPY … FROM STDIN with inline data.
 */

export interface SqlStatement {
  /** The text sent to the server: everything from the end of the previous statement up to, not including, the `;`. */
  text: string;
  /** Offset of `text` in the file. */
  offset: number;
  /** 1-based line of the statement's first token. */
  line: number;
}

export type SplitResult = { ok: true; statements: SqlStatement[] } | { ok: false; line: number; problem: string };

const IDENT_CHAR = /[A-Za-z0-9_$\u0080-\uffff]/;
const IDENT_START = /[A-Za-z_\u0080-\uffff]/;

/**
 * Splits a script into statements.
 * @param sql the file's contents
 * @returns the statements, or the first construct we cannot run, with its line
 */
export function splitSql(sql: string): SplitResult {
  const statements: SqlStatement[] = [];
  let start = 0;
  let firstToken = -1;
  let parens = 0;
  let blockDepth = 0;
  let words: string[] = [];
  let i = 0;
  const n = sql.length;

  const finish = (end: number): SplitResult | undefined => {
    if (firstToken >= 0) {
      const text = sql.slice(start, end);
      const head = words.slice(0, 8).join(' ');
      if (/^COPY\b/.test(head) && /\bFROM\s+STDIN\b/i.test(text)) {
        return {
          ok: false,
          line: lineAt(sql, firstToken),
          problem: 'COPY … FROM STDIN with inline data is not supported; use INSERT … SELECT or generate_series, or a seed command',
        };
      }
      statements.push({ text, offset: start, line: lineAt(sql, firstToken) });
    }
    start = end + 1;
    firstToken = -1;
    parens = 0;
    blockDepth = 0;
    words = [];
    return undefined;
  };

  while (i < n) {
    const c = sql[i]!;
    const next = sql[i + 1];
    if (c === '-' && next === '-') {
      while (i < n && sql[i] !== '\n') i++;
      continue;
    }
    if (c === '/' && next === '*') {
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (sql[i] === '/' && sql[i + 1] === '*') {
          depth++;
          i += 2;
        } else if (sql[i] === '*' && sql[i + 1] === '/') {
          depth--;
          i += 2;
        } else i++;
      }
      continue;
    }
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === '\\' && atLineStart(sql, i)) {
      const command = /^\\\S*/.exec(sql.slice(i))?.[0] ?? '\\';
      return {
        ok: false,
        line: lineAt(sql, i),
        problem: `psql meta-command ${command} is not supported; the file must be plain SQL`,
      };
    }
    if (firstToken < 0) firstToken = i;
    if (c === ';') {
      if (parens === 0 && blockDepth === 0) {
        const failed = finish(i);
        if (failed) return failed;
      }
      i++;
      continue;
    }
    if (c === '(') {
      parens++;
      i++;
    } else if (c === ')') {
      parens = Math.max(0, parens - 1);
      i++;
    } else if (c === "'") {
      const escapes = i > 0 && /[eE]/.test(sql[i - 1]!) && (i < 2 || !IDENT_CHAR.test(sql[i - 2]!));
      i = skipQuoted(sql, i, "'", escapes);
    } else if (c === '"') {
      i = skipQuoted(sql, i, '"', false);
    } else if (c === '$' && (i === 0 || !IDENT_CHAR.test(sql[i - 1]!))) {
      const tag = /^\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/.exec(sql.slice(i, i + 64))?.[0];
      if (tag) {
        const close = sql.indexOf(tag, i + tag.length);
        i = close < 0 ? n : close + tag.length;
      } else {
        i++;
      }
    } else if (IDENT_START.test(c)) {
      let j = i + 1;
      while (j < n && IDENT_CHAR.test(sql[j]!)) j++;
      const word = sql.slice(i, j).toUpperCase();
      words.push(word);
      blockDepth = trackBlocks(words, word, blockDepth);
      i = j;
    } else {
      i++;
    }
  }
  const failed = finish(n);
  if (failed) return failed;
  return { ok: true, statements };
}

/**
 * BEGIN ATOMIC … END in CREATE FUNCTION/PROCEDURE (PostgreSQL 14+) holds statements; CASE …
 * END may nest inside it. Elsewhere BEGIN and END are transaction commands and do not nest.
 */
function trackBlocks(words: string[], word: string, depth: number): number {
  const routine = words.length >= 2 && words[0] === 'CREATE' && (words.includes('FUNCTION') || words.includes('PROCEDURE'));
  if (!routine) return depth;
  if (word === 'ATOMIC' && words.at(-2) === 'BEGIN') return depth + 1;
  if (depth > 0 && word === 'CASE') return depth + 1;
  if (depth > 0 && word === 'END') return depth - 1;
  return depth;
}

function skipQuoted(sql: string, open: number, quote: string, backslashEscapes: boolean): number {
  let i = open + 1;
  while (i < sql.length) {
    const c = sql[i];
    if (backslashEscapes && c === '\\') {
      i += 2;
      continue;
    }
    if (c === quote) {
      if (sql[i + 1] === quote) {
        i += 2;
        continue;
      }
      return i + 1;
    }
    i++;
  }
  return sql.length;
}

function atLineStart(sql: string, index: number): boolean {
  for (let i = index - 1; i >= 0; i--) {
    if (sql[i] === '\n') return true;
    if (sql[i] !== ' ' && sql[i] !== '\t') return false;
  }
  return true;
}

/**
 * The 1-based line of an offset.
 * @param text the file
 * @param offset an index into it
 * @returns its line number
 */
export function lineAt(text: string, offset: number): number {
  let line = 1;
  const end = Math.min(offset, text.length);
  for (let i = 0; i < end; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}
