// The replay benchmark (`npm run bench`): figures, not a pass/fail test.
//
//   node scripts/bench.mjs [--pairs N] [--seconds S] [--skip-build] [--no-memory] [--old-path]
//                          [--unpinned] [--server-time] [--fixed-work] [--floor] [--tcp]
//                          [--proxy | --only-proxy] [--out FILE]
//
// Starts one throwaway PostgreSQL server (initdb in a temporary directory, a free port on
// 127.0.0.1 and a Unix-domain socket in that directory), loads it with `pgbench -i -s 10`, then
// alternates
//   A = pgbench -S -M simple -c 16 -j 2 -T S -n (with --fixed-work: -t, the statements B replays)
//   B = our replay, speed 0, of a .wkl workload of the same point selects over 16 sessions,
//       sized (by a short calibration replay) to last about S seconds
// N times each (with --old-path, also C = the same replay on the earlier tokio-postgres path; with
// --unpinned, also U = the same replay with its worker threads left unpinned; with
// --server-time, also T = the same replay with the server sending its duration line after every
// statement and the replay reading it, as the gate's replays do; with --floor, also D, E and F = the floor client, bench_floor, on epoll, on io_uring and as tasks on
// a Tokio runtime), and
// Every client connects over the Unix-domain socket, as the replay does on the servers the gate
// starts; with --tcp, every client connects to 127.0.0.1 instead (as to a server given by URL).
// With --proxy, after those runs, the recording proxy's cost (scripts/bench/proxy.mjs): pgbench
// -c 8 -j 2 -M simple|extended|prepared, -S and TPC-B-like, straight to the server and through
// `pg-retest-action proxy` (dist/cli.js, `npm run build`), both over TCP, N pairs each; with
// --only-proxy, that alone (no replay runs, nothing of ours to build).
// It reports q/s, the ratio ours/pgbench, client CPU per 100k statements, the server's CPU during each
// run and peak RSS. Then it measures the peak RSS of loading and replaying 320k and 1M statements,
// and of loading them through the shipped engine's Node addon, as the action and the CLI do.
// The server is always stopped and the directory removed, also on error or Ctrl-C.
// Results go to stdout and to target/bench/bench-results.json (bench-proxy-results.json with
// --only-proxy). See docs/benchmark.md.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import * as cpuAccounting from './bench/cpu-accounting.mjs';
import { fmt, fmtInterval, interval95, mean } from './bench/figures.mjs';
import * as proxyVariant from './bench/proxy.mjs';
import * as serverTimeVariant from './bench/server-time.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const rusageWrapper = path.join(root, 'scripts', 'bench', 'rusage.py');
const exampleBin = path.join(root, 'target', 'release', 'examples', 'bench_replay');
const floorBin = path.join(root, 'target', 'release', 'examples', 'bench_floor');
const cliBundle = path.join(root, 'dist', 'cli.js');
/** bench_floor's exit status when io_uring cannot be used on this machine. */
const FLOOR_UNAVAILABLE = 3;

// ---------------------------------------------------------------------------------------------
// Options

const settings = {
  pairs: 3,
  seconds: 15,
  build: true,
  memory: true,
  oldPath: false,
  unpinned: false,
  serverTime: false,
  fixedWork: false,
  floor: false,
  /** The recording proxy's cost (`--proxy`), or only that (`--only-proxy`). */
  proxy: false,
  onlyProxy: false,
  /** How every client connects: 'socket' (the server's Unix-domain socket) or 'tcp' (127.0.0.1). */
  transport: 'socket',
  out: path.join(root, 'target', 'bench', 'bench-results.json'),
};
{
  let outGiven;
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${arg} needs a value`);
      return argv[++i];
    };
    if (arg === '--pairs') settings.pairs = positiveInt(arg, value());
    else if (arg === '--seconds') settings.seconds = positiveInt(arg, value());
    else if (arg === '--skip-build') settings.build = false;
    else if (arg === '--no-memory') settings.memory = false;
    else if (arg === '--old-path') settings.oldPath = true;
    else if (arg === '--unpinned') settings.unpinned = true;
    else if (arg === '--server-time') settings.serverTime = true;
    else if (arg === '--fixed-work') settings.fixedWork = true;
    else if (arg === '--floor') settings.floor = true;
    else if (arg === '--tcp') settings.transport = 'tcp';
    else if (arg === '--proxy') settings.proxy = true;
    else if (arg === '--only-proxy') settings.proxy = settings.onlyProxy = true;
    else if (arg === '--out') settings.out = outGiven = path.resolve(value());
    else if (arg === '-h' || arg === '--help') usage();
    else usage(`unknown option ${arg}`);
  }
  // The proxy's figures alone do not replace the whole benchmark's.
  if (settings.onlyProxy && !outGiven) settings.out = path.join(root, 'target', 'bench', 'bench-proxy-results.json');
}

function usage(problem) {
  if (problem) console.error(`bench: ${problem}`);
  console.error(
    'usage: node scripts/bench.mjs [--pairs N] [--seconds S] [--skip-build] [--no-memory] [--old-path] [--unpinned] [--server-time] [--fixed-work] [--floor] [--tcp] [--proxy | --only-proxy] [--out FILE]',
  );
  process.exit(problem ? 2 : 0);
}

function positiveInt(name, text) {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) usage(`${name} must be a positive integer, got ${text}`);
  return n;
}

const SESSIONS = 16;
const CALIBRATION_STATEMENTS = 48_000;
const MEMORY_SIZES = [320_000, 1_000_000];
const TARGETS = { ratio: 1.05, cpuVsPgbench: 0.9, rss320kMB: 40, rss1MMB: 120 };

// ---------------------------------------------------------------------------------------------
// Processes, interrupts and cleanup

class BenchError extends Error {}

/** The child currently running, so that an interrupt can be passed on. */
let running;
let interrupted = false;
/** Server state, for cleanup. */
const server = { dir: undefined, child: undefined, pid: undefined, stopped: false };

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    if (interrupted) {
      // Second interrupt: stop at once.
      emergencyCleanup();
      process.exit(130);
    }
    interrupted = true;
    console.error(`\nbench: ${signal} received, stopping (again to force)`);
    running?.kill('SIGINT');
  });
}
process.on('exit', emergencyCleanup);

/** Synchronous last resort: never leave a server, a proxy or the server's directory behind. */
function emergencyCleanup() {
  proxyVariant.emergencyStop();
  if (server.pid && !server.stopped && alive(server.pid)) {
    try {
      process.kill(server.pid, 'SIGQUIT');
    } catch {
      // already gone
    }
  }
  if (server.dir && !server.stopped) {
    // The server may still hold files for a moment; removal is best effort here.
    try {
      fs.rmSync(server.dir, { recursive: true, force: true });
    } catch {
      // ignore
    }
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function checkInterrupted() {
  if (interrupted) throw new BenchError('interrupted');
}

/**
 * Runs a command to completion. stdout is captured (and echoed when `echo`), stderr is shown.
 * @returns {Promise<{ code: number | null, signal: string | null, stdout: string }>}
 */
function run(command, args, { echo = false, quiet = false, env = process.env } = {}) {
  checkInterrupted();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', quiet ? 'pipe' : 'inherit'],
    });
    running = child;
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      if (echo) process.stdout.write(chunk);
    });
    if (quiet) {
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (chunk) => (stderr += chunk));
    }
    child.once('error', (error) => {
      running = undefined;
      reject(new BenchError(`cannot run ${command}: ${error.message}`));
    });
    child.once('close', (code, signal) => {
      running = undefined;
      resolve({ code, signal, stdout, stderr });
    });
  });
}

async function mustRun(what, command, args, options) {
  const r = await run(command, args, options);
  checkInterrupted();
  if (r.code !== 0) {
    const detail = [r.stderr, r.stdout].filter(Boolean).join('\n').trim().split('\n').slice(-15);
    throw new BenchError(
      `${what} failed (${r.signal ? `signal ${r.signal}` : `exit code ${r.code}`})` +
        (detail.length && detail[0] ? `:\n  ${detail.join('\n  ')}` : ''),
    );
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Tools

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

function which(name) {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, name);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** The directory holding initdb, postgres and pgbench. */
function findPgBin() {
  const candidates = [];
  if (process.env.PG_BINDIR) candidates.push(process.env.PG_BINDIR);
  const pgConfig = which('pg_config');
  if (pgConfig) {
    const r = spawnSync(pgConfig, ['--bindir'], { encoding: 'utf8' });
    if (r.status === 0) candidates.push(r.stdout.trim());
  }
  try {
    const versions = fs
      .readdirSync('/usr/lib/postgresql')
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    for (const v of versions) candidates.push(`/usr/lib/postgresql/${v}/bin`);
  } catch {
    // not a Debian layout
  }
  const initdb = which('initdb');
  if (initdb) candidates.push(path.dirname(initdb));
  const needed = ['initdb', 'postgres', 'pgbench', 'pg_isready', 'createdb'];
  for (const dir of candidates) {
    if (needed.every((n) => fs.existsSync(path.join(dir, n)))) return dir;
  }
  throw new BenchError(
    `cannot find PostgreSQL's ${needed.join(', ')} (looked in ${candidates.join(', ') || 'nothing: no pg_config, /usr/lib/postgresql or initdb on PATH'}).\n` +
      '  Install the PostgreSQL server and client packages (e.g. apt-get install postgresql postgresql-contrib)\n' +
      '  or point PG_BINDIR at the directory that holds initdb, postgres and pgbench.',
  );
}

