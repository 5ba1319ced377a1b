// A throwaway PostgreSQL server: a fresh directory, `initdb`, a server on a free port of
// 127.0.0.1 (TCP only), and a supervisor process (pg-supervisor.mjs) that stops the server and
// removes the directory when asked, or when the process that started it ends in any way.
//
// Shared by the CLI (cluster.ts; bundled into dist/cli.js, with the supervisor as
// dist/pg-supervisor.js) and the test harness (test/support/postgres.mjs, which runs on a bare
// Node 20 without a TypeScript loader), hence plain JavaScript; types in pg-server.d.mts.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { serverEnvironment } from './pg-binaries.mjs';

const DEFAULT_START_TIMEOUT_MS = 60_000;
/** Longer than the supervisor's fast and immediate shutdowns together. */
const STOP_TIMEOUT_MS = 45_000;
/** Another process may take the port between our probe and the server's bind. */
const PORT_ATTEMPTS = 5;
const SUPERUSER = 'postgres';
/** The longest socket path PostgreSQL accepts (sun_path is 108 bytes with its NUL). */
const MAX_SOCKET_PATH = 107;

/**
 * Settings applied before the caller's. A throwaway server needs no durability; skipping fsync
 * keeps setup and seeding fast on slow disks.
 */
const THROWAWAY_SETTINGS = {
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
};

class PortTakenError extends Error {}

/**
 * Starts a throwaway server. See pg-server.d.mts for the options.
 * @param {import('./pg-server.d.mts').ServerOptions} options
 * @returns {Promise<import('./pg-server.d.mts').ThrowawayServer>}
 */
export async function startThrowawayServer(options) {
  const makeError = options.makeError ?? ((message) => new Error(message));
  const settings = { ...THROWAWAY_SETTINGS, ...(options.settings ?? {}) };
  for (const key of Object.keys(settings)) {
    if (!/^[A-Za-z_][A-Za-z0-9_.]*$/.test(key)) throw makeError(`invalid server setting name '${key}'`);
  }
  let lastError;
  for (let attempt = 0; attempt < PORT_ATTEMPTS; attempt++) {
    const port = attempt === 0 && options.firstPort !== undefined ? options.firstPort : await freePort();
    try {
      return await startOnce({ ...options, makeError, settings, port });
    } catch (error) {
      lastError = error;
      if (!(error instanceof PortTakenError)) throw error;
      options.debug?.(`port ${port} was taken before the server could bind it; trying another`);
    }
  }
  throw makeError(`could not find a free port for PostgreSQL after ${PORT_ATTEMPTS} attempts (${String(lastError)})`);
}

