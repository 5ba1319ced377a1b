// `npm run calibrate`: the gate's error rates, measured. A bench, not a test: it runs the real
// gate (dist/cli.js) many times per case and prints how often it failed, so that the false-alarm
// rate (identical schemas, harmless changes) and the smallest slowdown it catches can be read off
// this machine.
//
//   npm run build && npm run calibrate -- [--runs N] [--workloads shop,checkout,race]
//       [--cases a-a,drop-index,...] [--conditions quiet,bursts] [--shards N] [--no-write] [--keep DIR]
//
// `--shards N` runs each gate run as a sharded one (docs/scale-out.md): `gate --shard i/N` for
// i = 1…N one after another on this machine, then `aggregate` of their partial reports, whose
// exit status and report are the run's. Its rows say so in the condition ("quiet, 4 shards") and
// sit beside the one-runner rows; their wall time is the slowest shard's (what a matrix of N
// runners would take).
//
// `--keep DIR` keeps every run's JSON report (DIR/<workload>-<condition>-<case>-<n>.json; with
// shards, each shard's partial report beside it as <…>-<n>.shard-<i>.json), so that a false alarm
// or a missed slowdown can be read afterwards: which rule held it back. Each
// row also says which rules failed its failing runs ("fired"), read from those reports.
//
// Workloads: `shop` (examples/shop/workload.wkl: reads and checkouts, currval-style),
// `checkout` (examples/shop/checkout.wkl: captured write traffic, ids from RETURNING) and `race`
// (examples/oltp/oltp.wkl: a load generator's traffic captured from a server's log, four sessions
// that race on random keys, so identical schemas give a few unique violations per replay).
// Cases of shop and checkout, each a PR on top of the shop's schema:
//   a-a            nothing changes: every failure is a false alarm
//   drop-index     the order history loses its index (a sequential scan of 120,000 rows)
//   drop-report-index  (shop) the reports over the last days lose the index on orders.created_at
//                  (a sequential scan of 120,000 rows on 4 rare statements, 3 calls each)
//   trigger-0.5ms  a trigger on the workload's hot write that sleeps 0.5 ms per row
//   trigger-2ms    the same, 2 ms
//   read+20%       the hot read's server time grows by 20 % of its measured median latency: the
//   read+50%       read calls calib_burn(), a function that returns at once on base and spins
//                  on head (the PR), so the statement text and its fingerprint stay the same
//   read+0.2ms     the same function, spinning a fixed 0.2 ms, 0.6 ms and 1 ms per call
//   read+0.6ms
//   read+1ms
//   two-indexes    two more indexes on the hot write's table, on the column its UPDATE sets: the
//                  updates stop being HOT and write every index
//   one-index      one index, on the column the hot UPDATE sets
//   narrower-index the category listing's index (category, price), which serves its ORDER BY
//                  price LIMIT, replaced by one on category alone: a sort of the whole category
//   lost-index-only-scan  (shop) the product page's reviews read from a covering index on base
//                  (index-only scan), from the narrower one the schema has on head (heap fetches)
//   fillfactor     orders, the table read by ranges (a customer's order history; the shop's
//                  reports over dates), rewritten at fillfactor 30: the same rows on 3x the pages
//   add-column     harmless: a nullable column added to orders, which head then analyzes anew
//                  (a fresh sample of 120,000 rows, so plans on it may flip): every failure is a
//                  false alarm
// `shop-4x` is the shop's traffic four times as long (scripts/make-example-workload.mjs --waves
// 4), `shop-4x-condensed` the same condensed to one wave's 3.4 s, as a team condenses a long
// capture for one runner: the pair measures what 4 shards of the long capture (`--workloads
// shop-4x --shards 4`, each shard about one wave) catch that one runner on the condensed capture
// misses, at the same wall time per runner (docs/scale-out.md). Both have the shop's cases.
// Cases of race, each a PR on top of examples/oltp's schema (its variants/):
//   a-a, drop-unused-index   identical schemas; the pad indexes no statement uses dropped:
//                            every failure is a false alarm
//   two-indexes, one-index   indexes on c (and (k, c)), the column an UPDATE sets
//   fillfactor               the tables at fillfactor 30: the range reads read 3x the pages
//   rename-column            sbtest1.c renamed: every run should fail
//   unique-constraint        a UNIQUE index on k, which ~1 % of the inserts and updates violate
// Conditions: `quiet` (the machine as it is) and `bursts` (two busy processes switched on for
// 1–4 s every 2–9 s, as a shared CI runner's neighbours do).
//
// Each run is a full gate with default rounds and confirmation rounds against a throwaway server
// (the test harness's), so a run takes 13–60 s: 20 runs × 11 cases × 2 conditions on shop and
// checkout, and 20 × 4 × 2 on race, is about 8 hours on 2 CPUs. The table goes into
// docs/gate-statistics.md between the calibration markers, with the date, the revision and the
// number of runs.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { prng } from './lib/prng.mjs';
import { urlOverSocket } from '../src/provision/socket-url.mjs';
import { startPostgres } from '../test/support/postgres.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const example = (name, ...p) => path.join(root, 'examples', name, ...p);
const cli = path.join(root, 'dist', 'cli.js');

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const runs = Number(opt('--runs', '20'));
const workloadNames = opt('--workloads', 'shop,checkout,race').split(',');
const chosenCases = opt('--cases', null)?.split(',') ?? null;
const conditions = opt('--conditions', 'quiet,bursts').split(',');
const write = !args.includes('--no-write');
const shards = Number(opt('--shards', '1'));
/** The condition as a row names it: a sharded run's says how many shards. */
const conditionLabel = (condition) => (shards > 1 ? `${condition}, ${shards} shards` : condition);
const keep = opt('--keep', null);
if (args.includes('--keep') && (!keep || keep.startsWith('--'))) {
  console.error("calibrate: --keep needs a directory to keep the runs' JSON reports in (e.g. --keep /tmp/calibrate-runs)");
  process.exit(2);
}
if (keep) fs.mkdirSync(keep, { recursive: true });

