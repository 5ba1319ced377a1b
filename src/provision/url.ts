/**
 * Connection URLs: what we print must never contain a password, and a database name is
 * swapped in more than one place.
 */

import { urlOverSocket } from './socket-url.mjs';

const MASK = '****';

/**
 * The URL with its password (and any `password=` parameter) replaced by `****`. Strings that
 * are not URLs are returned with `password=...` pairs masked.
 * @param url a connection string
 * @returns the same string, safe to print
 */
export function maskUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return maskUrlsIn(url);
  }
  if (parsed.password) parsed.password = MASK;
  for (const key of [...parsed.searchParams.keys()]) {
    if (key.toLowerCase() === 'password') parsed.searchParams.set(key, MASK);
  }
  // URL encodes '*' in neither place, so the mask reads as written.
  return parsed.toString();
}

/**
 * Any text with the passwords of the connection strings in it masked: the `user:password@` of
 * every URL and every `password=` pair. For messages that may echo what a user typed (a stray
 * argument, a value an option refused), where no one knows beforehand which secret to look for.
 * A password runs to the last `@` before a quote or the end of the line: one written with an
 * unencoded `@`, `/`, `#` or space is masked whole (and a little more, never less).
 * @param text a message
 * @returns the message, safe to print
 */
export function maskUrlsIn(text: string): string {
  return text
    .replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:@/'"]*:)[^'"\n]*@/gi, `$1${MASK}@`)
    .replace(/(password\s*=\s*)('[^']*'|[^\s&]+)/gi, `$1${MASK}`);
}

/**
 * The password in a connection URL, decoded, if there is one.
 * @param url a postgres:// URL
 * @returns the password or undefined
 */
export function passwordOf(url: string): string | undefined {
  return passwordForms(url)[0];
}

/**
 * The password in a connection URL as it is meant and as it is written (percent-encoded,
 * perhaps otherwise than `encodeURIComponent` would), each once: what a runner must mask, since
 * a command given the URL may print either.
 * @param url a postgres:// URL
 * @returns the decoded form first; empty when there is no password
 */
export function passwordForms(url: string): string[] {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  const query = parsed ? /[?&]password=([^&#]*)/i.exec(parsed.search)?.[1] : undefined;
  // As written: the URL standard re-encodes what it reads ('@' becomes %40), and a URL it
  // refuses (an unencoded '#' or '/' in the password) still has a password to mask.
  const written = writtenPassword(url, parsed !== undefined);
  const raw = written ?? query;
  if (!raw) return [];
  let decoded = raw;
  try {
    decoded = decodeURIComponent(written !== undefined ? raw : raw.replace(/\+/g, ' '));
  } catch {
    // A stray '%' ("100%pure"): the password is what is written.
  }
  return [...new Set([decoded, raw])];
}

/**
 * The password of a URL's user info as it is written: from the first ':' to the last '@' of the
 * authority, as node-postgres and the URL standard read it. In a URL they refuse (a '/' or '#'
 * in the password), to the last '@' of all: the longest candidate, which hides every shorter one.
 * @param url a connection URL
 * @param standard whether the URL standard parses it
 * @returns the password, or undefined when there is none
 */
function writtenPassword(url: string, standard: boolean): string | undefined {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url)?.[0];
  if (scheme === undefined) return undefined;
  const rest = url.slice(scheme.length);
  const end = standard ? rest.search(/[/?#]/) : -1;
  const authority = end < 0 ? rest : rest.slice(0, end);
  const at = authority.lastIndexOf('@');
  const colon = authority.indexOf(':');
  if (at < 0 || colon < 0 || colon > at) return undefined;
  return authority.slice(colon + 1, at) || undefined;
}

/** `secret` as written into a URL in any way: each character itself or percent-encoded (hex
 * digits in either case), a space also as `+`. */
function anyEncoding(secret: string): RegExp {
  const hex = (b: number) =>
    b
      .toString(16)
      .padStart(2, '0')
      .replace(/[a-f]/g, (d) => `[${d}${d.toUpperCase()}]`);
  const parts = [...secret].map((ch) => {
    const encoded = [...new TextEncoder().encode(ch)].map((b) => `%${hex(b)}`).join('');
    const plain = ch.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    return `(?:${plain}|${encoded}${ch === ' ' ? '|\\+' : ''})`;
  });
  return new RegExp(parts.join(''), 'g');
}

/**
 * Replaces every occurrence of a secret in a message. A password of one or two characters
 * would also hit ordinary words, so those are left alone.
 * @param message text about to be printed
 * @param secret the password, if any
 * @returns the message without the secret
 */
export function redact(message: string, secret: string | undefined): string {
  if (!secret || secret.length < 3) return message;
  return message.replace(anyEncoding(secret), MASK);
}

/**
 * The same URL pointing at another database on the same server.
 * @param url a postgres:// URL
 * @param database the database name
 * @returns the new URL
 */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(database)}`;
  return parsed.toString();
}

/**
 * The URL the replay engine connects to: `url` (a database on `server`) over the server's
 * Unix-domain socket when it has one. The socket is the cheaper transport (per round trip, about a
 * quarter less CPU for the client and 6 % less for the server than TCP on loopback,
 * docs/benchmark.md), so the CPU the replay client takes from the server under test shrinks.
 * @param server the server `url` points at
 * @param url a postgres:// URL of a database on it
 * @returns the URL with the socket directory as its (percent-encoded) host, or `url`
 */
export function replayUrl(server: { socketDir?: string }, url: string): string {
  return urlOverSocket(url, server.socketDir);
}

/**
 * `host:port/database as user`, the way messages name a target (never with the password).
 * @param url a postgres:// URL
 * @returns the short description
 */
export function describeTarget(url: string): string {
  try {
    const parsed = new URL(url);
    const database = decodeURIComponent(parsed.pathname.replace(/^\//, '')) || '(default database)';
    const user = decodeURIComponent(parsed.username) || '(default user)';
    // A socket directory is a percent-encoded host (`%2Ftmp%2F...`): named as the path it is.
    const host = decodeURIComponent(parsed.hostname) || 'localhost';
    return `${host}:${parsed.port || '5432'}/${database} as ${user}`;
  } catch {
    return maskUrl(url);
  }
}
