// Measures how the gate's replays of the sample shop vary when nothing changes, so that the
// comparison's rules can be checked against real runner noise instead of guesses.
//
//   node scripts/noise-study.mjs [--replays N] [--variant NAME ...] [--out DIR] [--speed S]
//
// Starts one throwaway server (the test harness's: the machine's PostgreSQL), builds the base
// template (examples/shop migrations + seed, VACUUM ANALYZE) and one head template per variant
// (a copy of base plus the variant's migration), then replays the workload N times on base and
// N times on each variant, each replay on a fresh `CREATE DATABASE … TEMPLATE` copy, in
// interleaved order. Every replay report (with per-fingerprint latency samples) is written to
// DIR as <side>-<i>.json; `node scripts/noise-rules.mjs DIR` then replays the gate's decision
// over many synthetic runs drawn from them. Needs `npm run build` first.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startPostgres } from '../test/support/postgres.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const shop = (...p) => path.join(root, 'examples', 'shop', ...p);

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const replays = Number(opt('--replays', '12'));
const speed = opt('--speed', '1');
const out = path.resolve(opt('--out', path.join(root, 'target', 'noise-study')));
const variants = args.flatMap((a, i) => (a === '--variant' ? [args[i + 1]] : []));
fs.mkdirSync(out, { recursive: true });

const server = await startPostgres();
const admin = new pg.Client(server.url);
await admin.connect();
const dbUrl = (name) => server.url.replace(/\/postgres(\?|$)/, `/${name}$1`);

async function runSqlFile(db, file) {
  const client = new pg.Client(dbUrl(db));
  await client.connect();
  try {
    await client.query(fs.readFileSync(file, 'utf8'));
  } finally {
    await client.end();
  }
}

try {
  console.log(`PostgreSQL ${server.version} at 127.0.0.1:${server.port}`);
  await admin.query('CREATE DATABASE study_base');
  for (const m of fs.readdirSync(shop('migrations')).sort()) await runSqlFile('study_base', shop('migrations', m));
  await runSqlFile('study_base', shop('seed.sql'));
  {
    const c = new pg.Client(dbUrl('study_base'));
    await c.connect();
    await c.query('VACUUM ANALYZE');
    await c.end();
  }
  for (const v of variants) {
    await admin.query(`CREATE DATABASE "study_${v}" TEMPLATE study_base`);
    const dir = shop('variants', v);
    for (const m of fs.readdirSync(dir).filter((f) => f.endsWith('.sql'))) await runSqlFile(`study_${v}`, path.join(dir, m));
    const c = new pg.Client(dbUrl(`study_${v}`));
    await c.connect();
    await c.query('VACUUM ANALYZE');
    await c.end();
  }
  const sides = ['base', ...variants];
  for (let i = 0; i < replays; i++) {
    const order = i % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) {
      const name = `study_r_${side}_${i}`;
      await admin.query(`CREATE DATABASE "${name}" TEMPLATE "study_${side}"`);
      await admin.query('CHECKPOINT');
      const file = path.join(out, `${side}-${i}.json`);
      const run = spawnSync(
        process.execPath,
        [path.join(root, 'dist', 'cli.js'), 'replay', '--workload', shop('workload.wkl'), '--database-url', dbUrl(name), '--speed', speed, '--json', file],
        { encoding: 'utf8', env: { ...process.env, CI: 'true' } },
      );
      await admin.query(`DROP DATABASE "${name}"`);
      if (run.status !== 0) throw new Error(`replay ${side} ${i} failed (${run.status}): ${run.stderr}`);
      const report = JSON.parse(fs.readFileSync(file, 'utf8'));
      console.log(`${side} #${i}: p95 ${(report.latency.p95_us / 1000).toFixed(2)} ms`);
    }
  }
} finally {
  await admin.end();
  await server.stop();
}
