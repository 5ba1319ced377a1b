// The one test command (`npm test`): checks the layers of src/, builds what the tests need,
// starts one throwaway PostgreSQL server (its data, and every test's files, on tmpfs when there
// is room), runs vitest's timing-sensitive files first with only the Rust tests' build at nice
// 19 beside them, then the rest of vitest beside the Rust tests, stops the server, and ends with
// one line of totals: `N passed, N failed`.
//
//   node scripts/test.mjs [--skip-build] [--skip-cargo] [--skip-vitest] [vitest args...]
//
// Steps that fail without reporting test results (a build error, a runner that
// crashes or cannot start) count as one failure each, so the totals never say
// "0 failed" for a run that did not work. The exit status is 0 only when every
// step ran and nothing failed. See docs/testing.md.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { installShippedEngine } from './lib/shipped-engine.mjs';
import { chooseTestTmpdir, removeTestTmpdir } from './lib/test-tmpdir.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const flags = new Set(argv.filter((arg) => arg.startsWith('--skip-')));
const vitestArgs = argv.filter((arg) => !arg.startsWith('--skip-'));
for (const flag of flags) {
  if (!['--skip-build', '--skip-cargo', '--skip-vitest'].includes(flag)) {
    console.error(`test: unknown option ${flag}`);
    process.exit(2);
  }
}

/**
 * One entry per step; `runner` marks the test runners, whose counts are shown.
 * @type {{ name: string, runner?: boolean, passed: number, failed: number, skipped: number, note: string }[]}
 */
const results = [];
/** The children running (the two suites run side by side), so that an interrupt reaches both. */
const running = new Set();
let interrupted = false;

/**
 * How long one step may take before it is stopped and counted as failed, so
 * that a hung test cannot use up CI's whole time budget.
 */
const STEP_TIMEOUT_MS = Number(process.env.PG_RETEST_TEST_STEP_TIMEOUT_MIN || 50) * 60_000;
/** After SIGTERM, how long a step's processes get before SIGKILL. */
const KILL_GRACE_MS = 15_000;

/**
 * Signals a step's whole process group: cargo's test binaries, and the test
 * servers' supervisors (which shut their servers down on SIGTERM), would
 * otherwise outlive it.
 */
function signalGroup(child, signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    // group already gone
  }
}

function stopStep(child) {
  signalGroup(child, 'SIGTERM');
  setTimeout(() => signalGroup(child, 'SIGKILL'), KILL_GRACE_MS).unref();
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    interrupted = true;
    for (const child of running) stopStep(child);
  });
}

function heading(text) {
  console.log(`\n=== ${text} ===`);
}

/**
 * Runs a command in a process group of its own, with its output shown live;
 * `onLine` sees each stdout line.
 * @returns {Promise<{ code: number | null, signal: string | null, error?: Error, timedOut?: boolean }>}
 */
function run(command, args, { env = process.env, onLine, quiet = false, onStart } = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: root,
      env,
      detached: true,
      stdio: quiet ? 'ignore' : ['ignore', onLine ? 'pipe' : 'inherit', 'inherit'],
    });
    running.add(child);
    onStart?.(child);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      console.error(`\ntest: ${command} ${args.join(' ')} still running after ${STEP_TIMEOUT_MS / 60_000} min; stopping it`);
      stopStep(child);
    }, STEP_TIMEOUT_MS);
    let pending = '';
    if (onLine) {
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk) => {
        process.stdout.write(chunk);
        pending += chunk;
        const lines = pending.split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) onLine(line);
      });
    }
    let done = false;
    const finish = (outcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      running.delete(child);
      if (onLine && pending) onLine(pending);
      pending = '';
      resolve({ ...outcome, timedOut });
    };
    child.once('error', (error) => finish({ code: null, signal: null, error }));
    child.once('exit', (code, signal) => {
      // Normally stdout closes right after; a leftover grandchild may hold it
      // open, and must not keep this script waiting.
      const grace = setTimeout(() => {
        child.stdout?.destroy();
        finish({ code, signal });
      }, 5_000);
      if (!child.stdout || child.stdout.readableEnded || child.stdout.destroyed) {
        clearTimeout(grace);
        finish({ code, signal });
      } else {
        child.stdout.once('close', () => {
          clearTimeout(grace);
          finish({ code, signal });
        });
      }
    });
  });
}

function describeExit({ code, signal, error, timedOut }) {
  if (error) return `could not start: ${error.message}`;
  if (timedOut) return `timed out after ${STEP_TIMEOUT_MS / 60_000} min`;
  if (interrupted) return 'interrupted';
  return signal ? `killed by ${signal}` : `exit ${code}`;
}