/** The cases of the shop's workloads, and of the race workload (examples/oltp/variants). */
const SHOP_CASES = [
  'a-a',
  'drop-index',
  'drop-report-index',
  'trigger-0.5ms',
  'trigger-2ms',
  'read+20%',
  'read+50%',
  'read+0.2ms',
  'read+0.6ms',
  'read+1ms',
  'two-indexes',
  'one-index',
  'narrower-index',
  'lost-index-only-scan',
  'fillfactor',
  'add-column',
];
const RACE_CASES = ['a-a', 'drop-unused-index', 'two-indexes', 'one-index', 'fillfactor', 'rename-column', 'unique-constraint'];

/** The sample shop's generated workload (examples/shop/workload.wkl) and the statements its cases slow down. */
const SHOP = {
  example: 'shop',
  file: example('shop', 'workload.wkl'),
  cases: SHOP_CASES,
  hotWrite: {
    table: 'customers',
    fingerprint: /^UPDATE customers SET last_login/,
    indexes: ['customers (last_login)', 'customers (country, last_login)'],
  },
  hotRead: /^SELECT id, sku, name, category, price, stock FROM products WHERE id = /,
  rangeRead: 'orders',
  // The product page's reviews (`WHERE r.product_id = … ORDER BY r.created_at DESC LIMIT …`), on
  // a table the workload never writes: base reads it from a covering index alone.
  indexOnlyRead: {
    covering: 'reviews (product_id, created_at DESC) INCLUDE (rating, body, customer_id)',
  },
};

/**
 * The workloads: their example (schema, seed, variants), and the statements their cases slow
 * down. `hotWrite.indexes` are two indexes on the columns the hot UPDATE sets.
 */
const WORKLOADS = {
  shop: SHOP,
  checkout: {
    example: 'shop',
    file: example('shop', 'checkout.wkl'),
    cases: SHOP_CASES.filter((c) => c !== 'lost-index-only-scan' && c !== 'drop-report-index'),
    hotWrite: {
      table: 'products',
      fingerprint: /^UPDATE products SET stock = stock - /,
      indexes: ['products (stock)', 'products (category, stock)'],
    },
    hotRead: /^SELECT id, name, price, stock FROM products WHERE id = /,
    rangeRead: 'orders',
    // checkout reads no table it does not write (no lost-index-only-scan case), and runs no report.
    indexOnlyRead: null,
  },
  // The shop's traffic captured four times as long (four waves of it one after another,
  // scripts/make-example-workload.mjs --waves 4), for what sharding gains over condensing
  // (docs/scale-out.md): replayed whole in 4 shards (`--shards 4`), each shard about one wave, or
  // condensed to one wave's 3.4 s for one runner, the same wall time per runner.
  'shop-4x': { ...SHOP, file: null, build: () => shopWaves(4) },
  'shop-4x-condensed': { ...SHOP, file: null, build: () => condensed(shopWaves(4), '3.4s') },
  race: {
    example: 'oltp',
    file: example('oltp', 'oltp.wkl'),
    cases: RACE_CASES,
    // Every case but a-a is the example's variant of that name.
    casesAreVariants: true,
  },
};

