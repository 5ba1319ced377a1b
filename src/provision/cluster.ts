/**
 * A throwaway PostgreSQL cluster: a fresh data directory, `initdb`, a server on a free port of
 * 127.0.0.1, and a supervisor process (pg-supervisor.mjs) that stops the server and removes the
 * directory when asked, or when this process ends in any way.
 *
 * The server listens on TCP only and requires a password (random, per server): a throwaway
 * server on a shared machine must not be open to every local user.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { InfraError } from '../exit-codes.js';
import type { Binaries } from './binaries.js';
import { type OsUser, serverOsUser } from './os-user.js';
import { type Logger, type Server, type StartOptions, silentLogger } from './types.js';

const DEFAULT_START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 45_000;
/** Another process may take the port between our probe and the server's bind. */
const PORT_ATTEMPTS = 5;
const SUPERUSER = 'postgres';

/**
 * Settings applied before the caller's. A throwaway server needs no durability; skipping
 * fsync keeps setup and seeding fast on slow CI disks. Both sides of a comparison run on the
 * same server, so this does not favour either.
 */
const THROWAWAY_SETTINGS: Record<string, string> = {
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
};

class PortTakenError extends Error {}

/**
 * Starts a throwaway cluster with the given binaries.
 * @param bins initdb and postgres to use
 * @param kind how the binaries were found, for the server's description
 * @param options settings, timeout, logger
 * @returns a running server; call stop() to remove it
 */
export async function startCluster(bins: Binaries, kind: 'local' | 'embedded', options: StartOptions = {}): Promise<Server> {
  const logger = options.logger ?? silentLogger;
  const settings = { ...THROWAWAY_SETTINGS, ...(options.settings ?? {}) };
  for (const key of Object.keys(settings)) {
    if (!/^[A-Za-z_][A-Za-z0-9_.]*$/.test(key)) throw new InfraError(`invalid server setting name '${key}'`);
  }
  const user = await serverOsUser();
  let lastError: unknown;
  for (let attempt = 0; attempt < PORT_ATTEMPTS; attempt++) {
    const port = await freePort();
    try {
      return await startOnce({ bins, kind, user, port, settings, logger, timeoutMs: options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS });
    } catch (error) {
      lastError = error;
      if (!(error instanceof PortTakenError)) throw error;
      logger.debug(`port ${port} was taken before the server could bind it; trying another`);
    }
  }
  throw new InfraError(`could not find a free port for PostgreSQL after ${PORT_ATTEMPTS} attempts (${String(lastError)})`);
}

interface StartOnce {
  bins: Binaries;
  kind: 'local' | 'embedded';
  user: OsUser | undefined;
  port: number;
  settings: Record<string, string>;
  logger: Logger;
  timeoutMs: number;
}