/** Seconds since `start` (performance.now()), for the summary. */
function since(start) {
  return (performance.now() - start) / 1000;
}

/** A step that produces no test counts: one failure if it did not succeed. */
async function step(name, command, args) {
  if (interrupted) return;
  heading(name);
  const start = performance.now();
  const outcome = await run(command, args);
  const ok = !outcome.error && outcome.code === 0;
  results.push({
    name,
    passed: 0,
    failed: ok ? 0 : 1,
    skipped: 0,
    note: ok ? 'ok' : `failed (${describeExit(outcome)})`,
    seconds: since(start),
  });
}

const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g;

/** The ten slowest vitest tests, printed before the summary. */
const slowest = [];

/**
 * The slowest tests of a vitest JSON report.
 * @param {{ testResults: { name: string, assertionResults: { fullName: string, duration?: number }[] }[] }} json
 * @param {number} n how many
 * @returns {{ name: string, ms: number }[]}
 */
function slowestTests(json, n) {
  return json.testResults
    .flatMap((file) =>
      file.assertionResults.map((t) => ({ name: `${path.relative(root, file.name)} > ${t.fullName}`, ms: t.duration ?? 0 })),
    )
    .sort((a, b) => b.ms - a.ms)
    .slice(0, n);
}

/**
 * How the Rust tests build: the ci profile unoptimised (`opt-level=0`), our own crates also with
 * debug assertions and arithmetic overflow checks, as a debug build would. Unoptimised, the whole
 * dependency tree compiles in 178 s of CPU instead of 326 s (measured from cold, 2026-11-26), and the
 * tests then run in 74 s instead of 65 s: on two cores shared with vitest the compile is what the
 * Rust lane waits on. clippy takes the same settings, so that it shares the dependencies'
 * build-script outputs (libpg_query's C build, bindgen) instead of running them again.
 */
const CARGO_TEST_PROFILE = [
  '--profile',
  'ci',
  '--config',
  'profile.ci.opt-level=0',
  ...['pg-retest-core', 'pg-retest-node', 'pg-retest-wkl'].flatMap((crate) =>
    ['codegen-units=256', 'debug-assertions=true', 'overflow-checks=true'].flatMap((setting) => [
      '--config',
      `profile.ci.package.${crate}.${setting}`,
    ]),
  ),
];

/**
 * Puts the engine the tests load into build/: the shipped release engine when dist/ holds the
 * build of these very native sources (scripts/lib/shipped-engine.mjs), else a build of the ci
 * profile: optimised like the shipped engine, without its LTO (minutes on 2 cores).
 */
async function engineForTests() {
  if (interrupted) return;
  const shipped = installShippedEngine(root);
  if ('out' in shipped) {
    heading('engine: the shipped one');
    const note = `dist/${path.basename(shipped.out)}, the release build of these sources (native-sources ${shipped.sourceHash.slice(0, 12)})`;
    console.log(note);
    results.push({ name: 'engine for the tests', passed: 0, failed: 0, skipped: 0, note, seconds: 0 });
    return;
  }
  console.log(`\nbuilding the engine: ${shipped.reason}`);
  await step('build:native (profile ci)', process.execPath, [path.join(root, 'scripts', 'build-native.mjs'), '--profile', 'ci']);
}

/**
 * clippy with every warning an error. It runs in the Rust lane after cargo test, beside vitest's
 * parallel group, and with the test build's settings (CARGO_TEST_PROFILE), so that it shares the
 * dependencies' build-script outputs: about 30 s of checking on a fresh clone.
 */
async function clippy() {
  if (interrupted) return;
  await step('cargo clippy (warnings are errors)', 'cargo', [
    'clippy',
    '--workspace',
    '--all-targets',
    ...CARGO_TEST_PROFILE,
    '--',
    '-D',
    'warnings',
  ]);
}

async function cargoTests(env) {
  if (interrupted) return;
  heading('cargo test --workspace --profile ci');
  const start = performance.now();
  const counts = { passed: 0, failed: 0, skipped: 0, suites: 0 };
  const outcome = await run('cargo', ['test', '--workspace', '--no-fail-fast', ...CARGO_TEST_PROFILE], {
    env,
    onLine(raw) {
      const line = raw.replace(ANSI, '');
      const match = /^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored/.exec(line);
      if (!match) return;
      counts.suites += 1;
      counts.passed += Number(match[1]);
      counts.failed += Number(match[2]);
      counts.skipped += Number(match[3]);
    },
  });
  let note = `${counts.suites} test binaries, ${describeExit(outcome)}`;
  let { failed } = counts;
  if ((outcome.error || outcome.code !== 0) && failed === 0) {
    // cargo failed without a failing test: it did not compile, or a test binary crashed.
    failed = 1;
    note = `cargo failed without a test failure (${describeExit(outcome)}): see its output above`;
  }
  results.push({ name: 'cargo test', runner: true, passed: counts.passed, failed, skipped: counts.skipped, note, seconds: since(start) });
}