/** The cases a run measures on a workload: its own, or those of `--cases` it has. */
const casesOf = (w) => (chosenCases ? w.cases.filter((c) => chosenCases.includes(c)) : w.cases);

function fail(message) {
  console.error(`calibrate: ${message}`);
  process.exit(1);
}

if (!Number.isInteger(runs) || runs < 1) fail('--runs needs a whole number ≥ 1');
if (!Number.isInteger(shards) || shards < 1) fail('--shards needs a whole number ≥ 1');
for (const w of workloadNames) if (!WORKLOADS[w]) fail(`unknown workload ${w} (${Object.keys(WORKLOADS).join(', ')})`);
for (const c of chosenCases ?? []) {
  if (!workloadNames.some((w) => WORKLOADS[w].cases.includes(c)))
    fail(
      `unknown case ${c}: the workloads ${workloadNames.join(', ')} have ${[...new Set(workloadNames.flatMap((w) => WORKLOADS[w].cases))].join(', ')}`,
    );
}
if (!fs.existsSync(cli)) fail('dist/cli.js is missing: run npm run build first');
const library = path.join(root, 'build', 'engine.linux-x64-gnu.node');
if (!fs.existsSync(library)) fail('the engine is not built: run npm run build first');
const engine = createRequire(import.meta.url)(library);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-calibrate-'));

/** A directory of migrations: the example's, then `extra` files in order. */
function migrations(name, exampleName, extra = {}) {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir, { recursive: true });
  for (const f of fs.readdirSync(example(exampleName, 'migrations')))
    fs.copyFileSync(example(exampleName, 'migrations', f), path.join(dir, f));
  for (const [file, sql] of Object.entries(extra)) fs.writeFileSync(path.join(dir, file), sql);
  return path.join(dir, '*.sql');
}

/** The files of one of the example's PR variants (examples/<example>/variants/<name>), as `extra`. */
function variant(exampleName, name) {
  const dir = example(exampleName, 'variants', name);
  return Object.fromEntries(fs.readdirSync(dir).map((f) => [f, fs.readFileSync(path.join(dir, f), 'utf8')]));
}

/** The shop's generated traffic, `waves` times as long (scripts/make-example-workload.mjs). */
function shopWaves(waves) {
  const file = path.join(tmp, `shop-${waves}x.wkl`);
  if (fs.existsSync(file)) return file;
  const r = spawnSync(process.execPath, [path.join(root, 'scripts', 'make-example-workload.mjs'), file, '--waves', String(waves)], {
    encoding: 'utf8',
  });
  if (r.status !== 0) fail(`writing the shop's traffic ${waves}x failed: ${r.stderr.trim()}`);
  return file;
}

/** `file` condensed to `duration` by the CLI, as a team condenses its capture to one runner's budget. */
function condensed(file, duration) {
  const out = file.replace(/\.wkl$/, `-condensed-${duration}.wkl`);
  const r = runCli(['condense', '--workload', file, '--output', out, '--duration', duration]);
  if (r.status !== 0) fail(`condensing ${path.basename(file)} to ${duration} failed: ${r.stderr.trim()}`);
  return out;
}

const burnFunction = (micros) => `
CREATE OR REPLACE FUNCTION calib_burn() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE until timestamptz := clock_timestamp() + make_interval(secs => ${micros} / 1e6);
BEGIN
  WHILE clock_timestamp() < until LOOP END LOOP;
  RETURN true;
END $$;
`;

const sleepTrigger = (table, seconds) => `
CREATE FUNCTION calib_sleep() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep(${seconds}); RETURN NEW; END $$;
CREATE TRIGGER calib_sleep BEFORE UPDATE ON ${table} FOR EACH ROW EXECUTE FUNCTION calib_sleep();
`;

const twoIndexes = (definitions) => definitions.map((on, i) => `CREATE INDEX calib_hot_${i + 1} ON ${on};`).join('\n');

// Migrations run statement by statement outside a transaction block (src/provision/apply-sql.ts),
// so VACUUM FULL can move the rows that are there: a new fillfactor alone applies only to pages
// written later.
const lowerFillfactor = (table) => `ALTER TABLE ${table} SET (fillfactor = 30);\nVACUUM FULL ${table};`;

