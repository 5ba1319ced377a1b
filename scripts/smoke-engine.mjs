// The engine's smoke replay: loads one engine file, writes a small workload with it, reads it
// back, and replays it against a real PostgreSQL server, then checks what must hold on any
// platform: every statement accounted for, the two statements that must fail failed with their
// SQLSTATEs, the rows came back, the SQL parser (libpg_query, C) fingerprinted every statement.
// Runs on any Node ≥ 20 with no dependencies, so that it can check an engine on the machine it
// is for: the release workflow's runners, and this repository's tests under emulation (arm64
// through qemu) or in a musl process (test/engine-platforms.test.ts).
//
//   node scripts/smoke-engine.mjs --engine FILE --url postgres://… [--hash HEX]
//
// --url: a database the replay may use (it only creates a temporary table). --hash: the native
// source hash the engine must carry (scripts/package-hash.mjs prints the sources'). Prints one
// JSON line (platform, source hash, server, counts); exit 0 when everything holds, 1 otherwise.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

const argv = process.argv.slice(2);
const option = (name) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const engineFile = option('--engine');
const url = option('--url');
const expectedHash = option('--hash');

function fail(message) {
  console.error(`smoke-engine: ${message}`);
  process.exit(1);
}

if (!engineFile || !url) {
  console.error('usage: node scripts/smoke-engine.mjs --engine FILE --url postgres://… [--hash HEX]');
  process.exit(2);
}

/** Two sessions; each statement's expected outcome is asserted below. */
const SESSIONS = [
  [
    'CREATE TEMP TABLE smoke_items (id serial PRIMARY KEY, name text NOT NULL)',
    "INSERT INTO smoke_items (name) VALUES ('a'), ('b'), ('c')",
    "SELECT id, name FROM smoke_items WHERE name <> 'b' ORDER BY id",
    'SELECT 1 / 0',
  ],
  ['SELECT g FROM generate_series(1, 100) AS g', 'SELECT no_such_column FROM pg_class'],
];
const EXPECTED_ERRORS = ['22012', '42703'];

/** The profile in pg-retest's JSON shape (docs/wkl.md). */
function profile() {
  return {
    version: 2,
    captured_at: '2026-01-01T00:00:00Z',
    source_host: 'smoke',
    pg_version: '16',
    capture_method: 'synthetic',
    sessions: SESSIONS.map((queries, i) => ({
      id: i + 1,
      user: 'smoke',
      database: 'smoke',
      queries: queries.map((sql, n) => ({ sql, start_offset_us: n * 1000, duration_us: 100, kind: 'Other', transaction_id: null })),
    })),
    metadata: { total_queries: SESSIONS.flat().length, total_sessions: SESSIONS.length, capture_duration_us: 3000 },
  };
}

let engine;
try {
  engine = createRequire(import.meta.url)(path.resolve(engineFile));
} catch (err) {
  fail(`cannot load ${engineFile} on ${process.platform}-${process.arch}: ${err instanceof Error ? err.message.split('\n')[0] : err}`);
}
const sourceHash = engine.nativeSourceHash();
if (expectedHash && sourceHash !== expectedHash) fail(`${engineFile} was built from sources ${sourceHash}, not ${expectedHash}`);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-smoke-'));
try {
  const file = path.join(tmp, 'smoke.wkl');
  await engine.writeWorkload(file, profile());
  const workload = await engine.loadWorkload(file);
  if (workload.statements !== SESSIONS.flat().length || workload.sessions !== SESSIONS.length) {
    fail(`the workload read back has ${workload.sessions} sessions and ${workload.statements} statements`);
  }
  const report = await engine.startReplay(workload, { conninfo: url, speed: 0, applicationName: 'pg-retest-smoke' }).result();
  const problems = [];
  const { totals } = report;
  if (report.status !== 'completed') problems.push(`status ${report.status}: ${report.message}`);
  if (report.sessions_completed !== SESSIONS.length) problems.push(`${report.sessions_completed} of ${SESSIONS.length} sessions completed`);
  if (totals.executed !== SESSIONS.flat().length || totals.ok + totals.errors !== totals.executed) {
    problems.push(`executed ${totals.executed} (ok ${totals.ok}, errors ${totals.errors}) of ${SESSIONS.flat().length}`);
  }
  const sqlstates = report.fingerprints.flatMap((f) => f.errors.map((e) => e.sqlstate)).sort();
  if (JSON.stringify(sqlstates) !== JSON.stringify(EXPECTED_ERRORS))
    problems.push(`errors ${sqlstates.join(', ') || 'none'}, expected ${EXPECTED_ERRORS.join(', ')}`);
  const rows = report.fingerprints.reduce((n, f) => n + f.rows, 0);
  if (rows !== 3 + 2 + 100) problems.push(`${rows} rows, expected 105 (3 inserted, 2 selected, 100 generated)`);
  if (report.fingerprints.length !== SESSIONS.flat().length)
    problems.push(`${report.fingerprints.length} fingerprints, expected one per statement`);
  const kinds = new Set(report.fingerprints.map((f) => f.kind));
  for (const kind of ['select', 'insert'])
    if (!kinds.has(kind)) problems.push(`no ${kind} among the parsed kinds (${[...kinds].join(', ')})`);
  console.log(
    JSON.stringify({
      engine: engineFile,
      platform: `${process.platform}-${process.arch}`,
      glibc: process.report?.getReport()?.header?.glibcVersionRuntime ?? null,
      node: process.version,
      sourceHash,
      server: report.server_version,
      executed: totals.executed,
      errors: sqlstates,
      rows,
    }),
  );
  if (problems.length > 0) fail(problems.join('; '));
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
