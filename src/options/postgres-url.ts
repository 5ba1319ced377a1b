/**
 * A connection URL given as an option: refused when PostgreSQL's clients would read it
 * differently, and never echoed in a message, since it may hold a password.
 */
import { z } from 'zod';

/**
 * Why the user name or password of a connection URL cannot be used as written, if it cannot.
 * PostgreSQL's clients split a URL differently: libpq ends the user info at the first `@` before
 * a `/`, tokio-postgres (the replay engine) at the first `@` anywhere, node-postgres and the URL
 * standard at the last `@` before the host. A password with an `@` (or a `/`, `?`, `#`) in it
 * unencoded is thus a different password, or part of the host, to each, and a part taken for the
 * host ends up in error messages. Spaces and a `%` not followed by two hex digits are refused by
 * libpq. Such a URL is refused rather than guessed at.
 * @param url a connection string
 * @returns the problem and the fix, naming no part of the URL; undefined when it is fine
 */
export function urlCredentialProblem(url: string): string | undefined {
  const scheme = url.indexOf('://');
  if (scheme < 0) return undefined;
  const rest = url.slice(scheme + 3);
  const at = rest.indexOf('@');
  if (at < 0) return undefined;
  let problem: string | undefined;
  const userinfo = rest.slice(0, at);
  if (rest.indexOf('@', at + 1) >= 0) problem = "an '@' in the user name, the password or after the host is not percent-encoded";
  else if (/[/?#]/.test(userinfo))
    problem = "a '/', '?' or '#' in the user name or password, or an '@' after the host, is not percent-encoded";
  else if (/\s/.test(userinfo)) problem = 'a space in the user name or password is not percent-encoded';
  else if (/%(?![0-9a-f]{2})/i.test(userinfo)) problem = "a '%' in the user name or password starts no %XX escape";
  if (problem === undefined) return undefined;
  return (
    `${problem}, and PostgreSQL's clients read such a URL differently (part of the password taken for the host); ` +
    "percent-encode the user name and password ('@' as %40, '/' as %2F, '?' as %3F, '#' as %23, '%' as %25, a space as %20: encodeURIComponent in JavaScript, urllib.parse.quote(p, safe='') in Python)"
  );
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
