/**
 * pg-retest's targets are connection strings as libpq and tokio-postgres take them:
 * `host=127.0.0.1 port=5432 user=app password=secret dbname=shop` (or a postgres:// URL). The
 * rest of this tool speaks URLs (the pg client, `describeTarget`, masking), so key=value strings
 * become URLs here, once. Messages never repeat the string: it may hold a password.
 */
import { urlCredentialProblem } from '../options/postgres-url.js';

/** Keywords that become parts of the URL; every other keyword becomes a query parameter. */
const URL_PARTS = new Set(['host', 'hostaddr', 'port', 'user', 'password', 'dbname']);

/**
 * The connection string as a postgres:// URL.
 * @param conninfo a libpq key=value string or a postgres:// / postgresql:// URL
 * @returns the URL
 * @throws Error with a message that names what is wrong, never the value
 */
export function conninfoToUrl(conninfo: string): string {
  const text = conninfo.trim();
  if (/^postgres(ql)?:\/\//i.test(text)) {
    const problem = urlCredentialProblem(text);
    if (problem !== undefined) throw new Error(problem);
    let parsed: URL;
    try {
      parsed = new URL(text);
    } catch {
      throw new Error('not a valid postgres:// URL');
    }
    if (!parsed.hostname) throw new Error('the URL names no host');
    return text;
  }
  const pairs = parseKeyValues(text);
  const host = pairs.get('host') ?? pairs.get('hostaddr');
  if (host === undefined || host === '')
    throw new Error('no host= in the connection string (e.g. host=127.0.0.1 port=5432 user=app dbname=shop)');
  if (host.includes(',')) throw new Error('several hosts are not supported; name one host');
  const port = pairs.get('port');
  if (port !== undefined && !/^\d{1,5}$/.test(port)) throw new Error('port= must be a number');
  const user = pairs.get('user');
  const password = pairs.get('password');
  const credentials =
    user === undefined ? '' : `${encodeURIComponent(user)}${password === undefined ? '' : `:${encodeURIComponent(password)}`}@`;
  // A host that is a directory is a Unix socket; percent-encoded, both pg and tokio-postgres read it so.
  const hostPart = host.startsWith('/') ? encodeURIComponent(host) : host.includes(':') ? `[${host}]` : host;
  const query = new URLSearchParams();
  for (const [key, value] of pairs) if (!URL_PARTS.has(key)) query.set(key, value);
  const search = query.size > 0 ? `?${query.toString()}` : '';
  return `postgres://${credentials}${hostPart}${port ? `:${port}` : ''}/${encodeURIComponent(pairs.get('dbname') ?? '')}${search}`;
}

/**
 * `key = value` pairs, values bare or single-quoted, with `\'` and `\\` escapes (libpq's rules).
 * @param text the connection string
 * @returns the pairs, keys lower-cased
 */
function parseKeyValues(text: string): Map<string, string> {
  const pairs = new Map<string, string>();
  let i = 0;
  const skipSpace = () => {
    while (i < text.length && /\s/.test(text[i]!)) i++;
  };
  while (true) {
    skipSpace();
    if (i >= text.length) break;
    const keyStart = i;
    while (i < text.length && /[A-Za-z0-9_]/.test(text[i]!)) i++;
    const key = text.slice(keyStart, i).toLowerCase();
    skipSpace();
    if (key === '' || text[i] !== '=')
      throw new Error('expected key=value pairs such as host=127.0.0.1 port=5432 dbname=shop, or a postgres:// URL');
    i++;
    skipSpace();
    let value = '';
    if (text[i] === "'") {
      i++;
      let closed = false;
      while (i < text.length) {
        const c = text[i++]!;
        if (c === '\\' && i < text.length) value += text[i++];
        else if (c === "'") {
          closed = true;
          break;
        } else value += c;
      }
      if (!closed) throw new Error(`the value of ${key}= has an unterminated quote`);
    } else {
      while (i < text.length && !/\s/.test(text[i]!)) {
        const c = text[i++]!;
        value += c === '\\' && i < text.length ? text[i++] : c;
      }
    }
    pairs.set(key, value);
  }
  return pairs;
}