async function startOnce({ bins, user, password, port, settings, makeError, debug, dirPrefix, fullLogs, ownProcessGroup, startTimeoutMs }) {
  const root = fs.mkdtempSync(path.join(reachableTempDir(user), dirPrefix));
  const dataDir = path.join(root, 'data');
  const logFile = path.join(root, 'postgres.log');
  let pwfile;
  if (password !== undefined) {
    pwfile = path.join(root, 'pwfile');
    fs.writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  }
  if (user) {
    fs.chownSync(root, user.uid, user.gid);
    if (pwfile) fs.chownSync(pwfile, user.uid, user.gid);
  }
  fs.chmodSync(root, 0o700);

  const socketDir = socketDirFor(root, port);
  const serverSettings = {
    ...settings,
    port: String(port),
    listen_addresses: '127.0.0.1',
    // Also a socket in the server's own directory (mode 0700: only its owner, and root, get in),
    // which the replay uses: a round trip over it costs the client about a quarter less CPU than
    // over TCP on loopback, and the server 6 % less (docs/benchmark.md). None when the path would
    // be too long.
    unix_socket_directories: socketDir ?? '',
  };
  const postgresArgs = ['-D', dataDir];
  for (const [key, value] of Object.entries(serverSettings)) postgresArgs.push('-c', `${key}=${value}`);
  const env = serverEnvironment(process.env);

  debug?.(`initdb ${dataDir} (PostgreSQL ${bins.version}, ${bins.bindir}${user ? `, as OS user ${user.name}` : ''})`);
  const supervisor = new Supervisor(
    {
      initdb: bins.initdb,
      initdbArgs: [
        `--pgdata=${dataDir}`,
        `--username=${SUPERUSER}`,
        // Without a password, connections from 127.0.0.1 are trusted (tests only).
        `--auth=${pwfile ? 'scram-sha-256' : 'trust'}`,
        ...(pwfile ? [`--pwfile=${pwfile}`] : []),
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
    },
    { ownProcessGroup: ownProcessGroup ?? false, makeError },
  );
  const credentials = password === undefined ? SUPERUSER : `${SUPERUSER}:${encodeURIComponent(password)}`;
  const url = `postgres://${credentials}@127.0.0.1:${port}/postgres`;
  try {
    await waitUntilReady(supervisor, {
      port,
      dataDir,
      password,
      timeoutMs: startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS,
      logFile,
      bins,
      makeError,
      describeLog: fullLogs ? (text) => (text.trim() ? `\n${tail(text)}` : '') : (text) => lastLine(text),
    });
  } catch (error) {
    await supervisor.stop().catch(() => {});
    throw error;
  } finally {
    if (pwfile) fs.rmSync(pwfile, { force: true });
  }
  debug?.(`PostgreSQL ${bins.version} accepts connections on 127.0.0.1:${port}`);
  return {
    url,
    port,
    socketDir,
    user: SUPERUSER,
    dataDir,
    logFile,
    stop: () => supervisor.stop(),
    kill: (signal = 'SIGKILL') => supervisor.killServer(signal),
    unref: () => supervisor.unref(),
  };
}

/**
 * The directory for the server's Unix-domain socket: its own, when the socket's path fits the
 * limit and needs no quoting in `unix_socket_directories` (a list split at commas).
 * @param {string} root
 * @param {number} port
 * @returns {string | undefined}
 */
function socketDirFor(root, port) {
  const socket = path.join(root, `.s.PGSQL.${port}`);
  if (Buffer.byteLength(socket) > MAX_SOCKET_PATH || !/^[A-Za-z0-9_./-]+$/.test(root)) return undefined;
  return root;
}

/**
 * A temp directory the server's OS user can reach (every parent searchable).
 * @param {{ uid: number } | undefined} user
 */
function reachableTempDir(user) {
  const base = path.resolve(os.tmpdir());
  if (!user) return base;
  for (let dir = base; ; dir = path.dirname(dir)) {
    if ((fs.statSync(dir).mode & 0o001) === 0) return '/tmp';
    if (dir === path.dirname(dir)) return base;
  }
}

/** @returns {Promise<number>} */
function freePort() {
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

/** The script next to this module: pg-supervisor.js when bundled into dist/, the .mjs source otherwise. */
function supervisorScript(makeError) {
  for (const name of ['pg-supervisor.js', 'pg-supervisor.mjs']) {
    const candidate = fileURLToPath(new URL(`./${name}`, import.meta.url));
    if (fs.existsSync(candidate)) return candidate;
  }
  throw makeError(`cannot find pg-supervisor.js next to ${fileURLToPath(import.meta.url)}; the build is incomplete, run npm run build`);
}

/** Our side of pg-supervisor.mjs: events in from its stdout; the config, then "stop", out on its stdin. */
class Supervisor {
  constructor(config, { ownProcessGroup, makeError }) {
    this.events = [];
    this.waiters = [];
    this.stopping = undefined;
    // ownProcessGroup: a Ctrl-C in the terminal then reaches only us, and the CLI stops the
    // replay before the server, instead of the server dying under a running replay.
    // The config (an environment among it) goes over the pipe: a command line is readable by
    // every local user in /proc/<pid>/cmdline.
    this.child = spawn(process.execPath, [supervisorScript(makeError)], {
      stdio: ['pipe', 'pipe', 'inherit'],
      detached: ownProcessGroup,
    });
    this.child.stdin.write(`${JSON.stringify(config)}\n`);
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
    this.child.once('exit', () => this.push({ event: 'supervisor-gone' }));
    this.child.once('error', () => this.push({ event: 'supervisor-gone' }));
    this.child.stdin.on('error', () => {});
    let pending = '';
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (chunk) => {
      const lines = (pending + chunk).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        try {
          this.push(JSON.parse(line));
        } catch {
          // not an event
        }
      }
    });
  }

  push(event) {
    if (event.event === 'running') this.pid = event.pid;
    this.events.push(event);
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Resolves on the next event. */
  nextEvent() {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Lets this process exit while the server runs (the supervisor then stops it). */
  unref() {
    this.child.unref();
    this.child.stdin.unref?.();
    this.child.stdout.unref?.();
  }

  /** Sends a signal to the postmaster. */
  killServer(signal) {
    if (this.pid === undefined) return;
    try {
      process.kill(this.pid, signal);
    } catch (error) {
      if (error.code !== 'ESRCH') throw error;
    }
  }

  /** Stops the server and removes its directory; resolves when the supervisor has exited. */
  stop() {
    this.stopping ??= (async () => {
      if (this.child.exitCode !== null || this.child.signalCode !== null) return;
      // Keep the event loop alive until the supervisor is done.
      this.child.ref();
      this.child.stdin.ref?.();
      this.child.stdout.ref?.();
      this.child.stdin.end('stop\n');
      let timer;
      const timedOut = new Promise((resolve) => (timer = setTimeout(resolve, STOP_TIMEOUT_MS, 'timeout')));
      const outcome = await Promise.race([this.exited, timedOut]);
      clearTimeout(timer);
      if (outcome === 'timeout') {
        this.killServer('SIGKILL');
        this.child.kill('SIGKILL');
        throw new Error(`the PostgreSQL server did not stop within ${STOP_TIMEOUT_MS / 1000}s; it was killed`);
      }
    })();
    return this.stopping;
  }
}

/** Whether two paths name the same directory (either may be a symlink or not exist). */
function sameDirectory(a, b) {
  if (path.resolve(a) === path.resolve(b)) return true;
  try {
    return fs.realpathSync(a) === fs.realpathSync(b);
  } catch {
    return false;
  }
}

async function waitUntilReady(supervisor, { port, dataDir, password, timeoutMs, logFile, bins, makeError, describeLog }) {
  const deadline = Date.now() + timeoutMs;
  let lastError = 'no attempt yet';
  for (;;) {
    const failed = supervisor.events.find((e) => e.event === 'initdb-failed' || e.event === 'exited' || e.event === 'supervisor-gone');
    if (failed?.event === 'initdb-failed') {
      throw makeError(`initdb of PostgreSQL ${bins.version} (${bins.bindir}) failed with ${failed.code}: ${describeLog(failed.output)}`);
    }
    if (failed) {
      const log = readLog(logFile);
      if (/could not bind|address already in use/i.test(log)) throw new PortTakenError(`port ${port} is taken`);
      const how = failed.event === 'exited' ? ` (code ${failed.code}, signal ${failed.signal})` : '';
      throw makeError(
        `PostgreSQL ${bins.version} (${bins.bindir}) stopped${how} before accepting connections: ${describeLog(log) || 'no server log'}`,
      );
    }
    if (supervisor.pid !== undefined) {
      const client = new pg.Client({
        host: '127.0.0.1',
        port,
        user: SUPERUSER,
        password,
        database: 'postgres',
        connectionTimeoutMillis: 5_000,
      });
      client.on('error', () => {});
      let answeredBy;
      try {
        await client.connect();
        answeredBy = (await client.query('show data_directory')).rows[0]?.data_directory;
        await client.end();
      } catch (error) {
        lastError = error instanceof Error ? error.message : String(error);
        await client.end().catch(() => {});
      }
      // Another server that took the port first would answer just as well (a test suite starts
      // servers side by side); ours is the one serving our data directory. Before ours has
      // given up on binding, nothing else would tell the two apart.
      if (answeredBy !== undefined) {
        if (sameDirectory(answeredBy, dataDir)) return;
        throw new PortTakenError(`port ${port} is answered by another server (data directory ${answeredBy})`);
      }
    }
    if (Date.now() > deadline) {
      throw makeError(
        `PostgreSQL ${bins.version} did not accept connections on 127.0.0.1:${port} within ${timeoutMs / 1000}s ` +
          `(last error: ${lastError}); server log: ${describeLog(readLog(logFile)) || 'empty'}`,
      );
    }
    await Promise.race([supervisor.nextEvent(), new Promise((resolve) => setTimeout(resolve, 100))]);
  }
}

function readLog(file) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** The most telling line of some output: the last FATAL/ERROR/PANIC line, else the last line. */
function lastLine(output) {
  const lines = output
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const serious = lines.filter((line) => /\b(FATAL|PANIC|ERROR|error)\b/.test(line));
  return (serious.at(-1) ?? lines.at(-1) ?? '').slice(0, 500);
}

/** The last lines of some output. */
function tail(output, lines = 30) {
  return output.trimEnd().split('\n').slice(-lines).join('\n');
}