function findTools() {
  const bin = findPgBin();
  const python = which('python3');
  if (!python) throw new BenchError('python3 is needed to measure pgbench CPU time; install python3');
  const runuser = isRoot ? (which('runuser') ?? ['/usr/sbin/runuser', '/sbin/runuser'].find((f) => fs.existsSync(f))) : undefined;
  if (isRoot && !runuser) {
    throw new BenchError('running as root: initdb/postgres must run as another user, and runuser is missing');
  }
  if (isRoot && spawnSync('id', ['-u', 'postgres']).status !== 0) {
    throw new BenchError('running as root: initdb/postgres must run as user "postgres", which does not exist');
  }
  const version = spawnSync(path.join(bin, 'postgres'), ['--version'], { encoding: 'utf8' }).stdout.trim();
  const pgbenchVersion = spawnSync(path.join(bin, 'pgbench'), ['--version'], { encoding: 'utf8' }).stdout.trim();
  return {
    bin,
    python,
    runuser,
    version,
    pgbenchVersion,
    exe: (name) => path.join(bin, name),
    /** initdb and postgres refuse to run as root. */
    asServerUser: (name, args) =>
      isRoot ? [runuser, ['-u', 'postgres', '--', path.join(bin, name), ...args]] : [path.join(bin, name), args],
  };
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// The throwaway server

const SERVER_SETTINGS = [
  'listen_addresses=127.0.0.1',
  'max_connections=60',
  'shared_buffers=256MB',
  'fsync=off',
  'synchronous_commit=off',
  'full_page_writes=off',
  'autovacuum=off',
  'logging_collector=off',
];

async function startServer(tools) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-bench-'));
  server.dir = dir;
  const data = path.join(dir, 'data');
  const work = path.join(dir, 'work');
  fs.mkdirSync(work);
  if (isRoot) {
    const uid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
    const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
    fs.chownSync(dir, uid, gid);
  }
  const [initdb, initArgs] = tools.asServerUser('initdb', [
    '-D',
    data,
    '-U',
    'postgres',
    '--auth=trust',
    '--encoding=UTF8',
    '--locale=C',
    '-N',
  ]);
  await mustRun('initdb', initdb, initArgs, { quiet: true });

  const port = await freePort();
  const logFile = path.join(dir, 'server.log');
  const logFd = fs.openSync(logFile, 'a');
  const [postgres, pgArgs] = tools.asServerUser('postgres', [
    '-D',
    data,
    '-p',
    String(port),
    '-k',
    dir,
    ...SERVER_SETTINGS.flatMap((s) => ['-c', s]),
  ]);
  const child = spawn(postgres, pgArgs, { stdio: ['ignore', logFd, logFd] });
  fs.closeSync(logFd);
  server.child = child;
  let exited = false;
  child.once('close', () => (exited = true));
  child.once('error', () => (exited = true));

  const logTail = () => {
    try {
      return fs.readFileSync(logFile, 'utf8').trim().split('\n').slice(-10).join('\n  ');
    } catch {
      return '(no log)';
    }
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    checkInterrupted();
    if (exited) throw new BenchError(`the PostgreSQL server exited at start-up:\n  ${logTail()}`);
    const r = spawnSync(tools.exe('pg_isready'), ['-q', '-h', '127.0.0.1', '-p', String(port)]);
    if (r.status === 0) break;
    if (Date.now() > deadline) throw new BenchError(`the PostgreSQL server did not start within 30 s:\n  ${logTail()}`);
    await sleep(200);
  }
  try {
    server.pid = Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    server.pid = undefined;
  }
  return { dir, work, port, logFile };
}