async function startOnce({ bins, kind, user, port, settings, logger, timeoutMs }: StartOnce): Promise<Server> {
  const root = fs.mkdtempSync(path.join(reachableTempDir(user), 'pg-retest-server-'));
  const dataDir = path.join(root, 'data');
  const logFile = path.join(root, 'postgres.log');
  const password = crypto.randomBytes(18).toString('base64url');
  const pwfile = path.join(root, 'pwfile');
  fs.writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (user) {
    fs.chownSync(root, user.uid, user.gid);
    fs.chownSync(pwfile, user.uid, user.gid);
  }
  fs.chmodSync(root, 0o700);

  const serverSettings: Record<string, string> = {
    ...settings,
    port: String(port),
    listen_addresses: '127.0.0.1',
    // TCP only: no socket file, whose path could exceed the 107-byte limit in a deep temp dir.
    unix_socket_directories: '',
  };
  const postgresArgs = ['-D', dataDir];
  for (const [key, value] of Object.entries(serverSettings)) postgresArgs.push('-c', `${key}=${value}`);
  const env: NodeJS.ProcessEnv = { ...process.env, LC_ALL: 'C', LANG: 'C' };
  delete env.PGDATA;

  logger.debug(`initdb ${dataDir} (PostgreSQL ${bins.version}, ${bins.bindir}${user ? `, as OS user ${user.name}` : ''})`);
  const supervisor = new Supervisor({
    initdb: bins.initdb,
    initdbArgs: [
      `--pgdata=${dataDir}`,
      `--username=${SUPERUSER}`,
      '--auth=scram-sha-256',
      `--pwfile=${pwfile}`,
      '--encoding=UTF8',
      '--locale=C',
      '--no-sync',
    ],
    postgres: bins.postgres,
    postgresArgs,
    env,
    cwd: root,
    logFile,
    removeDir: root,
    uid: user?.uid,
    gid: user?.gid,
  });
  const url = `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  try {
    await waitUntilReady(supervisor, { port, password, timeoutMs, logFile, bins });
  } catch (error) {
    await supervisor.stop().catch(() => {});
    throw error;
  } finally {
    fs.rmSync(pwfile, { force: true });
  }
  logger.debug(`PostgreSQL ${bins.version} accepts connections on 127.0.0.1:${port}`);
  return {
    kind,
    url,
    version: bins.version,
    description: `PostgreSQL ${bins.version} (${kind}, ${bins.bindir}) on 127.0.0.1:${port}`,
    logFile,
    stop: async () => {
      try {
        await supervisor.stop();
      } catch (error) {
        logger.info(`warning: ${error instanceof Error ? error.message : String(error)}`);
      }
    },
  };
}

/** A temp directory the server's OS user can reach (every parent searchable). */
function reachableTempDir(user: OsUser | undefined): string {
  const base = path.resolve(os.tmpdir());
  if (!user) return base;
  for (let dir = base; ; dir = path.dirname(dir)) {
    if ((fs.statSync(dir).mode & 0o001) === 0) return '/tmp';
    if (dir === path.dirname(dir)) return base;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.unref();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

interface SupervisorConfig {
  initdb: string;
  initdbArgs: string[];
  postgres: string;
  postgresArgs: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  logFile: string;
  removeDir: string;
  uid: number | undefined;
  gid: number | undefined;
}

type SupervisorEvent =
  | { event: 'initdb-failed'; code: number | string; output: string }
  | { event: 'running'; pid: number }
  | { event: 'exited'; code: number | null; signal: string | null }
  | { event: 'stopped' }
  | { event: 'supervisor-gone' };

/** The script next to this module: pg-supervisor.js when bundled into dist/, the .mjs source otherwise. */
function supervisorScript(): string {
  for (const name of ['pg-supervisor.js', 'pg-supervisor.mjs']) {
    const candidate = fileURLToPath(new URL(`./${name}`, import.meta.url));
    if (fs.existsSync(candidate)) return candidate;
  }
  throw new InfraError(
    `cannot find pg-supervisor.js next to ${fileURLToPath(import.meta.url)}; the build is incomplete, run npm run build`,
  );
}

/** Our side of pg-supervisor.mjs. */
class Supervisor {
  readonly events: SupervisorEvent[] = [];
  private readonly child: ChildProcess;
  private readonly exited: Promise<void>;
  private waiters: (() => void)[] = [];
  private stopping: Promise<void> | undefined;

  constructor(config: SupervisorConfig) {
    // Its own process group: a Ctrl-C in the terminal reaches only us, and we stop the replay
    // before the server, instead of the server dying under a running replay.
    this.child = spawn(process.execPath, [supervisorScript(), JSON.stringify(config)], {
      stdio: ['pipe', 'pipe', 'inherit'],
      detached: true,
    });
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
    this.child.once('exit', () => this.push({ event: 'supervisor-gone' }));
    this.child.once('error', () => this.push({ event: 'supervisor-gone' }));
    this.child.stdin?.on('error', () => {});
    let pending = '';
    this.child.stdout?.setEncoding('utf8');
    this.child.stdout?.on('data', (chunk: string) => {
      pending += chunk;
      let newline: number;
      while ((newline = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        try {
          this.push(JSON.parse(line) as SupervisorEvent);
        } catch {
          // not an event
        }
      }
    });
  }

  private push(event: SupervisorEvent): void {
    this.events.push(event);
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Resolves on the next event. */
  nextEvent(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Stops the server and removes its directory; resolves when the supervisor has exited. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      if (this.child.exitCode !== null || this.child.signalCode !== null) return;
      this.child.stdin?.end('stop\n');
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(resolve, STOP_TIMEOUT_MS, 'timeout')));
      const outcome = await Promise.race([this.exited, timedOut]);
      clearTimeout(timer);
      if (outcome === 'timeout') {
        const running = this.events.find((e) => e.event === 'running');
        if (running?.event === 'running') {
          try {
            process.kill(running.pid, 'SIGKILL');
          } catch {
            // gone already
          }
        }
        this.child.kill('SIGKILL');
        throw new Error(`the PostgreSQL server did not stop within ${STOP_TIMEOUT_MS / 1000}s; it was killed`);
      }
    })();
    return this.stopping;
  }
}

interface ReadyCheck {
  port: number;
  password: string;
  timeoutMs: number;
  logFile: string;
  bins: Binaries;
}

async function waitUntilReady(supervisor: Supervisor, { port, password, timeoutMs, logFile, bins }: ReadyCheck): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = 'no attempt yet';
  for (;;) {
    const failed = supervisor.events.find((e) => e.event === 'initdb-failed' || e.event === 'exited' || e.event === 'supervisor-gone');
    if (failed?.event === 'initdb-failed') {
      throw new InfraError(
        `initdb of PostgreSQL ${bins.version} (${bins.bindir}) failed with ${failed.code}: ${lastLine(failed.output)}`,
      );
    }
    if (failed) {
      const log = readLog(logFile);
      if (/could not bind|address already in use/i.test(log)) throw new PortTakenError(`port ${port} is taken`);
      throw new InfraError(
        `PostgreSQL ${bins.version} (${bins.bindir}) stopped before accepting connections: ${lastLine(log) || 'no server log'}`,
      );
    }
    if (supervisor.events.some((e) => e.event === 'running')) {
      const client = new pg.Client({ host: '127.0.0.1', port, user: SUPERUSER, password, database: 'postgres', connectionTimeoutMillis: 5_000 });
      client.on('error', () => {});
      try {
        await client.connect();
        await client.query('select 1');
        await client.end();
        return;
      } catch (error) {
        lastError = error instanceof Error ? error.message : String(error);
        await client.end().catch(() => {});
      }
    }
    if (Date.now() > deadline) {
      throw new InfraError(
        `PostgreSQL ${bins.version} did not accept connections on 127.0.0.1:${port} within ${timeoutMs / 1000}s ` +
          `(last error: ${lastError}); server log: ${lastLine(readLog(logFile)) || 'empty'}`,
      );
    }
    await Promise.race([supervisor.nextEvent(), new Promise((resolve) => setTimeout(resolve, 100))]);
  }
}

function readLog(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** The most telling line of some output: the last FATAL/ERROR/PANIC line, else the last line. */
function lastLine(output: string): string {
  const lines = output
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const serious = lines.filter((line) => /\b(FATAL|PANIC|ERROR|error)\b/.test(line));
  return (serious.at(-1) ?? lines.at(-1) ?? '').slice(0, 500);
}
