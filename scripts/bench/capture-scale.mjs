// Production-size figures (`npm run bench:capture`): not a pass/fail test.
//
//   node scripts/bench/capture-scale.mjs [--gb 2.1] [--skip-build] [--no-10m] [--no-replay]
//                                        [--dir DIR] [--out FILE]
//
// 1. capture: generates a csvlog and a jsonlog of --gb GB each (bench_capture gen-log: an online
//    shop's traffic, 48 sessions open at a time, extended protocol with parse/bind/execute lines,
//    checkouts whose RETURNING ids later statements and other sessions use), captures each, and
//    reports MB/s of log (wall and CPU) and peak RSS;
// 2. condense: generates a csvlog large enough for 10 million statements, captures it (a figure
//    too), condenses the workload to 60 s and reports the time and peak RSS;
// 3. replay: loads and replays 10 million pgbench-shaped point selects (bench_replay, speed 0,
//    16 sessions) on a throwaway server with `pgbench -i -s 10`, and reports peak RSS.
//
// Every generated file is deleted as soon as it has served; the working directory (default
// target/bench/capture-scale, on the disk the logs need: up to ~12 GB at once) is removed at the
// end. Figures go to stdout and to --out (default target/bench/capture-scale.json). See
// docs/benchmark.md.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPostgres } from '../../test/support/postgres.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const rusage = path.join(root, 'scripts', 'bench', 'rusage.py');
const examples = path.join(root, 'target', 'release', 'examples');
const captureBin = path.join(examples, 'bench_capture');
const replayBin = path.join(examples, 'bench_replay');

const settings = {
  gb: 2.1,
  build: true,
  tenMillion: true,
  replay: true,
  dir: path.join(root, 'target', 'bench', 'capture-scale'),
  out: path.join(root, 'target', 'bench', 'capture-scale.json'),
};
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => argv[++i] ?? usage(`${arg} needs a value`);
    if (arg === '--gb') settings.gb = Number(value());
    else if (arg === '--skip-build') settings.build = false;
    else if (arg === '--no-10m') settings.tenMillion = false;
    else if (arg === '--no-replay') settings.replay = false;
    else if (arg === '--dir') settings.dir = path.resolve(value());
    else if (arg === '--out') settings.out = path.resolve(value());
    else usage(arg === '-h' || arg === '--help' ? undefined : `unknown option ${arg}`);
  }
  if (!(settings.gb > 0)) usage('--gb must be a positive number');
}

function usage(problem) {
  if (problem) console.error(`bench:capture: ${problem}`);
  console.error('usage: node scripts/bench/capture-scale.mjs [--gb 2.1] [--skip-build] [--no-10m] [--no-replay] [--dir DIR] [--out FILE]');
  process.exit(problem ? 2 : 0);
}

const TEN_MILLION = 10_000_000;
const MB = 1e6;

