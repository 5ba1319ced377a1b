// `npm run calibrate`: the gate's error rates, measured. A bench, not a test: it runs the real
// gate (dist/cli.js) many times per case and prints how often it failed, so that the false-alarm
// rate (identical schemas) and the smallest slowdown it catches can be read off this machine.
//
//   npm run build && npm run calibrate -- [--runs N] [--workloads shop,checkout]
//       [--cases a-a,drop-index,...] [--conditions quiet,bursts] [--no-write] [--keep DIR]
//
// `--keep DIR` keeps every run's JSON report (DIR/<workload>-<condition>-<case>-<n>.json), so
// that a false alarm or a missed slowdown can be read afterwards: which rule held it back.
//
// Workloads: `shop` (examples/shop/workload.wkl: reads and checkouts, currval-style) and
// `checkout` (examples/shop/checkout.wkl: captured write traffic, ids from RETURNING).
// Cases, each a PR on top of the shop's schema:
//   a-a            nothing changes: every failure is a false alarm
//   drop-index     the order history loses its index (a sequential scan of 120,000 rows)
//   trigger-0.5ms  a trigger on the workload's hot write that sleeps 0.5 ms per row
//   trigger-2ms    the same, 2 ms
//   read+20%       the hot read's server time grows by 20 % of its measured median latency: the
//   read+50%       read calls calib_burn(), a function that returns at once on base and spins
//                  on head (the PR), so the statement text and its fingerprint stay the same
//   read+0.6ms     the same function, spinning a fixed 0.6 ms and 1 ms per call: slowdowns of
//   read+1ms       the hot read just above and well above the default min-delta-ms (0.5 ms)
// Conditions: `quiet` (the machine as it is) and `bursts` (two busy processes switched on for
// 1–4 s every 2–9 s, as a shared CI runner's neighbours do).
//
// Each run is a full gate with default rounds and confirmation rounds against a throwaway server
// (the test harness's), so a run takes 20–60 s: 20 runs × 6 cases × 2 conditions × 2 workloads
// is several hours. The table goes into docs/gate-statistics.md between the calibration markers,
// with the date, the revision and the number of runs.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { prng } from './lib/prng.mjs';
import { urlOverSocket } from '../src/provision/socket-url.mjs';
import { startPostgres } from '../test/support/postgres.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const shop = (...p) => path.join(root, 'examples', 'shop', ...p);
const cli = path.join(root, 'dist', 'cli.js');

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const runs = Number(opt('--runs', '20'));
const workloadNames = opt('--workloads', 'shop,checkout').split(',');
const caseNames = opt('--cases', 'a-a,drop-index,trigger-0.5ms,trigger-2ms,read+20%,read+50%,read+0.6ms,read+1ms').split(',');
const conditions = opt('--conditions', 'quiet,bursts').split(',');
const write = !args.includes('--no-write');
const keep = opt('--keep', null);
if (args.includes('--keep') && (!keep || keep.startsWith('--'))) {
  console.error('calibrate: --keep needs a directory to keep the runs\' JSON reports in (e.g. --keep /tmp/calibrate-runs)');
  process.exit(2);
}
if (keep) fs.mkdirSync(keep, { recursive: true });

/** The workloads and the statements their cases slow down. */
const WORKLOADS = {
  shop: {
    file: shop('workload.wkl'),
    hotWrite: { table: 'customers', fingerprint: /^UPDATE customers SET last_login/ },
    hotRead: /^SELECT id, sku, name, category, price, stock FROM products WHERE id = /,
  },
  checkout: {
    file: shop('checkout.wkl'),
    hotWrite: { table: 'products', fingerprint: /^UPDATE products SET stock = stock - / },
    hotRead: /^SELECT id, name, price, stock FROM products WHERE id = /,
  },
};

function fail(message) {
  console.error(`calibrate: ${message}`);
  process.exit(1);
}

if (!Number.isInteger(runs) || runs < 1) fail('--runs needs a whole number ≥ 1');
for (const w of workloadNames) if (!WORKLOADS[w]) fail(`unknown workload ${w} (shop, checkout)`);
if (!fs.existsSync(cli)) fail('dist/cli.js is missing: run npm run build first');
const library = path.join(root, 'build', 'engine.linux-x64-gnu.node');
if (!fs.existsSync(library)) fail('the engine is not built: run npm run build first');
const engine = createRequire(import.meta.url)(library);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-calibrate-'));

/** A directory of migrations: the shop's, then `extra` files in order. */
function migrations(name, extra = {}) {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir, { recursive: true });
  for (const f of fs.readdirSync(shop('migrations'))) fs.copyFileSync(shop('migrations', f), path.join(dir, f));
  for (const [file, sql] of Object.entries(extra)) fs.writeFileSync(path.join(dir, file), sql);
  return path.join(dir, '*.sql');
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

