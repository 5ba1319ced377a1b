// PgBouncer for tests: Debian's `pgbouncer` (installed by scripts/prepare-machine.sh) in front of
// a test server, on a free port of 127.0.0.1, routing every database name to that server
// (`* = host=… port=…`, so that the databases a gate run creates are reachable through it).
//
// PgBouncer refuses to run as root; as root it switches to the OS user `postgres` (or
// PG_RETEST_TEST_OS_USER) on start (`-u`), like the test servers. It is started by a small shell that waits on
// a pipe from this process and stops PgBouncer when the pipe closes, so that a test process that
// dies in any way leaves no PgBouncer behind.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { isRoot, lookupOsUser } from '../../src/provision/pg-binaries.mjs';

export interface PgBouncer {
  /** `postgres://postgres@127.0.0.1:<port>/<database>` through the pooler. */
  url(database?: string): string;
  port: number;
  logFile: string;
  stop(): Promise<void>;
}

/** Where the binary is, or undefined when the machine has none. */
export function pgbouncerBinary(): string | undefined {
  for (const candidate of ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer']) if (fs.existsSync(candidate)) return candidate;
  const which = spawnSync('sh', ['-c', 'command -v pgbouncer'], { encoding: 'utf8' });
  return which.status === 0 && which.stdout.trim() !== '' ? which.stdout.trim() : undefined;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Another process may take the port between the probe and PgBouncer's bind. */
const PORT_ATTEMPTS = 5;

class PortTaken extends Error {}

/**
 * Starts PgBouncer in front of a server that trusts connections from 127.0.0.1.
 * @param server the server's port and user
 * @param poolMode `transaction` (the mode that breaks session state), `session` or `statement`
 * @returns the running pooler
 */
export async function startPgBouncer(
  server: { port: number; user: string },
  poolMode: 'session' | 'transaction' | 'statement',
): Promise<PgBouncer> {
  const binary = pgbouncerBinary();
  if (!binary) throw new Error('pgbouncer is not installed: run scripts/prepare-machine.sh (apt-get install pgbouncer)');
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOn(await freePort(), binary, server, poolMode);
    } catch (error) {
      if (!(error instanceof PortTaken) || attempt === PORT_ATTEMPTS) throw error;
    }
  }
}

async function startOn(
  port: number,
  binary: string,
  server: { port: number; user: string },
  poolMode: 'session' | 'transaction' | 'statement',
): Promise<PgBouncer> {
  const dir = fs.mkdtempSync(path.join(isRoot() ? '/tmp' : os.tmpdir(), 'pg-retest-pgbouncer-'));
  const logFile = path.join(dir, 'pgbouncer.log');
  const config = path.join(dir, 'pgbouncer.ini');
  fs.writeFileSync(path.join(dir, 'users.txt'), `"${server.user}" ""\n`);
  fs.writeFileSync(
    config,
    [
      '[databases]',
      `* = host=127.0.0.1 port=${server.port}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'users.txt')}`,
      `pool_mode = ${poolMode}`,
      'max_client_conn = 200',
      'default_pool_size = 40',
      `logfile = ${logFile}`,
      '',
    ].join('\n'),
  );
  let command = [binary, config];
  if (isRoot()) {
    const name = process.env.PG_RETEST_TEST_OS_USER || 'postgres';
    const user = lookupOsUser(name);
    if (!user) throw new Error(`running as root, which PgBouncer refuses, and there is no OS user '${name}'`);
    for (const file of fs.readdirSync(dir)) fs.chownSync(path.join(dir, file), user.uid, user.gid);
    fs.chownSync(dir, user.uid, user.gid);
    command = [binary, '-u', name, config];
  }
  // The shell stops PgBouncer when its stdin (a pipe from this process) closes.
  const child = spawn('sh', ['-c', '"$@" & pid=$!; read -r _; kill "$pid"; wait "$pid"', 'sh', ...command], {
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = (database = 'postgres') => `postgres://${server.user}@127.0.0.1:${port}/${database}`;
  const stop = async () => {
    child.stdin.end();
    await exited;
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const log = () => (fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8') : '');
  const deadline = Date.now() + 20_000;
  for (;;) {
    // Ready only once PgBouncer says it listens on the port: whatever else took the port in the
    // meantime (another test's PostgreSQL) would answer the query below just as well.
    const said = log();
    if (said.includes('nowhere to listen on')) {
      await stop();
      throw new PortTaken(`port ${port} was taken before PgBouncer could bind it`);
    }
    let failure = 'PgBouncer has not said it listens yet';
    if (said.includes(`listening on 127.0.0.1:${port}`)) {
      const client = new pg.Client({ connectionString: url(), connectionTimeoutMillis: 2_000 });
      client.on('error', () => {});
      try {
        await client.connect();
        await client.query('SELECT 1');
        await client.end();
        break;
      } catch (error) {
        await client.end().catch(() => {});
        failure = (error as Error).message;
      }
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      const tail = log().slice(-2000);
      await stop();
      throw new Error(`pgbouncer did not accept connections on port ${port}: ${failure}\n${tail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { url, port, logFile, stop };
}