/** The workload with the hot read calling calib_burn() (same text on both sides). */
async function withBurningRead(name, w) {
  const profile = await engine.readWorkload(w.file);
  let rewritten = 0;
  for (const s of profile.sessions) {
    for (const q of s.queries) {
      if (w.hotRead.test(q.sql)) {
        q.sql = `${q.sql.replace(/;\s*$/, '')} AND calib_burn()`;
        rewritten += 1;
      }
    }
  }
  if (rewritten === 0) fail(`${name}: no statement matches the hot read ${w.hotRead}`);
  const file = path.join(tmp, `${name}-burning-read.wkl`);
  await engine.writeWorkload(file, profile);
  return file;
}

/**
 * pg_stat_statements emptied before each run, as on the fresh server the gate starts for a run:
 * this server lives for hours, and entries of earlier runs (the plan probe's statements on their
 * templates) would fill pg_stat_statements.max, whose evictions cost a replay its counts.
 */
async function freshStatements(serverUrl) {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await client.query('SELECT pg_stat_statements_reset()');
  } finally {
    await client.end();
  }
}

/** Runs the CLI with these arguments, outside any CI system's change request. */
function runCli(cliArgs) {
  return spawnSync(process.execPath, [cli, ...cliArgs], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, CI: 'true', GITHUB_EVENT_NAME: '', GITHUB_EVENT_PATH: '' },
  });
}

function gate(url, workload, seed, base, head, json) {
  const gateArgs = ['gate', '--database-url', url, '--workload', workload, '--seed', seed, '--base-migrations', base, '--migrations', head];
  if (shards > 1) return shardedGate(gateArgs, json);
  const started = Date.now();
  const r = runCli([...gateArgs, '--json', json]);
  // The machine's 1-minute load average as the run ends: what else was competing for the CPUs.
  return { code: r.status, seconds: (Date.now() - started) / 1000, stderr: r.stderr, load: os.loadavg()[0] };
}

/** Keeps a run's report and, for a sharded run, its shards' partial reports beside it (`<name>.shard-<i>.json`). */
function keepReports(json, kept) {
  fs.copyFileSync(json, kept);
  for (let i = 1; i <= shards && shards > 1; i += 1) {
    const partial = json.replace(/\.json$/, `.shard-${i}.json`);
    if (fs.existsSync(partial)) fs.copyFileSync(partial, kept.replace(/\.json$/, `.shard-${i}.json`));
  }
}

/**
 * A sharded gate run on this machine: each shard one after another, then their aggregate.
 * @returns the aggregate's exit status and the slowest shard's wall time
 */
function shardedGate(gateArgs, json) {
  const partials = [];
  let slowest = 0;
  for (let i = 1; i <= shards; i += 1) {
    const partial = json.replace(/\.json$/, `.shard-${i}.json`);
    fs.rmSync(partial, { force: true });
    const started = Date.now();
    const r = runCli([...gateArgs, '--shard', `${i}/${shards}`, '--json', partial]);
    slowest = Math.max(slowest, (Date.now() - started) / 1000);
    // A shard that could not measure is left out: the aggregate names it (exit 4).
    if (r.status === 0) partials.push(partial);
    else process.stdout.write(`  shard ${i}/${shards}: exit ${r.status}: ${r.stderr.trim().split('\n').at(-1)}\n`);
  }
  if (partials.length === 0) return { code: 3, seconds: slowest, stderr: 'no shard measured', load: os.loadavg()[0] };
  const r = runCli(['aggregate', '--partial', ...partials, '--json', json]);
  return { code: r.status, seconds: slowest, stderr: r.stderr, load: os.loadavg()[0] };
}

/**
 * The rules that failed a run, from its JSON report: `client` (the client p95 rule, on a
 * fingerprint or the whole workload), `server` (the server-time rule), new errors by the rule
 * that counted them (`deterministic`, `every_replay`, `rate`, `more_often`), `coverage` (head ran
 * less of the workload), `migrations` (head's failed), `work` (the work rule); `other` for anything
 * else (limits, plans).
 */
function firedRules(report) {
  const fired = new Set();
  if (report.migration_failure) fired.add('migrations');
  const c = report.comparison;
  if (c) {
    for (const f of c.fingerprints) for (const rule of f.rules ?? []) fired.add(rule === 'server_time' ? 'server' : 'client');
    if (c.overall.regressed) fired.add('client');
    for (const e of c.new_errors) fired.add(e.rule ?? 'deterministic');
  }
  if (report.reasons.some((line) => line.startsWith('head executed '))) fired.add('coverage');
  if ((report.plans?.fingerprints ?? []).some((f) => f.work_regression)) fired.add('work');
  if (fired.size === 0) fired.add('other');
  return fired;
}

