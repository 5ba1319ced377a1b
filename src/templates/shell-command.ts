/**
 * Runs a user's command (`migrate-command`, `seed-command`) against one database: the target is
 * in `DATABASE_URL` and the libpq `PG*` variables, so that migration tools and psql find it
 * without configuration. Its output goes to our log, indented; a failure names the command, its
 * exit status and its last lines.
 */
import { spawn } from 'node:child_process';
import { InfraError, InterruptedError } from '../exit-codes.js';
import type { Logger } from '../runtime/logger.js';
import { passwordOf, redact } from '../provision/url.js';

export interface CommandOptions {
  /** The directory to run in. */
  cwd: string;
  /** The database the command works on. */
  url: string;
  logger: Logger;
  signal?: AbortSignal;
}

/** A command that ended with a non-zero status. */
export class CommandError extends InfraError {
  constructor(
    message: string,
    /** The status and last output lines, for reports. */
    readonly detail: string,
  ) {
    super(message);
  }
}

/**
 * The libpq environment for a database URL.
 * @param url a postgres:// URL
 * @returns DATABASE_URL and PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE
 */
export function databaseEnv(url: string): Record<string, string> {
  const parsed = new URL(url);
  const env: Record<string, string> = {
    DATABASE_URL: url,
    PGHOST: parsed.hostname,
    PGPORT: parsed.port || '5432',
    PGUSER: decodeURIComponent(parsed.username),
    PGDATABASE: decodeURIComponent(parsed.pathname.replace(/^\//, '')),
  };
  const password = passwordOf(url);
  if (password !== undefined) env.PGPASSWORD = password;
  return env;
}

/**
 * Runs `command` with `sh -c`.
 * @param what e.g. `migrate-command (base)`, for messages
 * @param command the shell command
 * @param options where and against what
 * @throws CommandError when it fails, InterruptedError when aborted
 */
export function runCommand(what: string, command: string, options: CommandOptions): Promise<void> {
  const secret = passwordOf(options.url);
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], {
      cwd: options.cwd,
      env: { ...process.env, ...databaseEnv(options.url) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const tail: string[] = [];
    const onLine = (line: string) => {
      const clean = redact(line, secret);
      tail.push(clean);
      if (tail.length > 5) tail.shift();
      options.logger.info(`  | ${clean}`);
    };
    for (const stream of [child.stdout, child.stderr]) {
      let pending = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        pending += chunk;
        const lines = pending.split('\n');
        pending = lines.pop() ?? '';
        lines.forEach(onLine);
      });
      stream.on('end', () => pending && onLine(pending));
    }
    const abort = () => child.kill('SIGTERM');
    options.signal?.addEventListener('abort', abort, { once: true });
    child.on('error', (error) => reject(new CommandError(`${what}: cannot run '${command}': ${error.message}`, error.message)));
    child.on('close', (code, signal) => {
      options.signal?.removeEventListener('abort', abort);
      if (options.signal?.aborted) return reject(new InterruptedError(`interrupted during ${what}`));
      if (code === 0) return resolve();
      const status = code === null ? `killed by ${signal}` : `exit status ${code}`;
      const last = tail.length ? `: ${tail.join(' / ')}` : '';
      reject(
        new CommandError(
          `${what} '${command}' failed (${status})${last}; run it by hand against a scratch database to see why`,
          `${status}${last}`,
        ),
      );
    });
  });
}
