// The A/A noise of the gate with head on a server of its own: figures, not a pass/fail test.
//
//   npm run build && node scripts/noise-servers.mjs [--runs N] [--workload shop|checkout] [--major M]
//
// Runs the real gate (dist/cli.js) on the sample shop with identical schemas, alternating two
// setups, N runs each (default 8):
//   one  base and head on one server the gate starts (the default gate)
//   two  base and head on two identical servers the gate starts (--head-postgres-version M,
//        same major and settings): what `head-postgres-version`/`head-postgres-config` runs cost
//        in noise, with the idle server checkpointed before each replay and autovacuum off
// and prints, per setup, the median and the worst over the runs of: the noise floor (base
// against the noise replay, which both setups run on base's server), head against base for the
// whole workload (|p95 ratio − 1|) and for a typical fingerprint (median over fingerprints of
// |p95 ratio − 1| and of |p50 ratio − 1|), and how many runs failed (false alarms). Results go
// to stdout and target/bench/noise-servers.json; docs/gate.md ("Gating server changes") quotes them.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { localMajors } from '../test/support/postgres.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: { runs: { type: 'string', default: '8' }, workload: { type: 'string', default: 'shop' }, major: { type: 'string' } },
});
const runs = Number(values.runs);
const workload = values.workload;
const major = Number(values.major ?? String(localMajors()[0] ?? 18));
const shop = (...p) => path.join(root, 'examples', 'shop', ...p);
const cli = path.join(root, 'dist', 'cli.js');
if (!Number.isInteger(runs) || runs < 1) fail('--runs needs a whole number ≥ 1');
if (!['shop', 'checkout'].includes(workload)) fail('--workload is shop or checkout');
if (!fs.existsSync(cli)) fail('dist/cli.js is missing: run npm run build first');

function fail(message) {
  console.error(`noise-servers: ${message}`);
  process.exit(2);
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-noise-servers-'));
const SETUPS = {
  one: ['--postgres-version', String(major)],
  two: ['--postgres-version', String(major), '--head-postgres-version', String(major)],
};

/** One A/A gate run of a setup; its report. */
function gate(setup, n) {
  const json = path.join(tmp, `${setup}-${n}.json`);
  const migrations = shop('migrations', '*.sql');
  const file = shop(workload === 'shop' ? 'workload.wkl' : 'checkout.wkl');
  const env = { ...process.env, CI: 'true' };
  for (const name of ['GITHUB_EVENT_NAME', 'GITHUB_EVENT_PATH', 'GITHUB_ACTIONS', 'GITLAB_CI', 'JENKINS_URL']) delete env[name];
  const started = Date.now();
  const r = spawnSync(
    process.execPath,
    [
      cli,
      'gate',
      '--workload',
      file,
      '--seed',
      shop('seed.sql'),
      '--base-migrations',
      migrations,
      '--migrations',
      migrations,
      '--json',
      json,
      ...SETUPS[setup],
    ],
    { encoding: 'utf8', env, maxBuffer: 64 * 1024 * 1024 },
  );
  if (!fs.existsSync(json)) fail(`gate (${setup}) wrote no report, exit ${r.status}:\n${r.stderr.slice(-2000)}`);
  const report = JSON.parse(fs.readFileSync(json, 'utf8'));
  if (report.verdict === 'error') fail(`gate (${setup}) failed: ${report.headline}`);
  return { report, wallS: (Date.now() - started) / 1000 };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length === 0 ? NaN : s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const worst = (xs) => Math.max(...xs);
const pct = (x) => `${(x * 100).toFixed(1)} %`;

/** What one run says about noise. */
function figures(report) {
  const c = report.comparison;
  const gated = c.fingerprints.filter((f) => f.checks.enough_calls);
  return {
    verdict: report.verdict,
    noiseFloor: c.noise_floor.value,
    overall: Math.abs(c.overall.ratio - 1),
    fingerprintP95: median(gated.map((f) => Math.abs(f.ratio - 1))),
    fingerprintP50: median(gated.map((f) => Math.abs(Math.max(f.head.p50_us, 1) / Math.max(f.base.p50_us, 1) - 1))),
  };
}

const results = { one: [], two: [] };
for (let n = 1; n <= runs; n++) {
  // Alternating, so that a change in the machine's load over the bench hits both setups alike.
  for (const setup of n % 2 ? ['one', 'two'] : ['two', 'one']) {
    const { report, wallS } = gate(setup, n);
    const f = { ...figures(report), wallS };
    results[setup].push(f);
    console.error(
      `run ${n}/${runs} ${setup}: ${f.verdict}, noise floor ${pct(f.noiseFloor)}, head vs base: workload p95 ${pct(f.overall)}, ` +
        `typical fingerprint p95 ${pct(f.fingerprintP95)}, p50 ${pct(f.fingerprintP50)} (${wallS.toFixed(0)} s)`,
    );
  }
}

const rows = Object.entries(results).map(([setup, rs]) => ({
  setup,
  runs: rs.length,
  failed: rs.filter((r) => r.verdict !== 'pass').length,
  noiseFloor: { median: median(rs.map((r) => r.noiseFloor)), worst: worst(rs.map((r) => r.noiseFloor)) },
  overall: { median: median(rs.map((r) => r.overall)), worst: worst(rs.map((r) => r.overall)) },
  fingerprintP95: { median: median(rs.map((r) => r.fingerprintP95)), worst: worst(rs.map((r) => r.fingerprintP95)) },
  fingerprintP50: { median: median(rs.map((r) => r.fingerprintP50)), worst: worst(rs.map((r) => r.fingerprintP50)) },
  wallS: median(rs.map((r) => r.wallS)),
}));
const cell = (x) => `${pct(x.median)} (${pct(x.worst)})`;
console.log(
  `A/A on ${workload} (PostgreSQL ${major}, ${runs} runs per setup, ${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(1)}): median (worst)`,
);
console.log(
  '| servers | failed runs | noise floor | head vs base, workload p95 | typical fingerprint, p95 | typical fingerprint, p50 | wall time |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  console.log(
    `| ${r.setup} | ${r.failed} / ${r.runs} | ${cell(r.noiseFloor)} | ${cell(r.overall)} | ${cell(r.fingerprintP95)} | ${cell(r.fingerprintP50)} | ${r.wallS.toFixed(0)} s |`,
  );
}
const out = path.join(root, 'target', 'bench', 'noise-servers.json');
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, `${JSON.stringify({ workload, major, runs, at: new Date().toISOString(), rows, results }, null, 2)}\n`);
fs.rmSync(tmp, { recursive: true, force: true });