/** What the vitest runs reported, added up over the groups (see main). */
const vitestTotals = { passed: 0, failed: 0, skipped: 0, seconds: 0, notes: [] };

/**
 * One vitest project (vitest.config.ts): `alone` or `parallel`. A project with no file the
 * arguments select passes empty; `vitestSummary` counts a run that selected nothing at all.
 */
async function vitestProject(project, env) {
  if (interrupted) return;
  heading(`vitest run --project ${project}`);
  const start = performance.now();
  const vitest = path.join(root, 'node_modules', 'vitest', 'vitest.mjs');
  const report = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-vitest-')), 'report.json');
  const outcome = await run(
    process.execPath,
    [
      vitest,
      'run',
      '--project',
      project,
      '--passWithNoTests',
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${report}`,
      ...vitestArgs,
    ],
    { env },
  );
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  let note = `${project}: ${describeExit(outcome)}`;
  try {
    const json = JSON.parse(fs.readFileSync(report, 'utf8'));
    passed = json.numPassedTests;
    failed = json.numFailedTests;
    skipped = (json.numPendingTests ?? 0) + (json.numTodoTests ?? 0);
    // A test file that fails to load has no tests to count; count the file.
    const brokenFiles = json.testResults.filter((file) => file.status === 'failed' && file.assertionResults.length === 0);
    slowest.push(...slowestTests(json, 10));
    failed += brokenFiles.length;
    if (brokenFiles.length) note += `, ${brokenFiles.length} test file(s) failed to load`;
  } catch (err) {
    note = `${project}: no JSON report (${err.code === 'ENOENT' ? 'not written' : err.message}), ${describeExit(outcome)}`;
  } finally {
    fs.rmSync(path.dirname(report), { recursive: true, force: true });
  }
  if ((outcome.error || outcome.code !== 0) && failed === 0) {
    failed = 1;
    note = `${project}: vitest failed without a test failure (${note}): see its output above`;
  }
  vitestTotals.passed += passed;
  vitestTotals.failed += failed;
  vitestTotals.skipped += skipped;
  vitestTotals.seconds += since(start);
  vitestTotals.notes.push(note);
}

/** One summary line for the vitest runs; selecting no test at all is a failure, not a pass. */
function vitestSummary() {
  const { passed, failed, skipped, seconds, notes } = vitestTotals;
  if (notes.length === 0) return;
  const none = passed + failed + skipped === 0;
  results.push({
    name: 'vitest',
    runner: true,
    passed,
    failed: none ? 1 : failed,
    skipped,
    note: none ? `no test matched ${vitestArgs.join(' ') || 'the configuration'}` : notes.join('; '),
    seconds,
  });
  slowest.sort((a, b) => b.ms - a.ms).splice(10);
}

/**
 * The Rust tests' build (`cargo test --no-run`) at the lowest CPU priority, started beside the
 * alone group: those files use about one of the two cores, mostly waiting on replays that keep
 * the captured timing, and a compile at nice 19 takes only what they leave (a timing compared
 * between replays sees no competition for the CPU). Its output is not shown: the `cargo test`
 * that follows builds whatever is left at normal priority and reports any error.
 * @returns {{ stop: () => Promise<void> }} stops the build if it is still running
 */
function startBackgroundBuild(env) {
  let child;
  const done = run('nice', ['-n', '19', 'cargo', 'test', '--workspace', '--no-run', ...CARGO_TEST_PROFILE], {
    env,
    quiet: true,
    onStart: (started) => (child = started),
  });
  return {
    async stop() {
      // Stopped, cargo keeps every unit it finished; the `cargo test` after it builds the rest.
      if (child.exitCode === null && child.signalCode === null) stopStep(child);
      await done;
    },
  };
}
/**
 * The driver apps of test/drivers/ (pgx, pgjdbc, psycopg) built at nice 19 beside the alone
 * group, like the Rust tests' build: on a new machine their build is about 90 s of CPU (Go's
 * standard library, Maven, pip), which the parallel files that run the apps would otherwise wait
 * for. Not stopped: it is awaited before those files start, so they never build at the same time
 * (a build writes its stamp last; an app it could not build is built, and its error shown, by the
 * test that runs it). Its output is not shown.
 */
function startDriverApps(env) {
  return run('nice', ['-n', '19', process.execPath, path.join(root, 'test', 'drivers', 'install.mjs')], {
    env,
    quiet: true,
  });
}

async function main() {
  // The layers of src/ (.dependency-cruiser.cjs): two seconds, before minutes of building.
  await step('layers (dependency-cruiser)', 'npm', ['run', '--silent', 'lint:layers']);
  // The TypeScript and JavaScript as Biome lints and formats them (biome.jsonc); warnings fail it too. A second.
  await step('lint and format (biome ci)', 'npm', ['run', '--silent', 'lint:code']);
  if (!flags.has('--skip-build')) {
    // Formatting first: a second, and the Rust sources stay as rustfmt writes them.
    await step('cargo fmt --check', 'cargo', ['fmt', '--all', '--', '--check']);
    await engineForTests();
    await step('build:ts (typecheck)', 'npm', ['run', '--silent', 'build:ts']);
  }

  // Where the servers' data directories and every test's files go: tmpfs when there is room
  // (scripts/lib/test-tmpdir.mjs); set before anything below asks os.tmpdir().
  let tmp = { dir: undefined, reason: '' };
  try {
    tmp = chooseTestTmpdir(process.env);
  } catch (err) {
    console.error(`test: ${err.message}`);
    return 1;
  }
  heading('temp directory');
  console.log(tmp.reason);
  if (tmp.dir) process.env.TMPDIR = tmp.dir;
  const env = { ...process.env };
  let server;
  if (!interrupted && !(flags.has('--skip-cargo') && flags.has('--skip-vitest'))) {
    if (env.PG_RETEST_TEST_URL) {
      heading('PostgreSQL: using PG_RETEST_TEST_URL from the environment');
    } else {
      heading('PostgreSQL: starting a throwaway server');
      try {
        const { SHARED_SERVER_SETTINGS, startPostgres } = await import('../test/support/postgres.mjs');
        server = await startPostgres({ settings: SHARED_SERVER_SETTINGS });
        env.PG_RETEST_TEST_URL = server.url;
        console.log(`PostgreSQL ${server.version} (${server.source}) at ${server.url}`);
      } catch (err) {
        console.error(err instanceof Error ? err.message : err);
        results.push({ name: 'test server', passed: 0, failed: 1, skipped: 0, note: 'could not start PostgreSQL' });
      }
    }
  }

  try {
    if (env.PG_RETEST_TEST_URL) {
      // First the files whose assertions compare timings between replays (vitest's `alone`
      // project), on a machine with nothing else at normal priority: only the Rust tests' build
      // at nice 19 beside them. Then the rest of vitest and the Rust tests side by side: both
      // spend most of their time waiting on PostgreSQL, each in databases of its own.
      const runVitest = !flags.has('--skip-vitest');
      const runCargo = !flags.has('--skip-cargo');
      if (runVitest) {
        const build = runCargo ? startBackgroundBuild(env) : undefined;
        const drivers = startDriverApps(env);
        await vitestProject('alone', env);
        await build?.stop();
        await drivers;
      }
      const rust = async () => {
        await cargoTests(env);
        if (!flags.has('--skip-build')) await clippy();
      };
      await Promise.all([runCargo ? rust() : undefined, runVitest ? vitestProject('parallel', env) : undefined]);
      vitestSummary();
    }
  } finally {
    if (server) await server.stop();
    removeTestTmpdir(tmp);
  }

  if (interrupted) results.push({ name: 'interrupted', passed: 0, failed: 1, skipped: 0, note: 'stopped by a signal' });

  if (slowest.length > 0) {
    heading('slowest tests');
    for (const t of slowest) console.log(`${(t.ms / 1000).toFixed(1).padStart(7)} s  ${t.name}`);
  }
  heading('summary');
  for (const r of results) {
    const counts = r.runner ? `${r.passed} passed, ${r.failed} failed, ${r.skipped} skipped; ` : '';
    const took = r.seconds === undefined ? '' : ` (${r.seconds.toFixed(0)} s)`;
    console.log(`${r.name}: ${counts}${r.note}${took}`);
  }
  const passed = results.reduce((sum, r) => sum + r.passed, 0);
  const failed = results.reduce((sum, r) => sum + r.failed, 0);
  console.log(`${passed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    console.log('0 passed, 1 failed');
    process.exit(1);
  },
);
