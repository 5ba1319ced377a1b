// What the scripts that capture the example workloads share: a throwaway PostgreSQL server that
// logs every statement with its duration to csvlog, as a production server set up for `capture`
// would, an example's database built on it, and the capture of its log into a workload whose
// sidecar can be committed.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startPostgres } from '../../test/support/postgres.mjs';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const cli = path.join(root, 'dist', 'cli.js');

/**
 * Starts a server logging every statement (log_min_duration_statement = 0), failed ones with
 * their parameters, to csvlog, in UTC and in English: what `capture` asks of a production server.
 * @param {string} name the log files' prefix
 * @returns {Promise<import('../../test/support/postgres.d.mts').TestServer>}
 */
export async function startLoggingServer(name) {
  if (!fs.existsSync(cli)) throw new Error('dist/cli.js is missing: run npm run build first');
  return startPostgres({
    settings: {
      logging_collector: 'on',
      log_destination: 'csvlog',
      log_filename: `${name}-%H%M%S.log`,
      log_rotation_age: '0',
      log_rotation_size: '0',
      log_timezone: 'UTC',
      lc_messages: 'C',
      log_file_mode: '0644',
      log_min_duration_statement: '0',
      // A failed extended-protocol statement is logged with its parameters only so; without
      // them capture leaves it out (missing_parameters).
      log_parameter_max_length_on_error: '-1',
    },
  });
}

/**
 * Captures the server's csvlog into `out` (and its sidecar `out.capture.json`) with the CLI's
 * `capture`, printing its summary.
 * @param {{ dataDir: string }} server a server from startLoggingServer
 * @param {string} out the workload file
 * @param {string[]} filters capture's filter options (`--database`, `--application-name`, …)
 */
export function captureServerLog(server, out, filters) {
  const logDir = path.join(server.dataDir, 'log');
  const logs = fs
    .readdirSync(logDir)
    .filter((f) => f.endsWith('.csv'))
    .sort()
    .map((f) => path.join(logDir, f));
  const capture = spawnSync(process.execPath, [cli, 'capture', ...logs.flatMap((l) => ['--log', l]), ...filters, '--output', out], {
    cwd: root,
    encoding: 'utf8',
  });
  process.stdout.write(capture.stdout);
  process.stderr.write(capture.stderr);
  if (capture.status !== 0) throw new Error(`capture exited ${capture.status}`);
  // The sidecar names the files it read and wrote; in the repository, the temporary server's
  // log directory and this machine's paths mean nothing.
  const sidecarPath = `${out}.capture.json`;
  const sidecar = JSON.parse(fs.readFileSync(sidecarPath, 'utf8'));
  sidecar.workload = path.relative(root, sidecar.workload);
  sidecar.sidecar = path.relative(root, sidecar.sidecar);
  for (const input of sidecar.inputs) input.path = path.basename(input.path);
  fs.writeFileSync(sidecarPath, `${JSON.stringify(sidecar, null, 2)}\n`);
}

/**
 * Creates database `name` and builds an example's schema in it: its `migrations/*.sql` in
 * file-name order, its `seed.sql`, then ANALYZE (as the gate prepares a database). These
 * statements run without an application name, which the captures leave out.
 * @param {{ url: string }} server the server
 * @param {string} name the database
 * @param {string} example the example's directory (examples/<name>)
 * @returns {Promise<string>} the database's URL
 */
export async function buildExampleDatabase(server, name, example) {
  const admin = new pg.Client(server.url);
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = server.url.replace(/\/postgres$/, `/${name}`);
  const setup = new pg.Client(url);
  await setup.connect();
  try {
    const migrations = path.join(example, 'migrations');
    for (const file of fs.readdirSync(migrations).sort()) await setup.query(fs.readFileSync(path.join(migrations, file), 'utf8'));
    await setup.query(fs.readFileSync(path.join(example, 'seed.sql'), 'utf8'));
    await setup.query('ANALYZE');
  } finally {
    await setup.end();
  }
  return url;
}
