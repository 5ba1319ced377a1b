// Owns one throwaway PostgreSQL server for the test harness (postgres.mjs).
//
// Why a separate process: a test process can die in ways that run no cleanup
// code (SIGKILL, an OOM kill, a crash in native code). PostgreSQL would then
// keep running and its data directory would stay behind. This supervisor is
// tied to its parent by its stdin pipe: the kernel closes that pipe whenever
// the parent goes away, however it goes, and the supervisor then shuts the
// server down and removes the directory. A normal stop() uses the same path
// (it writes "stop" and closes the pipe), so there is only one way to stop.
//
// Input:  argv[2] is a JSON object (see SupervisorConfig in postgres.mjs).
// Output: one JSON object per line on stdout:
//   {"type":"initdb-failed","code":N,"output":"..."}
//   {"type":"spawned","pid":N}
//   {"type":"exit","code":N|null,"signal":"SIG..."|null}
//   {"type":"stopped"}

import { spawn } from 'node:child_process';
import fs from 'node:fs';

const config = JSON.parse(process.argv[2]);

/** Time PostgreSQL gets for a fast shutdown (SIGINT) before an immediate one. */
const FAST_SHUTDOWN_MS = 30_000;
/** Time an immediate shutdown (SIGQUIT) gets before SIGKILL. */
const IMMEDIATE_SHUTDOWN_MS = 5_000;

/** @type {import('node:child_process').ChildProcess | undefined} */
let current;
/** Resolves when the current child has exited. */
let currentExit = Promise.resolve();
let postgresRunning = false;
let stopping = false;

// The parent may be gone already; a write to a closed pipe must not kill us
// before the cleanup is done.
process.stdout.on('error', () => {});

function report(message) {
  try {
    process.stdout.write(`${JSON.stringify(message)}\n`);
  } catch {
    // parent gone
  }
}

function childOptions(stdio) {
  const options = { stdio, env: config.env, cwd: config.cwd };
  if (config.uid !== undefined) {
    options.uid = config.uid;
    options.gid = config.gid;
  }
  return options;
}

function track(child) {
  current = child;
  currentExit = new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
}

function runInitdb() {
  return new Promise((resolve) => {
    const child = spawn(config.initdb, config.initdbArgs, childOptions(['ignore', 'pipe', 'pipe']));
    track(child);
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.once('error', (err) => resolve({ code: -1, output: `${output}${err.message}\n` }));
    child.once('close', (code, signal) => resolve({ code: code ?? signal, output }));
  });
}

function startPostgres() {
  const log = fs.openSync(config.logFile, 'a');
  const child = spawn(config.postgres, config.postgresArgs, childOptions(['ignore', log, log]));
  fs.closeSync(log);
  track(child);
  child.once('error', (err) => {
    fs.appendFileSync(config.logFile, `supervisor: could not start ${config.postgres}: ${err.message}\n`);
    postgresRunning = false;
    report({ type: 'exit', code: -1, signal: null });
  });
  child.once('spawn', () => {
    postgresRunning = true;
    report({ type: 'spawned', pid: child.pid });
  });
  child.once('exit', (code, signal) => {
    postgresRunning = false;
    report({ type: 'exit', code, signal });
  });
}

function waitFor(promise, ms) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    promise.then(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

function signal(name) {
  try {
    current?.kill(name);
  } catch {
    // already gone
  }
}

async function removeDir() {
  for (let attempt = 0; attempt < 10; attempt++) {
    try {
      fs.rmSync(config.removeDir, { recursive: true, force: true });
      return;
    } catch {
      // A backend orphaned by a killed postmaster may still be writing; retry.
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

async function shutdown() {
  if (stopping) return;
  stopping = true;
  if (current && current.exitCode === null && current.signalCode === null) {
    // initdb is simply killed; PostgreSQL gets the fast, then the immediate
    // shutdown, and SIGKILL only as the last resort.
    if (postgresRunning) {
      signal('SIGINT');
      if (!(await waitFor(currentExit, FAST_SHUTDOWN_MS))) {
        signal('SIGQUIT');
        if (!(await waitFor(currentExit, IMMEDIATE_SHUTDOWN_MS))) signal('SIGKILL');
      }
    } else {
      signal('SIGKILL');
    }
    await waitFor(currentExit, IMMEDIATE_SHUTDOWN_MS);
  }
  await removeDir();
  report({ type: 'stopped' });
  process.exit(0);
}

let input = '';
process.stdin.on('data', (chunk) => {
  input += chunk;
  if (input.split('\n').some((line) => line.trim() === 'stop')) void shutdown();
});
process.stdin.on('end', () => void shutdown());
process.stdin.on('error', () => void shutdown());
process.stdin.on('close', () => void shutdown());
for (const name of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(name, () => void shutdown());

const init = await runInitdb();
if (config.pwfile) fs.rmSync(config.pwfile, { force: true });
if (stopping) {
  // shutdown() is already running and will exit.
} else if (init.code !== 0) {
  report({ type: 'initdb-failed', code: init.code, output: init.output });
  // Wait for the parent's stop, which removes the directory.
} else {
  startPostgres();
}