function gate(url, workload, base, head, json) {
  const started = Date.now();
  const r = spawnSync(
    process.execPath,
    [cli, 'gate', '--database-url', url, '--workload', workload, '--seed', shop('seed.sql'), '--base-migrations', base, '--migrations', head, '--json', json],
    { cwd: root, encoding: 'utf8', env: { ...process.env, CI: 'true', GITHUB_EVENT_NAME: '', GITHUB_EVENT_PATH: '' } },
  );
  // The machine's 1-minute load average as the run ends: what else was competing for the CPUs.
  return { code: r.status, seconds: (Date.now() - started) / 1000, stderr: r.stderr, load: os.loadavg()[0] };
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

async function main() {
  const server = await startPostgres({ settings: { autovacuum: 'off', max_connections: '200' } });
  // Over the server's Unix-domain socket, as the gate replays on the servers it starts itself
  // (docs/cli.md, "Servers the CLI starts"): the transport changes what a statement costs.
  const url = urlOverSocket(server.url, server.socketDir);
  console.log(`gate target: ${server.socketDir ? `the Unix-domain socket in ${server.socketDir}` : `127.0.0.1:${server.port}`}`);
  const rows = [];
  try {
    for (const name of workloadNames) {
      const w = WORKLOADS[name];
      const base = migrations(`${name}-base`);
      // The read cases: measure the hot read on base first, then burn a share of it on head.
      const needsBurn = caseNames.some((c) => c.startsWith('read+'));
      const burnWorkload = needsBurn ? await withBurningRead(name, w) : null;
      const burnBase = needsBurn ? migrations(`${name}-burn-base`, { '900_calib_burn.sql': burnFunction(0) }) : null;
      let readMedian = null;
      if (needsBurn) {
        const json = path.join(tmp, `${name}-measure.json`);
        const r = gate(url, burnWorkload, burnBase, burnBase, json);
        if (!fs.existsSync(json)) fail(`measuring the hot read failed (exit ${r.code}): ${r.stderr.slice(-500)}`);
        readMedian = hotReadMedian(JSON.parse(fs.readFileSync(json, 'utf8')), w.hotRead);
        console.log(`${name}: the hot read's base median is ${readMedian} µs`);
      }
      const cases = {
        'a-a': { workload: w.file, base, head: base },
        'drop-index': { workload: w.file, base, head: migrations(`${name}-drop-index`, { '100_drop.sql': fs.readFileSync(shop('variants', 'drop-index', fs.readdirSync(shop('variants', 'drop-index'))[0]), 'utf8') }) },
        'trigger-0.5ms': { workload: w.file, base, head: migrations(`${name}-t05`, { '900_calib.sql': sleepTrigger(w.hotWrite.table, 0.0005) }) },
        'trigger-2ms': { workload: w.file, base, head: migrations(`${name}-t2`, { '900_calib.sql': sleepTrigger(w.hotWrite.table, 0.002) }) },
      };
      // Shares of the measured median, and fixed amounts.
      const burns = needsBurn ? [['20%', (readMedian * 20) / 100], ['50%', (readMedian * 50) / 100], ['0.6ms', 600], ['1ms', 1000]] : [];
      for (const [label, micros] of burns) {
        cases[`read+${label}`] = {
          workload: burnWorkload,
          base: burnBase,
          head: migrations(`${name}-burn-${label}`, { '900_calib_burn.sql': burnFunction(0), '901_calib_burn.sql': burnFunction(Math.max(1, Math.round(micros))) }),
        };
      }
      for (const condition of conditions) {
        for (const caseName of caseNames) {
          const c = cases[caseName];
          if (!c) fail(`unknown case ${caseName}`);
          const stop = condition === 'bursts' ? startBursts(rows.length + 1) : () => {};
          const outcomes = [];
          try {
            for (let i = 0; i < runs; i += 1) {
              const json = path.join(tmp, `run.json`);
              fs.rmSync(json, { force: true });
              const r = gate(url, c.workload, c.base, c.head, json);
              outcomes.push(r);
              if (keep && fs.existsSync(json)) fs.copyFileSync(json, path.join(keep, `${name}-${condition}-${caseName}-${i + 1}.json`));
              process.stdout.write(`${name} ${condition} ${caseName} ${i + 1}/${runs}: exit ${r.code}, ${r.seconds.toFixed(0)} s\n`);
            }
          } finally {
            stop();
          }
          const failed = outcomes.filter((o) => o.code === 1).length;
          const errors = outcomes.filter((o) => o.code !== 0 && o.code !== 1).length;
          rows.push({ workload: name, condition, case: caseName, runs, failed, errors, medianSeconds: median(outcomes.map((o) => o.seconds)), load: median(outcomes.map((o) => o.load)) });
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

/** The slowdown cases, smallest first: what "the minimum slowdown detected" is read from. */
const SLOWDOWNS = ['read+20%', 'trigger-0.5ms', 'read+50%', 'read+0.6ms', 'read+1ms', 'trigger-2ms', 'drop-index'];

const BEGIN = '<!-- calibrate:begin -->';
const END = '<!-- calibrate:end -->';
const TABLE_HEAD = '| workload | condition | case | runs | failed | errors | median wall time | median load | measured |';
const revision = spawnSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: root, encoding: 'utf8' }).stdout.trim();
const today = new Date().toISOString().slice(0, 10);

/** One row as a table line; `line` keeps a row read back from the document as it was. */
const rowLine = (r) =>
  r.line ??
  `| ${r.workload} | ${r.condition} | ${r.case} | ${r.runs} | ${r.failed} (${Math.round((100 * r.failed) / r.runs)} %) | ${r.errors} | ${r.medianSeconds.toFixed(0)} s | ${r.load.toFixed(1)} | ${today}, ${revision} |`;

/**
 * The rows already in docs/gate-statistics.md. A calibration of some cases (`--cases`,
 * `--workloads`) replaces only its own rows, so that a long table can be measured in parts
 * and each part redone; every row says when and at which revision it was measured.
 */
function previousRows(text) {
  const inner = text.split(BEGIN)[1]?.split(END)[0] ?? '';
  const lines = inner.split('\n');
  const head = lines.indexOf(TABLE_HEAD);
  if (head < 0) return [];
  const rows = [];
  for (const line of lines.slice(head + 2)) {
    if (!line.startsWith('|')) break;
    const cells = line.split('|').slice(1, -1).map((c) => c.trim());
    rows.push({ workload: cells[0], condition: cells[1], case: cells[2], runs: Number(cells[3]), failed: Number.parseInt(cells[4], 10), line });
  }
  return rows;
}

/** Old rows with this run's rows in their place, in workload, condition, case order. */
function mergeRows(old, fresh) {
  const key = (r) => `${r.workload}/${r.condition}/${r.case}`;
  const freshKeys = new Set(fresh.map(key));
  const order = (list, value) => (list.indexOf(value) < 0 ? list.length : list.indexOf(value));
  const workloads = Object.keys(WORKLOADS);
  const cases = ['a-a', ...SLOWDOWNS];
  return [...old.filter((r) => !freshKeys.has(key(r))), ...fresh].sort(
    (a, b) =>
      order(workloads, a.workload) - order(workloads, b.workload) ||
      order(['quiet', 'bursts'], a.condition) - order(['quiet', 'bursts'], b.condition) ||
      order(cases, a.case) - order(cases, b.case),
  );
}

/**
 * The markdown block for the table.
 * @param rows every row to show (earlier runs' and this run's)
 * @param pending rows this run planned and has not finished
 */
function tableBlock(rows, pending) {
  const minimum = [];
  for (const w of [...new Set(rows.map((r) => r.workload))]) {
    for (const c of [...new Set(rows.map((r) => r.condition))]) {
      if (!rows.some((r) => r.workload === w && r.condition === c)) continue;
      const caught = SLOWDOWNS.find((s) => {
        const r = rows.find((x) => x.workload === w && x.condition === c && x.case === s);
        return r && r.failed / r.runs >= 0.95;
      });
      minimum.push(`- ${w}, ${c}: ${caught ?? 'none of the measured slowdowns'} caught in ≥ 95 % of runs`);
    }
  }
  const partial = pending > 0 ? ` **A calibration is running or was stopped: ${pending} of its rows are not in yet.**` : '';
  return [
    `Measured by \`npm run calibrate\` on ${os.cpus().length} CPUs, default rounds and confirmation rounds; each row says when and at which revision.${partial}`,
    '',
    TABLE_HEAD,
    '| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |',
    ...rows.map(rowLine),
    '',
    '"median load" is the 1-minute load average as each run ended (2 CPUs: above 2, processes were waiting for a CPU). Smallest slowdown caught (slowdowns in increasing order: read +20 %, 0.5 ms trigger, read +50 %, read +0.6 ms, read +1 ms, 2 ms trigger, drop-index; a slowdown without a row counts as not caught):',
    '',
    ...minimum,
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
  const planned = workloadNames.length * conditions.length * caseNames.length;
  const block = tableBlock(mergeRows(previousRows(text), rows), complete ? 0 : planned - rows.length);
  if (!write) return block;
  const inner = `${BEGIN}\n${block.join('\n')}\n${END}`;
  const next = text.includes(BEGIN) ? text.replace(new RegExp(`${BEGIN}[\\s\\S]*?${END}`), inner) : `${text.trimEnd()}\n\n## Calibration\n\n${inner}\n`;
  fs.writeFileSync(doc, next);
  if (complete) console.log(`\nwritten to ${path.relative(root, doc)}`);
  return block;
}

main().catch((error) => {
  console.error(`calibrate: ${error.stack ?? error}`);
  process.exit(1);
});