/** `server 18, client 3`: how many failing runs each rule failed, most first. */
function firedSummary(outcomes) {
  const counts = new Map();
  for (const o of outcomes) for (const rule of o.fired ?? []) counts.set(rule, (counts.get(rule) ?? 0) + 1);
  return (
    [...counts]
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .map(([rule, n]) => `${rule} ${n}`)
      .join(', ') || '–'
  );
}

/** Median latency (µs) of the hot read on base, from one gate run's A/A report. */
function hotReadMedian(report, pattern) {
  const f = report.comparison?.fingerprints.find((x) => pattern.test(x.normalized));
  if (!f) fail(`the hot read ${pattern} is not in the comparison`);
  return f.base.p50_us;
}

/** Two busy processes switched on and off at random, like a shared runner's neighbours. */
function startBursts(seed) {
  const random = prng(seed);
  let busy = [];
  let stopped = false;
  const loop = () => {
    if (stopped) return;
    const on = busy.length === 0;
    if (on) {
      busy = [0, 1].map(() => spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
    } else {
      for (const p of busy) p.kill('SIGKILL');
      busy = [];
    }
    const ms = on ? 1000 + random() * 3000 : 2000 + random() * 7000;
    setTimeout(loop, ms).unref();
  };
  loop();
  return () => {
    stopped = true;
    for (const p of busy) p.kill('SIGKILL');
  };
}

function median(values) {
  const s = [...values].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/**
 * What each chosen case of a workload replays: its workload file, and base's and head's
 * migrations (directories in the temporary directory).
 * @param name the workload's name
 * @param w the workload
 * @param measure runs a gate of `workload` on identical schemas, writing its report to `json`
 * @returns the cases by name
 */
async function caseDefinitions(name, w, measure) {
  const chosen = casesOf(w);
  const base = migrations(`${name}-base`, w.example);
  const head = (label, extra) => migrations(`${name}-${label}`, w.example, extra);
  const cases = {};
  for (const c of chosen) {
    if (c === 'a-a') cases[c] = { workload: w.file, base, head: base };
    else if (w.casesAreVariants) cases[c] = { workload: w.file, base, head: head(c, variant(w.example, c)) };
  }
  if (w.casesAreVariants) return cases;

  const simple = {
    'drop-index': () => variant(w.example, 'drop-index'),
    // The index the dashboard's reports over the last days read orders by (created_at): they scan
    // the 120,000 orders instead. Only the reports use it, and they are rare (3 calls each in the
    // shop's 3.4 s): what condensing leaves below min-calls and sharding a longer capture gates.
    'drop-report-index': () => ({ '900_calib.sql': 'DROP INDEX orders_created_idx;' }),
    'trigger-0.5ms': () => ({ '900_calib.sql': sleepTrigger(w.hotWrite.table, 0.0005) }),
    'trigger-2ms': () => ({ '900_calib.sql': sleepTrigger(w.hotWrite.table, 0.002) }),
    'two-indexes': () => ({ '900_calib.sql': twoIndexes(w.hotWrite.indexes) }),
    'one-index': () => ({ '900_calib.sql': twoIndexes(w.hotWrite.indexes.slice(0, 1)) }),
    'narrower-index': () => ({
      '900_calib.sql': 'DROP INDEX products_category_price_idx;\nCREATE INDEX calib_category ON products (category);',
    }),
    fillfactor: () => ({ '900_calib.sql': lowerFillfactor(w.rangeRead) }),
    'add-column': () => ({ '900_calib.sql': `ALTER TABLE ${w.rangeRead} ADD COLUMN calib_note text;` }),
  };
  for (const c of chosen) if (simple[c]) cases[c] = { workload: w.file, base, head: head(c, simple[c]()) };
  // Base gets the covering index, head the schema as it was: the read loses its index-only scan.
  if (chosen.includes('lost-index-only-scan')) {
    cases['lost-index-only-scan'] = {
      workload: w.file,
      base: head('covering', { '900_calib.sql': `CREATE INDEX calib_covering ON ${w.indexOnlyRead.covering};` }),
      head: base,
    };
  }

  // The read cases: measure the hot read on base first, then burn a share of it on head.
  const reads = chosen.filter((c) => c.startsWith('read+'));
  if (reads.length === 0) return cases;
  const burnWorkload = await withBurningRead(name, w);
  const burnBase = head('burn-base', { '900_calib_burn.sql': burnFunction(0) });
  let readMedian = null;
  if (reads.some((c) => c.endsWith('%'))) {
    const json = path.join(tmp, `${name}-measure.json`);
    const r = measure(burnWorkload, burnBase, json);
    if (!fs.existsSync(json)) fail(`measuring the hot read failed (exit ${r.code}): ${r.stderr.slice(-500)}`);
    readMedian = hotReadMedian(JSON.parse(fs.readFileSync(json, 'utf8')), w.hotRead);
    console.log(`${name}: the hot read's base median is ${readMedian} µs`);
  }
  for (const c of reads) {
    // A share of the measured median, or a fixed amount.
    const amount = c.slice('read+'.length);
    const micros = amount.endsWith('%') ? (readMedian * Number(amount.slice(0, -1))) / 100 : Number(amount.replace(/ms$/, '')) * 1000;
    if (!Number.isFinite(micros)) fail(`case ${c}: expected read+N% or read+Nms`);
    cases[c] = {
      workload: burnWorkload,
      base: burnBase,
      head: head(`burn-${amount}`, {
        '900_calib_burn.sql': burnFunction(0),
        '901_calib_burn.sql': burnFunction(Math.max(1, Math.round(micros))),
      }),
    };
  }
  return cases;
}

async function main() {
  // As the servers the gate starts: autovacuum off and pg_stat_statements preloaded (the work rule
  // and server-side buffers need it; without it work comes from one EXPLAIN ANALYZE, not gated).
  const server = await startPostgres({
    settings: { autovacuum: 'off', max_connections: '200', shared_preload_libraries: 'pg_stat_statements' },
  });
  // Over the server's Unix-domain socket, as the gate replays on the servers it starts itself
  // (docs/cli.md, "Servers the CLI starts"): the transport changes what a statement costs.
  const url = urlOverSocket(server.url, server.socketDir);
  await freshStatements(server.url);
  console.log(`gate target: ${server.socketDir ? `the Unix-domain socket in ${server.socketDir}` : `127.0.0.1:${server.port}`}`);
  const rows = [];
  try {
    for (const name of workloadNames) {
      // A generated workload is written (and condensed) once, before its first case.
      const w = WORKLOADS[name].build ? { ...WORKLOADS[name], file: WORKLOADS[name].build() } : WORKLOADS[name];
      const seed = example(w.example, 'seed.sql');
      const cases = await caseDefinitions(name, w, (workload, base, json) => gate(url, workload, seed, base, base, json));
      for (const condition of conditions) {
        for (const caseName of casesOf(w)) {
          const c = cases[caseName];
          const stop = condition === 'bursts' ? startBursts(rows.length + 1) : () => {};
          const outcomes = [];
          try {
            for (let i = 0; i < runs; i += 1) {
              const json = path.join(tmp, `run.json`);
              fs.rmSync(json, { force: true });
              await freshStatements(server.url);
              const r = gate(url, c.workload, seed, c.base, c.head, json);
              const report = fs.existsSync(json) ? JSON.parse(fs.readFileSync(json, 'utf8')) : null;
              outcomes.push({ ...r, fired: r.code === 1 && report ? firedRules(report) : null });
              if (keep && report) keepReports(json, path.join(keep, `${name}-${condition}-${caseName}-${i + 1}.json`));
              const fired = r.code === 1 && report ? ` (${[...firedRules(report)].join(', ')})` : '';
              process.stdout.write(
                `${name} ${condition} ${caseName} ${i + 1}/${runs}: exit ${r.code}${fired}, ${r.seconds.toFixed(0)} s\n`,
              );
            }
          } finally {
            stop();
          }
          const failed = outcomes.filter((o) => o.code === 1).length;
          const errors = outcomes.filter((o) => o.code !== 0 && o.code !== 1).length;
          rows.push({
            workload: name,
            condition: conditionLabel(condition),
            case: caseName,
            runs,
            failed,
            errors,
            fired: firedSummary(outcomes),
            medianSeconds: median(outcomes.map((o) => o.seconds)),
            load: median(outcomes.map((o) => o.load)),
          });
          // A full calibration takes hours: every finished row is written at once, so an
          // interrupted run still leaves what it measured (marked as partial).
          writeTable(rows, false);
        }
      }
    }
  } finally {
    await server.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  console.log(`\n${writeTable(rows, true).join('\n')}`);
}

/**
 * The slowdown cases, smallest first by what they add to a call of the statement they slow down,
 * as single runs on the 2-CPU development machine measured it (server-time median shifts):
 * fillfactor nothing measurable on a statement with enough calls (its range reads fetch rows an
 * index scattered anyway; the shop's reports, 3 calls each, are too rare to gate); two-indexes
 * +26 µs on checkout's stock UPDATE and +53 µs on the shop's login UPDATE; read+20 % and +50 % of
 * the hot read's ~0.2 ms client median; then the fixed amounts. What "the smallest slowdown
 * caught" is read from.
 */
const SLOWDOWNS = [
  'fillfactor',
  'one-index',
  'two-indexes',
  'lost-index-only-scan',
  'narrower-index',
  'read+20%',
  'read+50%',
  'read+0.2ms',
  'trigger-0.5ms',
  'read+0.6ms',
  'read+1ms',
  'trigger-2ms',
  'drop-report-index',
  'drop-index',
];
/** Changes that must pass (every failure is a false alarm), and changes that break statements (every pass is a miss). */
const HARMLESS = ['a-a', 'drop-unused-index', 'add-column'];
const BREAKING = ['rename-column', 'unique-constraint'];

const BEGIN = '<!-- calibrate:begin -->';
const END = '<!-- calibrate:end -->';
const COLUMNS = ['workload', 'condition', 'case', 'runs', 'failed', 'errors', 'fired', 'median wall time', 'median load', 'measured'];
const TABLE_HEAD = `| ${COLUMNS.join(' | ')} |`;
const revision = spawnSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: root, encoding: 'utf8' }).stdout.trim();
const today = new Date().toISOString().slice(0, 10);

/** A finished row's cells, by column. */
function cellsOf(r) {
  return {
    workload: r.workload,
    condition: r.condition,
    case: r.case,
    runs: String(r.runs),
    failed: `${r.failed} (${Math.round((100 * r.failed) / r.runs)} %)`,
    errors: String(r.errors),
    fired: r.fired,
    'median wall time': `${r.medianSeconds.toFixed(0)} s`,
    'median load': r.load.toFixed(1),
    measured: `${today}, ${revision}`,
  };
}

/** One row as a table line; a row read back from the document keeps its cells (a column it did not have yet shows –). */
const rowLine = (r) => `| ${COLUMNS.map((c) => (r.cells ?? cellsOf(r))[c] ?? '–').join(' | ')} |`;

/**
 * The rows already in docs/gate-statistics.md. A calibration of some cases (`--cases`,
 * `--workloads`) replaces only its own rows, so that a long table can be measured in parts
 * and each part redone; every row says when and at which revision it was measured. Cells are
 * read by their column's name, so rows written before a column was added stay.
 */
function previousRows(text) {
  const inner = text.split(BEGIN)[1]?.split(END)[0] ?? '';
  const lines = inner.split('\n');
  const head = lines.findIndex((line) => line.startsWith('| workload | condition | case |'));
  if (head < 0) return [];
  const names = lines[head]
    .split('|')
    .slice(1, -1)
    .map((c) => c.trim());
  const rows = [];
  for (const line of lines.slice(head + 2)) {
    if (!line.startsWith('|')) break;
    const cells = Object.fromEntries(
      line
        .split('|')
        .slice(1, -1)
        .map((c, i) => [names[i], c.trim()]),
    );
    rows.push({
      workload: cells.workload,
      condition: cells.condition,
      case: cells.case,
      runs: Number(cells.runs),
      failed: Number.parseInt(cells.failed, 10),
      cells,
    });
  }
  return rows;
}

/** Old rows with this run's rows in their place, in workload, condition, case order. */
function mergeRows(old, fresh) {
  const key = (r) => `${r.workload}/${r.condition}/${r.case}`;
  const freshKeys = new Set(fresh.map(key));
  const order = (list, value) => (list.indexOf(value) < 0 ? list.length : list.indexOf(value));
  const workloads = Object.keys(WORKLOADS);
  const cases = [...HARMLESS, ...SLOWDOWNS, ...BREAKING];
  return [...old.filter((r) => !freshKeys.has(key(r))), ...fresh].sort(
    (a, b) =>
      order(workloads, a.workload) - order(workloads, b.workload) ||
      // A sharded row ("quiet, 4 shards") right after its condition's one-runner rows.
      order(['quiet', 'bursts'], a.condition.split(',')[0]) - order(['quiet', 'bursts'], b.condition.split(',')[0]) ||
      a.condition.localeCompare(b.condition) ||
      order(cases, a.case) - order(cases, b.case),
  );
}

/**
 * One line per workload and condition: the smallest slowdown caught in ≥ 95 % of runs, the
 * false alarms of the changes that must pass, the catches of the changes that break statements.
 */
function verdictLines(rows) {
  const lines = [];
  for (const w of [...new Set(rows.map((r) => r.workload))]) {
    for (const c of [...new Set(rows.map((r) => r.condition))]) {
      const here = rows.filter((r) => r.workload === w && r.condition === c);
      if (here.length === 0) continue;
      const of = (r) => `${r.failed} of ${r.runs} (${r.case})`;
      const parts = [];
      if (here.some((r) => SLOWDOWNS.includes(r.case))) {
        const caught = SLOWDOWNS.find((s) => here.some((r) => r.case === s && r.failed / r.runs >= 0.95));
        parts.push(`smallest slowdown caught in ≥ 95 % of runs: ${caught ?? 'none of the measured ones'}`);
      }
      const harmless = here.filter((r) => HARMLESS.includes(r.case));
      if (harmless.length > 0) parts.push(`false alarms ${harmless.map(of).join(', ')}`);
      const breaking = here.filter((r) => BREAKING.includes(r.case));
      if (breaking.length > 0) parts.push(`breaking changes caught ${breaking.map(of).join(', ')}`);
      lines.push(`- ${w}, ${c}: ${parts.join('; ')}`);
    }
  }
  return lines;
}

/**
 * The markdown block for the table.
 * @param rows every row to show (earlier runs' and this run's)
 * @param pending rows this run planned and has not finished
 */
function tableBlock(rows, pending) {
  const partial = pending > 0 ? ` **A calibration is running or was stopped: ${pending} of its rows are not in yet.**` : '';
  return [
    `Measured by \`npm run calibrate\` on ${os.cpus().length} CPUs, default rounds and confirmation rounds; each row says when and at which revision.${partial}`,
    '',
    TABLE_HEAD,
    `| --- | --- | --- | ---: | ---: | ---: | --- | ---: | ---: | --- |`,
    ...rows.map(rowLine),
    '',
    '"failed" counts runs that exited 1 (regression), "errors" runs that could not decide. "fired" says which rules failed the failing runs (a run counts under each rule that fired): `client` the client p95 rule, `server` the server-time rule, `deterministic`, `every_replay`, `rate` and `more_often` new errors by the rule that counted them, `coverage` head ran less of the workload, `work` the work rule; – where no run failed or the row predates the column. ' +
      'In a-a, drop-unused-index and add-column every failure is a false alarm; in rename-column and unique-constraint (the race workload) every pass is a miss. ' +
      '"median load" is the 1-minute load average as each run ended (2 CPUs: above 2, processes were waiting for a CPU). ' +
      `Slowdowns in increasing order: ${SLOWDOWNS.join(', ')}; a slowdown without a row counts as not caught.`,
    '',
    ...verdictLines(rows),
  ];
}

/**
 * Puts the table between the calibration markers of docs/gate-statistics.md (unless --no-write),
 * keeping the rows of earlier calibrations this one did not measure.
 * @param rows rows this run finished
 * @param complete whether every planned row is in
 */
function writeTable(rows, complete) {
  const doc = path.join(root, 'docs', 'gate-statistics.md');
  const text = fs.readFileSync(doc, 'utf8');
  const planned = workloadNames.reduce((n, w) => n + casesOf(WORKLOADS[w]).length, 0) * conditions.length;
  const block = tableBlock(mergeRows(previousRows(text), rows), complete ? 0 : planned - rows.length);
  if (!write) return block;
  const inner = `${BEGIN}\n${block.join('\n')}\n${END}`;
  const next = text.includes(BEGIN)
    ? text.replace(new RegExp(`${BEGIN}[\\s\\S]*?${END}`), inner)
    : `${text.trimEnd()}\n\n## Calibration\n\n${inner}\n`;
  fs.writeFileSync(doc, next);
  if (complete) console.log(`\nwritten to ${path.relative(root, doc)}`);
  return block;
}

main().catch((error) => {
  console.error(`calibrate: ${error.stack ?? error}`);
  process.exit(1);
});