/** Fast shutdown, then immediate, then kill; removes the directory. */
async function stopServer() {
  if (!server.dir || server.stopped) return;
  const pid = server.pid;
  const child = server.child;
  const gone = () => (pid ? !alive(pid) : true) && (!child || child.exitCode !== null || child.signalCode !== null);
  const waitGone = async (ms) => {
    const until = Date.now() + ms;
    while (!gone() && Date.now() < until) await sleep(100);
    return gone();
  };
  const signal = (sig) => {
    try {
      if (pid && alive(pid)) process.kill(pid, sig);
      else child?.kill(sig);
    } catch {
      // already gone
    }
  };
  if (!gone()) {
    signal('SIGINT');
    if (!(await waitGone(15_000))) {
      signal('SIGQUIT');
      if (!(await waitGone(5_000))) {
        signal('SIGKILL');
        child?.kill('SIGKILL');
        await waitGone(5_000);
      }
    }
  }
  server.stopped = true;
  fs.rmSync(server.dir, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------------------------
// Measurements

const loadavg = () => Number(os.loadavg()[0].toFixed(2));

async function generate(work, statements) {
  const file = path.join(work, `select-${statements}.wkl`);
  const r = await mustRun(`generating a ${statements}-statement workload`, exampleBin, [
    'gen',
    '--out',
    file,
    '--statements',
    String(statements),
    '--sessions',
    String(SESSIONS),
    '--seed',
    String(statements),
  ]);
  const info = lastJson(r.stdout, 'bench_replay gen');
  console.log(
    `  generated ${file} (${statements} statements, ${SESSIONS} sessions, ${(info.file_bytes / 1e6).toFixed(1)} MB) in ${info.seconds.toFixed(1)} s`,
  );
  return file;
}

function lastJson(stdout, what) {
  const line = stdout.trim().split('\n').filter(Boolean).pop();
  try {
    return JSON.parse(line);
  } catch {
    throw new BenchError(`${what} did not print a JSON line (got ${JSON.stringify(line)})`);
  }
}

async function measured(what, work, command, args, { tolerate = [] } = {}) {
  const usageFile = path.join(work, `rusage-${Date.now()}-${Math.random().toString(36).slice(2)}.json`);
  const before = serverSample();
  const machineBefore = cpuAccounting.machine();
  const r = await run(python(), [rusageWrapper, usageFile, '--', command, ...args], { quiet: true });
  const machineAfter = cpuAccounting.machine();
  checkInterrupted();
  const server = await serverUse(before);
  let usage;
  try {
    usage = JSON.parse(fs.readFileSync(usageFile, 'utf8'));
  } catch {
    usage = undefined;
  }
  if (tolerate.includes(r.code)) return { code: r.code, stderr: r.stderr };
  if (r.code !== 0 || !usage) {
    const detail = [r.stdout, r.stderr].filter(Boolean).join('\n').trim().split('\n').slice(-15);
    throw new BenchError(`${what} failed (${r.signal ? `signal ${r.signal}` : `exit code ${r.code}`}):\n  ${detail.join('\n  ')}`);
  }
  // Busy CPU on the machine during the run that was neither this client nor the server.
  const machine =
    machineBefore && machineAfter
      ? {
          busy_s: machineAfter.busy_s - machineBefore.busy_s,
          steal_s: machineAfter.steal_s - machineBefore.steal_s,
        }
      : undefined;
  if (machine && server !== undefined) machine.other_s = Math.max(0, machine.busy_s - usage.cpu_s - server);
  return { stdout: r.stdout, stderr: r.stderr, usage, server, machine };
}

/** The server's CPU so far, when /proc can tell (Linux). */
function serverSample() {
  return server.pid && cpuAccounting.available(server.pid) ? cpuAccounting.sample(server.pid) : undefined;
}

/** The server's CPU seconds since `before`, once the run's backends have exited. */
async function serverUse(before) {
  if (!before) return undefined;
  await cpuAccounting.settle(server.pid, before.children);
  const after = cpuAccounting.sample(server.pid);
  return after ? after.cpu_s - before.cpu_s : undefined;
}

/**
 * Server CPU figures of a run: seconds, per 100k statements, cores busy over `wall_s` and share of
 * the machine; and the CPU other work on the machine used meanwhile (`other_*`, whole run).
 */
function cpuFigures({ server: cpu_s, machine, usage }, statements, wall_s) {
  const out = {};
  if (cpu_s !== undefined) {
    const cores = cpu_s / wall_s;
    Object.assign(out, {
      server_cpu_s: cpu_s,
      server_cpu_per_100k_s: (cpu_s / statements) * 1e5,
      server_cores: cores,
      server_share: cores / os.cpus().length,
    });
  }
  if (machine?.other_s !== undefined) {
    out.other_cpu_s = machine.other_s;
    out.other_cores = machine.other_s / usage.wall_s;
    out.steal_s = machine.steal_s;
  }
  return out;
}

let pythonPath;
const python = () => pythonPath;

/**
 * One pgbench run: for S seconds (`-T`, all clients stopped at once), or with --fixed-work the
 * same number of statements per client as the replay's sessions hold (`-t`), so that both end
 * unevenly, as a replay of a fixed workload does. By default the A runs' point selects; the
 * proxy variant gives its own protocol, script (with the statements per transaction), clients,
 * host and port. q/s counts statements; `latency_ms` is pgbench's average per transaction.
 */
async function runPgbench(
  ctx,
  label,
  replayed,
  {
    host = ctx.host,
    port = ctx.port,
    mode = 'simple',
    script = ['-S'],
    statementsPerTransaction = 1,
    clients = SESSIONS,
    threads = 2,
    tool = 'pgbench',
  } = {},
) {
  const load = loadavg();
  const length = settings.fixedWork && replayed ? ['-t', String(Math.round(replayed / clients))] : ['-T', String(settings.seconds)];
  const args = [
    '-h',
    host,
    '-p',
    String(port),
    '-U',
    'postgres',
    ...script,
    '-M',
    mode,
    '-c',
    String(clients),
    '-j',
    String(threads),
    ...length,
    '-n',
    'bench',
  ];
  const m = await measured(`pgbench (${label})`, ctx.work, ctx.tools.exe('pgbench'), args);
  const { stdout, usage } = m;
  const tps = stdout.match(/tps = ([\d.]+) \(without initial connection time\)/);
  const processed = stdout.match(/number of transactions actually processed: (\d+)/);
  const failed = stdout.match(/number of failed transactions: (\d+)/);
  const latency = stdout.match(/latency average = ([\d.]+) ms/);
  if (!tps || !processed) throw new BenchError(`cannot read pgbench's results (${label}):\n${stdout}`);
  if (failed && Number(failed[1]) !== 0) throw new BenchError(`pgbench reported ${failed[1]} failed transactions (${label})`);
  const transactions = Number(processed[1]);
  const statements = transactions * statementsPerTransaction;
  const result = {
    label,
    tool,
    mode,
    transactions,
    statements,
    qps: Number(tps[1]) * statementsPerTransaction,
    latency_ms: latency ? Number(latency[1]) : undefined,
    cpu_s: usage.cpu_s,
    cpu_user_s: usage.user_s,
    cpu_sys_s: usage.sys_s,
    cpu_per_100k_s: (usage.cpu_s / statements) * 1e5,
    peak_rss_mb: (usage.max_rss_kb * 1024) / 1e6,
    wall_s: usage.wall_s,
    ...cpuFigures(m, statements, usage.wall_s),
    loadavg_before: load,
  };
  printRun(result);
  return result;
}

/** The engine the action ships for this machine (dist/), if there is one. */
function shippedEngine() {
  const file = path.join(root, 'dist', `engine.${process.platform}-${process.arch}-gnu.node`);
  return fs.existsSync(file) ? file : undefined;
}

/**
 * Loads `file` through the shipped engine's Node addon in a fresh Node process, the way the
 * action and the CLI load a workload: the bench_replay figures are the engine's alone, these are
 * what a user's runner holds (Node's own RSS included, printed beside).
 */
function loadThroughAddon(engine, file, statements) {
  const r = spawnSync(process.execPath, [path.join(root, 'scripts/bench/addon-load.mjs'), engine, file], { encoding: 'utf8' });
  if (r.status !== 0) throw new BenchError(`loading ${path.basename(file)} through the addon failed: ${(r.stderr || '').trim()}`);
  const j = lastJson(r.stdout, 'addon-load');
  if (j.statements !== statements) {
    throw new BenchError(`the addon loaded ${j.statements} statements from ${path.basename(file)}, expected ${statements}`);
  }
  const result = {
    statements,
    peak_rss_mb: (j.peak_rss_kb * 1024) / 1e6,
    rss_before_load_mb: (j.rss_before_load_kb * 1024) / 1e6,
    cpu_s: j.cpu_ms / 1000,
    wall_s: j.wall_ms / 1000,
  };
  console.log(
    `  addon load of ${statements} statements (a Node process): peak RSS ${fmt(result.peak_rss_mb, 1)} MB ` +
      `(${fmt(result.rss_before_load_mb, 1)} MB before loading), CPU ${fmt(result.cpu_s, 3)} s`,
  );
  return result;
}

/**
 * Our replay; `driver` 'tokio-postgres' runs it on the earlier path (`--old-path`), `pin` false
 * with its worker threads unpinned (`--unpinned`), `serverTime` with the server's duration line
 * sent and read after every statement (`--server-time`).
 */
async function runOurs(ctx, label, file, statements, { driver = 'wire', pin = true, serverTime = false } = {}) {
  const load = loadavg();
  const conninfo =
    `host='${ctx.host}' port=${ctx.port} user=postgres dbname=bench sslmode=disable` +
    (serverTime ? ` ${serverTimeVariant.conninfoOptions}` : '');
  const m = await measured(`our replay (${label})`, ctx.work, exampleBin, [
    'replay',
    '--wkl',
    file,
    '--conninfo',
    conninfo,
    '--expect',
    String(statements),
    '--driver',
    driver,
    '--pin',
    pin ? 'on' : 'off',
    '--server-time',
    serverTime ? 'on' : 'off',
  ]);
  const { stdout, usage } = m;
  const j = lastJson(stdout, 'bench_replay replay');
  if (j.status !== 'completed' || j.ok !== statements || j.errors !== 0) {
    throw new BenchError(`our replay (${label}) did not run cleanly: ${JSON.stringify(j)}`);
  }
  const result = {
    label,
    tool: `pg-retest${driver === 'wire' ? '' : ' (tokio-postgres)'}${pin ? '' : ' (unpinned)'}${serverTime ? ' (server time)' : ''}`,
    driver,
    pinned: pin,
    ...(j.server_time && { server_time: j.server_time }),
    statements: j.ok,
    qps: j.qps,
    qps_including_load: j.qps_including_load,
    load_s: j.load_s,
    replay_wall_s: j.replay_wall_s,
    cpu_s: j.cpu_s,
    cpu_user_s: j.cpu_user_s,
    cpu_sys_s: j.cpu_sys_s,
    cpu_load_s: j.cpu_load_s,
    cpu_per_100k_s: (j.cpu_s / j.ok) * 1e5,
    cpu_replay_per_100k_s: ((j.cpu_s - j.cpu_load_s) / j.ok) * 1e5,
    cpu_s_wrapper: usage.cpu_s,
    peak_rss_mb: (j.peak_rss_kb * 1024) / 1e6,
    peak_rss_after_load_mb: (j.peak_rss_after_load_kb * 1024) / 1e6,
    workload_heap_mb: j.workload_heap_bytes / 1e6,
    distinct_texts: j.distinct_texts,
    latency_us: j.latency_us,
    wall_s: usage.wall_s,
    // The server is idle while we load the .wkl: its share is over the replay's own wall time.
    ...cpuFigures(m, j.ok, j.replay_wall_s),
    loadavg_before: load,
  };
  printRun(result);
  return result;
}

/**
 * The floor client (`bench_floor`, `--floor`): pgbench's statements for S seconds and nothing
 * else, on epoll, io_uring or Tokio. Undefined when io_uring is not available here.
 */
async function runFloor(ctx, label, io) {
  const load = loadavg();
  const m = await measured(
    `the floor client (${label})`,
    ctx.work,
    floorBin,
    [
      '--host',
      ctx.host,
      '--port',
      String(ctx.port),
      '--dbname',
      'bench',
      '--sessions',
      String(SESSIONS),
      '--threads',
      '2',
      '--seconds',
      String(settings.seconds),
      '--io',
      io,
    ],
    { tolerate: [FLOOR_UNAVAILABLE] },
  );
  if (m.code === FLOOR_UNAVAILABLE) {
    console.log(`  ${label.padEnd(12)} ${io} is not available here: ${m.stderr.trim()}`);
    return undefined;
  }
  const { stdout, usage } = m;
  const j = lastJson(stdout, 'bench_floor');
  const result = {
    label,
    tool: `floor (${io})`,
    io,
    statements: j.statements,
    qps: j.qps,
    cpu_s: usage.cpu_s,
    cpu_user_s: usage.user_s,
    cpu_sys_s: usage.sys_s,
    cpu_per_100k_s: (usage.cpu_s / j.statements) * 1e5,
    peak_rss_mb: (usage.max_rss_kb * 1024) / 1e6,
    wall_s: usage.wall_s,
    ...cpuFigures(m, j.statements, j.wall_s),
    loadavg_before: load,
  };
  printRun(result);
  return result;
}

function printRun(r) {
  const parts = [
    `  ${r.label.padEnd(12)} ${r.tool.padEnd(26)}`,
    `${fmt(r.qps, 0).padStart(7)} q/s`,
    `${r.statements} stmts`,
    `CPU ${fmt(r.cpu_s, 2)} s = ${fmt(r.cpu_per_100k_s, 2)} s/100k`,
    `peak RSS ${fmt(r.peak_rss_mb, 1)} MB`,
  ];
  if (r.server_cpu_s !== undefined) {
    parts.push(`server CPU ${fmt(r.server_cpu_per_100k_s, 2)} s/100k, ${fmt(r.server_cores, 2)} cores (${fmt(100 * r.server_share, 0)} %)`);
  }
  if (r.other_cpu_s !== undefined) parts.push(`other work ${fmt(r.other_cores, 2)} cores`);
  if (r.driver) {
    parts.push(`load ${fmt(r.load_s, 2)} s (CPU ${fmt(r.cpu_load_s, 2)} s)`);
    parts.push(`${fmt(r.qps_including_load, 0)} q/s incl. load`);
  }
  if (r.server_time) {
    parts.push(
      `server's time on ${r.server_time.timed} of ${r.server_time.ok} successes (median ${r.server_time.p50_us} µs, client's ${r.latency_us.p50} µs)`,
    );
  }
  parts.push(`loadavg ${r.loadavg_before}`);
  console.log(parts.join(', '));
}

// ---------------------------------------------------------------------------------------------
// Main

async function main() {
  const startedAt = new Date();
  console.log('=== pg-retest replay benchmark ===');
  const tools = findTools();
  pythonPath = tools.python;
  const machine = {
    cpus: os.cpus().length,
    cpu_model: os.cpus()[0]?.model ?? 'unknown',
    memory_gib: Number((os.totalmem() / 2 ** 30).toFixed(1)),
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    postgres: tools.version,
    pgbench: tools.pgbenchVersion,
  };
  const git = spawnSync('git', ['describe', '--always', '--dirty'], { cwd: root, encoding: 'utf8' });
  const revision = git.status === 0 ? git.stdout.trim() : 'unknown';
  console.log(`machine: ${machine.cpus} CPUs (${machine.cpu_model}), ${machine.memory_gib} GiB, ${machine.os}`);
  console.log(`revision: ${revision}`);
  console.log(
    `server: ${tools.version} from ${tools.bin}; load average ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  console.log('note: other work on this machine adds noise; runs alternate A B A B to spread it.');

  if (settings.build && !settings.onlyProxy) {
    console.log('\n--- building the release example ---');
    const examples = ['bench_replay', ...(settings.floor ? ['bench_floor'] : [])].flatMap((e) => ['--example', e]);
    await mustRun('cargo build', 'cargo', ['build', '--release', '-p', 'pg-retest-core', ...examples]);
  }
  for (const bin of settings.onlyProxy ? [] : [exampleBin, ...(settings.floor ? [floorBin] : [])]) {
    if (!fs.existsSync(bin)) throw new BenchError(`${bin} is missing; run without --skip-build`);
  }
  if (settings.proxy && !fs.existsSync(cliBundle))
    throw new BenchError(`${cliBundle} is missing (the proxy runs from it); run npm run build`);

  console.log('\n--- starting a throwaway PostgreSQL server ---');
  const srv = await startServer(tools);
  // The socket is the server's own directory (-k), as on the servers the gate starts.
  const ctx = { ...srv, tools, host: settings.transport === 'socket' ? srv.dir : '127.0.0.1' };
  console.log(`  port ${srv.port}, data in ${srv.dir}, settings: ${SERVER_SETTINGS.join(' ')}`);
  console.log(
    settings.onlyProxy
      ? `  pgbench connects to 127.0.0.1:${srv.port} (TCP), directly and through the proxy`
      : `  every client connects to ${settings.transport === 'socket' ? `the Unix-domain socket in ${srv.dir}` : `127.0.0.1:${srv.port} (TCP)`}`,
  );
  const pgUser = ['-h', '127.0.0.1', '-p', String(srv.port), '-U', 'postgres'];
  await mustRun('createdb', tools.exe('createdb'), [...pgUser, 'bench']);
  console.log('  pgbench -i -s 10 ...');
  const initStarted = Date.now();
  await mustRun('pgbench -i -s 10', tools.exe('pgbench'), [...pgUser, '-i', '-s', '10', '-q', 'bench'], { quiet: true });
  console.log(`  initialised in ${((Date.now() - initStarted) / 1000).toFixed(1)} s`);

  if (settings.onlyProxy) {
    const proxy = await runProxyVariant(ctx);
    console.log('\n=== summary ===');
    proxyVariant.print(proxy);
    writeResults({
      date: startedAt.toISOString(),
      revision,
      machine,
      loadavg_end: os.loadavg(),
      settings: { ...settings, server_settings: SERVER_SETTINGS },
      proxy,
    });
    return;
  }

  console.log('\n--- calibration (our replay) ---');
  // The first replay also warms the caches (server and file system); both size the workload, since
  // one short run on a shared machine can be far off.
  const calFile = await generate(srv.work, CALIBRATION_STATEMENTS);
  const warmup = await runOurs(ctx, 'warm-up', calFile, CALIBRATION_STATEMENTS);
  const cal = await runOurs(ctx, 'calibration', calFile, CALIBRATION_STATEMENTS);
  const calQps = (warmup.qps + cal.qps) / 2;
  const statements = Math.max(SESSIONS * 1000, Math.round((calQps * settings.seconds) / SESSIONS) * SESSIONS);
  console.log(`  ${fmt(calQps, 0)} q/s (mean of both) → ${statements} statements for ~${settings.seconds} s`);
  const file = await generate(srv.work, statements);

  console.log(
    `\n--- A/B runs: A = pgbench -S -M simple -c ${SESSIONS} -j 2 ${settings.fixedWork ? `-t ${Math.round(statements / SESSIONS)}` : `-T ${settings.seconds}`} -n, B = our replay (speed 0, ${SESSIONS} connections)` +
      `${settings.oldPath ? ', C = the same replay on the tokio-postgres path' : ''}` +
      `${settings.unpinned ? ', U = the same replay with unpinned threads' : ''}` +
      `${settings.serverTime ? ", T = the same replay with the server's duration line on (before B in even pairs)" : ''}` +
      `${settings.floor ? `, D/E/F = the floor client on epoll/io_uring/Tokio for ${settings.seconds} s` : ''} ---`,
  );
  const pairs = [];
  let uringAvailable = true;
  for (let i = 1; i <= settings.pairs; i++) {
    const a = await runPgbench(ctx, `A${i}`, statements);
    // T runs next to B, before it in every other pair, so that neither gains from its place.
    const tFirst = settings.serverTime && i % 2 === 0;
    const runT = () => runOurs(ctx, `T${i}`, file, statements, { serverTime: true });
    const tBefore = tFirst ? await runT() : undefined;
    const b = await runOurs(ctx, `B${i}`, file, statements);
    const t = settings.serverTime ? (tBefore ?? (await runT())) : undefined;
    const c = settings.oldPath ? await runOurs(ctx, `C${i}`, file, statements, { driver: 'tokio-postgres' }) : undefined;
    const u = settings.unpinned ? await runOurs(ctx, `U${i}`, file, statements, { pin: false }) : undefined;
    const d = settings.floor ? await runFloor(ctx, `D${i}`, 'epoll') : undefined;
    const e = settings.floor && uringAvailable ? await runFloor(ctx, `E${i}`, 'io_uring') : undefined;
    if (settings.floor && !e) uringAvailable = false;
    const f = settings.floor ? await runFloor(ctx, `F${i}`, 'tokio') : undefined;
    const pair = {
      pair: i,
      pgbench: a,
      ours: b,
      ratio: b.qps / a.qps,
      ratio_including_load: b.qps_including_load / a.qps,
      ...(c && { old_path: c, old_path_ratio: c.qps / a.qps }),
      ...(u && { unpinned: u, unpinned_ratio: u.qps / a.qps }),
      ...(t && { server_time: t, server_time_ratio: t.qps / a.qps, server_time_vs_ours: serverTimeVariant.cost(t, b) }),
      ...(d && { floor_epoll: d, floor_epoll_ratio: d.qps / a.qps }),
      ...(e && { floor_io_uring: e, floor_io_uring_ratio: e.qps / a.qps }),
      ...(f && { floor_tokio: f, floor_tokio_ratio: f.qps / a.qps }),
    };
    console.log(
      `  pair ${i}: ours/pgbench = ${fmt(pair.ratio, 3)} (${fmt(pair.ratio_including_load, 3)} counting the load time)` +
        (c ? `; tokio-postgres path/pgbench = ${fmt(pair.old_path_ratio, 3)}` : '') +
        (u ? `; unpinned/pgbench = ${fmt(pair.unpinned_ratio, 3)}` : '') +
        (t
          ? `; server time/pgbench = ${fmt(pair.server_time_ratio, 3)} (T/B: q/s ${fmt(pair.server_time_vs_ours.qps, 3)}${pair.server_time_vs_ours.server_cpu === undefined ? '' : `, server CPU ${fmt(pair.server_time_vs_ours.server_cpu, 3)}`})`
          : '') +
        (d ? `; floor epoll/pgbench = ${fmt(pair.floor_epoll_ratio, 3)}` : '') +
        (e ? `; floor io_uring/pgbench = ${fmt(pair.floor_io_uring_ratio, 3)}` : '') +
        (f ? `; floor Tokio/pgbench = ${fmt(pair.floor_tokio_ratio, 3)}` : ''),
    );
    pairs.push(pair);
  }

  const memory = [];
  const addonLoads = [];
  if (settings.memory) {
    console.log(`\n--- memory: load + replay (speed 0, ${SESSIONS} sessions) ---`);
    const engine = shippedEngine();
    for (const n of MEMORY_SIZES) {
      const f = await generate(srv.work, n);
      const r = await runOurs(ctx, `mem-${n >= 1e6 ? `${n / 1e6}M` : `${n / 1e3}k`}`, f, n);
      memory.push(r);
      if (engine) addonLoads.push(loadThroughAddon(engine, f, n));
      fs.rmSync(f, { force: true });
    }
    if (!engine) console.log('  (no engine in dist/ for this machine: the load through the addon is not measured)');
  }
  const proxy = settings.proxy ? await runProxyVariant(ctx) : undefined;

  // Summary
  const ratios = pairs.map((p) => p.ratio);
  const pgCpu = mean(pairs.map((p) => p.pgbench.cpu_per_100k_s));
  const ourCpu = mean(pairs.map((p) => p.ours.cpu_per_100k_s));
  const ourReplayCpu = mean(pairs.map((p) => p.ours.cpu_replay_per_100k_s));
  const meanOf = (runs, key) => (runs.every((r) => r[key] !== undefined) ? mean(runs.map((r) => r[key])) : undefined);
  const roles = { pgbench: pairs.map((p) => p.pgbench), ours: pairs.map((p) => p.ours) };
  if (settings.oldPath) roles.old_path = pairs.map((p) => p.old_path);
  if (settings.unpinned) roles.unpinned = pairs.map((p) => p.unpinned);
  if (settings.serverTime) roles.server_time = pairs.map((p) => p.server_time);
  if (settings.floor) roles.floor_epoll = pairs.map((p) => p.floor_epoll);
  if (settings.floor && uringAvailable) roles.floor_io_uring = pairs.map((p) => p.floor_io_uring);
  if (settings.floor) roles.floor_tokio = pairs.map((p) => p.floor_tokio);
  // Where the client's CPU goes: user space (ours without loading the .wkl) and the kernel.
  const per100k = (runs, f) => mean(runs.map((r) => (f(r) / r.statements) * 1e5));
  const split = Object.fromEntries(
    Object.entries(roles).map(([role, runs]) => [
      role,
      {
        user_per_100k_s: per100k(runs, (r) => r.cpu_user_s - (r.cpu_load_s ?? 0)),
        sys_per_100k_s: per100k(runs, (r) => r.cpu_sys_s),
      },
    ]),
  );
  const summary = {
    pgbench_qps_mean: mean(pairs.map((p) => p.pgbench.qps)),
    ours_qps_mean: mean(pairs.map((p) => p.ours.qps)),
    ratio_per_pair: ratios,
    ratio_mean: mean(ratios),
    ratio_ci95: interval95(ratios),
    ratio_min: Math.min(...ratios),
    ratio_max: Math.max(...ratios),
    ratio_including_load_mean: mean(pairs.map((p) => p.ratio_including_load)),
    pgbench_cpu_per_100k_s: pgCpu,
    ours_cpu_per_100k_s: ourCpu,
    ours_cpu_replay_only_per_100k_s: ourReplayCpu,
    cpu_ratio_per_pair: pairs.map((p) => p.ours.cpu_per_100k_s / p.pgbench.cpu_per_100k_s),
    ours_peak_rss_mb_ab_runs: Math.max(...pairs.map((p) => p.ours.peak_rss_mb)),
    ab_statements: statements,
    client_cpu_split: split,
    server: Object.fromEntries(
      Object.entries(roles).map(([role, runs]) => [
        role,
        {
          cpu_per_100k_s: meanOf(runs, 'server_cpu_per_100k_s'),
          cores: meanOf(runs, 'server_cores'),
          share: meanOf(runs, 'server_share'),
          other_work_cores: meanOf(runs, 'other_cores'),
        },
      ]),
    ),
  };
  summary.cpu_ratio_ci95 = interval95(summary.cpu_ratio_per_pair);
  // Our replay's variants (`--old-path`, `--unpinned`, `--server-time`), each against pgbench in the same pairs.
  for (const role of ['old_path', 'unpinned', 'server_time'].filter((r) => roles[r])) {
    const ratios = pairs.map((p) => p[`${role}_ratio`]);
    Object.assign(summary, {
      [`${role}_qps_mean`]: mean(roles[role].map((r) => r.qps)),
      [`${role}_ratio_per_pair`]: ratios,
      [`${role}_ratio_mean`]: mean(ratios),
      [`${role}_ratio_ci95`]: interval95(ratios),
      [`${role}_cpu_per_100k_s`]: mean(roles[role].map((r) => r.cpu_per_100k_s)),
      [`${role}_cpu_replay_only_per_100k_s`]: mean(roles[role].map((r) => r.cpu_replay_per_100k_s)),
    });
  }
  if (settings.serverTime) summary.server_time_vs_ours = serverTimeVariant.summary(pairs);
  if (settings.floor) {
    // Each client's q/s and CPU against pgbench's in the same pairs.
    summary.floor = Object.fromEntries(
      ['floor_epoll', 'floor_io_uring', 'floor_tokio']
        .filter((role) => roles[role])
        .map((role) => [
          role,
          {
            qps_mean: mean(roles[role].map((r) => r.qps)),
            ratio_mean: mean(pairs.map((p) => p[role].qps / p.pgbench.qps)),
            ratio_ci95: interval95(pairs.map((p) => p[role].qps / p.pgbench.qps)),
            cpu_per_100k_s: mean(roles[role].map((r) => r.cpu_per_100k_s)),
            cpu_vs_pgbench: mean(roles[role].map((r) => r.cpu_per_100k_s)) / pgCpu,
          },
        ]),
    );
    summary.ours_cpu_vs_pgbench = ourCpu / pgCpu;
    summary.ours_cpu_replay_only_vs_pgbench = ourReplayCpu / pgCpu;
  }
  const mem320 = memory.find((m) => m.statements === 320_000);
  const mem1m = memory.find((m) => m.statements === 1_000_000);
  if (mem320) summary.peak_rss_mb_320k = mem320.peak_rss_mb;
  if (mem1m) summary.peak_rss_mb_1m = mem1m.peak_rss_mb;
  const cpuLimit = TARGETS.cpuVsPgbench * pgCpu;
  const targets = {
    ratio_mean: { target: `>= ${TARGETS.ratio}`, value: summary.ratio_mean, met: summary.ratio_mean >= TARGETS.ratio },
    cpu_per_statement: {
      target: `<= ${TARGETS.cpuVsPgbench} x pgbench = ${fmt(cpuLimit, 3)} s/100k`,
      value: ourCpu,
      met: ourCpu <= cpuLimit,
    },
    // pgbench has nothing like loading a .wkl: the per-statement cost alone, for comparison.
    cpu_per_statement_replay_alone: {
      target: `<= ${TARGETS.cpuVsPgbench} x pgbench = ${fmt(cpuLimit, 3)} s/100k`,
      value: ourReplayCpu,
      met: ourReplayCpu <= cpuLimit,
    },
  };
  if (mem320)
    targets.rss_320k = { target: `<= ${TARGETS.rss320kMB} MB`, value: mem320.peak_rss_mb, met: mem320.peak_rss_mb <= TARGETS.rss320kMB };
  if (mem1m) targets.rss_1m = { target: `<= ${TARGETS.rss1MMB} MB`, value: mem1m.peak_rss_mb, met: mem1m.peak_rss_mb <= TARGETS.rss1MMB };

  console.log('\n=== summary ===');
  const rows = [['run', 'tool', 'statements', 'q/s', 'CPU s', 'CPU s/100k', 'peak RSS MB', 'loadavg']];
  const runs = [
    warmup,
    cal,
    ...pairs.flatMap((p) =>
      [p.pgbench, p.ours, p.server_time, p.old_path, p.unpinned, p.floor_epoll, p.floor_io_uring, p.floor_tokio].filter(Boolean),
    ),
    ...memory,
  ];
  for (const r of runs) {
    rows.push([
      r.label,
      r.tool,
      String(r.statements),
      fmt(r.qps, 0),
      fmt(r.cpu_s, 2),
      fmt(r.cpu_per_100k_s, 3),
      fmt(r.peak_rss_mb, 1),
      String(r.loadavg_before),
    ]);
  }
  printTable(rows);
  console.log('');
  console.log(`q/s mean: pgbench ${fmt(summary.pgbench_qps_mean, 0)}, ours ${fmt(summary.ours_qps_mean, 0)}`);
  console.log(
    `ratio ours/pgbench: ${ratios.map((x) => fmt(x, 3)).join(', ')} → mean ${fmt(summary.ratio_mean, 3)}, ${fmtInterval(summary.ratio_ci95)} (${fmt(summary.ratio_including_load_mean, 3)} counting our load time)`,
  );
  console.log(
    `client CPU per 100k statements: pgbench ${fmt(pgCpu, 3)} s, ours ${fmt(ourCpu, 3)} s (replay alone ${fmt(ourReplayCpu, 3)} s, the rest is loading the .wkl)`,
  );
  console.log(
    `client CPU ours/pgbench per pair: ${summary.cpu_ratio_per_pair.map((x) => fmt(x, 3)).join(', ')} → ${fmtInterval(summary.cpu_ratio_ci95)}`,
  );
  const variants = { old_path: 'tokio-postgres path', unpinned: 'unpinned threads', server_time: 'server time on' };
  for (const [role, name] of Object.entries(variants).filter(([role]) => roles[role])) {
    console.log(
      `${name}: ratio ${summary[`${role}_ratio_per_pair`].map((x) => fmt(x, 3)).join(', ')} → mean ${fmt(summary[`${role}_ratio_mean`], 3)} (${fmtInterval(summary[`${role}_ratio_ci95`])}), ` +
        `client CPU ${fmt(summary[`${role}_cpu_per_100k_s`], 3)} s/100k (replay alone ${fmt(summary[`${role}_cpu_replay_only_per_100k_s`], 3)} s)`,
    );
  }
  if (settings.serverTime) serverTimeVariant.print(summary.server_time_vs_ours);
  if (summary.floor) {
    const floors = Object.entries(summary.floor).map(
      ([role, f]) =>
        `${role.replace('floor_', '')} ${fmt(f.cpu_per_100k_s, 3)} s/100k (${fmt(f.cpu_vs_pgbench, 2)} x pgbench), q/s ratio ${fmt(f.ratio_mean, 3)} (${fmtInterval(f.ratio_ci95)})`,
    );
    console.log(
      `floor client: ${floors.join('; ')}${uringAvailable ? '' : '; io_uring not available here'}; ` +
        `ours ${fmt(summary.ours_cpu_vs_pgbench, 2)} x pgbench (${fmt(summary.ours_cpu_replay_only_vs_pgbench, 2)} x replay alone)`,
    );
  }
  console.log(
    `client CPU per 100k statements, user space / kernel: ${Object.entries(split)
      .map(([role, c]) => `${role} ${fmt(c.user_per_100k_s, 3)} / ${fmt(c.sys_per_100k_s, 3)} s`)
      .join(', ')} (ours without loading)`,
  );
  for (const [role, f] of Object.entries(summary.server)) {
    if (f.cores === undefined) continue;
    console.log(
      `server during ${role} runs: ${fmt(f.cpu_per_100k_s, 3)} CPU s/100k statements, ${fmt(f.cores, 2)} cores busy (${fmt(100 * f.share, 0)} % of the machine)` +
        (f.other_work_cores !== undefined ? `; other work on the machine: ${fmt(f.other_work_cores, 2)} cores` : ''),
    );
  }
  console.log(`our peak RSS in the A/B runs (${statements} statements): ${fmt(summary.ours_peak_rss_mb_ab_runs, 1)} MB`);
  for (const m of memory) {
    console.log(
      `peak RSS, load + replay of ${m.statements} statements: ${fmt(m.peak_rss_mb, 1)} MB (${fmt(m.peak_rss_after_load_mb, 1)} MB by the end of loading; compact workload ${fmt(m.workload_heap_mb, 1)} MB)`,
    );
  }
  for (const a of addonLoads) {
    console.log(
      `through the addon (a Node process), load of ${a.statements} statements: peak RSS ${fmt(a.peak_rss_mb, 1)} MB, of which ${fmt(a.rss_before_load_mb, 1)} MB before loading; CPU ${fmt(a.cpu_s, 3)} s`,
    );
  }
  console.log('targets:');
  for (const [name, t] of Object.entries(targets)) {
    console.log(`  ${name.padEnd(36)} ${t.target.padEnd(20)} ${fmt(t.value, 3).padStart(9)}  ${t.met ? 'met' : 'NOT met'}`);
  }
  const busiest = Math.max(...runs.map((r) => r.loadavg_before));
  summary.max_loadavg = busiest;
  if (busiest > machine.cpus) {
    console.log(
      `note: the 1-minute load average reached ${busiest} on ${machine.cpus} CPUs: other work competed with these runs, so the figures are noisy.`,
    );
  }
  if (proxy) proxyVariant.print(proxy);
  console.log('(MB = 10^6 bytes; q/s of pgbench exclude its connection time, ours are statements / replay wall time)');

  const results = {
    date: startedAt.toISOString(),
    revision,
    machine,
    loadavg_end: os.loadavg(),
    settings: { ...settings, sessions: SESSIONS, server_settings: SERVER_SETTINGS },
    warmup,
    calibration: cal,
    pairs,
    memory,
    addon_loads: addonLoads,
    summary,
    targets,
    ...(proxy && { proxy }),
  };
  writeResults(results);
}

/** The recording proxy's runs (`--proxy`, `--only-proxy`): scripts/bench/proxy.mjs. */
async function runProxyVariant(ctx) {
  console.log(
    `\n--- the recording proxy: pgbench -c ${proxyVariant.CLIENTS} -j 2 -T ${settings.seconds} -n, -M simple|extended|prepared, -S and TPC-B-like, ` +
      `direct (D) and through the proxy (P), ${settings.pairs} pairs, both over TCP ---`,
  );
  return proxyVariant.measure(ctx, {
    root,
    python: python(),
    rusageWrapper,
    pairs: settings.pairs,
    pgbench: (c, label, options) => runPgbench(c, label, undefined, options),
    BenchError,
    checkInterrupted,
  });
}

function writeResults(results) {
  fs.mkdirSync(path.dirname(settings.out), { recursive: true });
  fs.writeFileSync(settings.out, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nresults written to ${path.relative(process.cwd(), settings.out) || settings.out}`);
}

function printTable(rows) {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  for (const [i, r] of rows.entries()) {
    console.log(r.map((cell, c) => (c < 2 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  '));
    if (i === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  }
}

let exitCode = 0;
try {
  await main();
} catch (e) {
  exitCode = interrupted ? 130 : 1;
  console.error(`\nbench: ${e instanceof BenchError ? e.message : (e?.stack ?? e)}`);
} finally {
  try {
    if (server.dir) console.log('\n--- stopping the server ---');
    await stopServer();
  } catch (e) {
    console.error(`bench: stopping the server: ${e.message}`);
    exitCode ||= 1;
  }
}
process.exitCode = exitCode;