/** Runs a command under rusage.py; returns its JSON line (last stdout line) and its resource use. */
function measured(name, command, args) {
  const usageFile = path.join(settings.dir, `${name}.rusage.json`);
  const r = spawnSync('python3', [rusage, usageFile, '--', command, ...args], { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`${name} failed (exit ${r.status}):\n${r.stderr.slice(-2000)}`);
  const line = r.stdout.trim().split('\n').pop();
  const use = JSON.parse(fs.readFileSync(usageFile, 'utf8'));
  fs.rmSync(usageFile);
  return { ...JSON.parse(line), cpu_s: use.cpu_s, wall_s: use.wall_s, max_rss_mb: (use.max_rss_kb * 1024) / MB };
}

function run(command, args) {
  const r = spawnSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (exit ${r.status})`);
  return r.stdout;
}

const remove = (...files) => {
  for (const f of files) fs.rmSync(f, { force: true, recursive: true });
};

function captureFigure(format, bytes, seed) {
  const log = path.join(settings.dir, `bench.${format}`);
  const wkl = path.join(settings.dir, `bench-${format}.wkl`);
  console.log(`generating a ${(bytes / 1e9).toFixed(1)} GB ${format}log ...`);
  const gen = JSON.parse(
    run(captureBin, ['gen-log', '--format', format, '--bytes', String(Math.round(bytes)), '--seed', String(seed), '--out', log]),
  );
  console.log(`capturing it (${gen.sessions.toLocaleString('en-US')} sessions) ...`);
  const c = measured(`capture-${format}`, captureBin, ['capture', '--out', wkl, '--log', log]);
  remove(log);
  const figure = {
    format,
    log_gb: c.log_bytes / 1e9,
    statements: c.statements,
    sessions: c.sessions,
    keys_inferred: c.keys_inferred,
    wkl_mb: c.wkl_bytes / MB,
    wall_s: c.seconds,
    mb_per_s: c.mb_per_s,
    mb_per_cpu_s: c.log_bytes / MB / c.cpu_s,
    stage_seconds: c.stage_seconds,
    peak_rss_mb: c.max_rss_mb,
  };
  console.log(
    `  ${format}: ${figure.log_gb.toFixed(2)} GB, ${figure.statements.toLocaleString('en-US')} statements in ${figure.wall_s.toFixed(1)} s: ` +
      `${figure.mb_per_s.toFixed(0)} MB/s (${figure.mb_per_cpu_s.toFixed(0)} MB per CPU second), peak RSS ${figure.peak_rss_mb.toFixed(0)} MB`,
  );
  return { figure, wkl };
}

async function replayFigure() {
  console.log('replay: starting a throwaway server, pgbench -i -s 10 ...');
  const server = await startPostgres({ settings: { shared_buffers: '256MB', max_connections: '60', autovacuum: 'off' } });
  try {
    run(path.join(server.bindir, 'pgbench'), ['-i', '-s', '10', '-q', server.url]);
    const wkl = path.join(settings.dir, 'replay-10m.wkl');
    run(replayBin, ['gen', '--out', wkl, '--statements', String(TEN_MILLION), '--sessions', '16']);
    console.log('replaying 10,000,000 statements at speed 0 (several minutes) ...');
    const r = measured('replay-10m', replayBin, ['replay', '--wkl', wkl, '--conninfo', server.url, '--expect', String(TEN_MILLION)]);
    remove(wkl);
    const figure = {
      statements: r.statements,
      load_s: r.load_s,
      replay_wall_s: r.replay_wall_s,
      qps: r.qps,
      workload_heap_mb: r.workload_heap_bytes / MB,
      peak_rss_after_load_mb: (r.peak_rss_after_load_kb * 1024) / MB,
      peak_rss_mb: (r.peak_rss_kb * 1024) / MB,
    };
    console.log(
      `  10M replay: peak RSS ${figure.peak_rss_mb.toFixed(0)} MB (${figure.peak_rss_after_load_mb.toFixed(0)} MB after loading; the compact workload ${figure.workload_heap_mb.toFixed(0)} MB), ${figure.qps.toFixed(0)} q/s`,
    );
    return figure;
  } finally {
    await server.stop();
  }
}

async function main() {
  if (settings.build) {
    console.log('building the bench drivers (release) ...');
    run('cargo', ['build', '--release', '-p', 'pg-retest-core', '--example', 'bench_capture', '--example', 'bench_replay']);
  }
  fs.mkdirSync(settings.dir, { recursive: true });
  const results = {
    date: new Date().toISOString(),
    revision: spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).stdout.trim(),
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, memory_gb: os.totalmem() / 1e9, loadavg_start: os.loadavg() },
    targets: { capture_mb_per_s: 100, capture_peak_rss_mb: 256 },
    capture: [],
  };
  try {
    for (const [format, seed] of [
      ['csv', 1],
      ['json', 2],
    ]) {
      const { figure, wkl } = captureFigure(format, settings.gb * 1e9, seed);
      results.capture.push(figure);
      remove(wkl, `${wkl}.capture.json`);
    }
    if (settings.tenMillion) {
      // Statements per byte as the csv run measured, and a margin.
      const csv = results.capture[0];
      const bytes = ((TEN_MILLION * 1.04) / csv.statements) * csv.log_gb * 1e9;
      const { figure, wkl } = captureFigure('csv', bytes, 3);
      results.capture_10m = figure;
      const ci = path.join(settings.dir, 'ci.wkl');
      console.log(`condensing ${figure.statements.toLocaleString('en-US')} statements to 60 s ...`);
      const c = measured('condense-10m', captureBin, ['condense', '--wkl', wkl, '--out', ci, '--duration-ms', '60000']);
      results.condense_10m = {
        statements: c.statements,
        wkl_mb: c.wkl_bytes / MB,
        condensed_statements: c.condensed_statements,
        condensed_duration_s: c.condensed_duration_s,
        windows: c.windows,
        pulled_in: c.pulled_in,
        hot: c.hot,
        hot_not_gated: c.hot_not_gated,
        mix_distance: c.mix_distance,
        wall_s: c.seconds,
        cpu_s: c.cpu_s,
        peak_rss_mb: c.max_rss_mb,
      };
      console.log(
        `  condense: ${c.seconds.toFixed(1)} s (${c.cpu_s.toFixed(1)} s CPU), peak RSS ${c.max_rss_mb.toFixed(0)} MB → ` +
          `${c.condensed_statements.toLocaleString('en-US')} statements, ${c.condensed_duration_s.toFixed(1)} s, ${c.hot} hot fingerprints (${c.hot_not_gated} not gated)`,
      );
      remove(wkl, `${wkl}.capture.json`, ci, `${ci}.condense.json`);
    }
    if (settings.replay) results.replay_10m = await replayFigure();
  } finally {
    results.machine.loadavg_end = os.loadavg();
    remove(settings.dir);
  }
  fs.mkdirSync(path.dirname(settings.out), { recursive: true });
  fs.writeFileSync(settings.out, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nfigures in ${path.relative(root, settings.out)}; targets: capture ≥ 100 MB/s and ≤ 256 MB peak RSS`);
}

main().catch((error) => {
  console.error(`bench:capture: ${error.message}`);
  try {
    remove(settings.dir);
  } catch {
    // Nothing more to clean.
  }
  process.exit(1);
});
