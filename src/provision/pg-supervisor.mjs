// Owns one throwaway PostgreSQL server started by pg-server.mjs (for the CLI and the test harness).
//
// Why a process of its own: the CLI or a test process can end in ways that run none of its
// cleanup code (SIGKILL, an OOM kill, a crash in the native engine), and
// PostgreSQL would then keep running with its data directory left behind. This
// process reads a pipe from its parent; the kernel closes that pipe however the
// parent ends, and the supervisor then stops the server and removes the
// directory. A normal stop uses the same path (the parent writes "stop" and
// closes the pipe), so there is only one way a server ends.
//
// Plain JavaScript with only node: imports, so that it runs both next to its
// source and bundled as dist/pg-supervisor.js.
//
// stdin:   the first line is the JSON config {initdb, initdbArgs, postgres, postgresArgs, env,
//          cwd, logFile, removeDir, uid?, gid?}; then "stop", or the end of the pipe. The config
//          holds an environment (a DATABASE_URL, tokens): on the command line any local user
//          would read it in /proc/<pid>/cmdline, a pipe only we read.
// stdout:  one JSON event per line:
//          {"event":"initdb-failed","code":N,"output":"..."}
//          {"event":"running","pid":N}
//          {"event":"exited","code":N|null,"signal":"SIG..."|null}
//          {"event":"stopped"}

import { spawn } from 'node:child_process';
import fs from 'node:fs';

/** A fast shutdown (SIGINT) gets this long before an immediate one (SIGQUIT). */
const FAST_SHUTDOWN_MS = 20_000;
/** An immediate shutdown gets this long before SIGKILL. */
const IMMEDIATE_SHUTDOWN_MS = 5_000;

/** Set from the first line of stdin. */
let config;

/** @type {import('node:child_process').ChildProcess | undefined} */
let child;
/** @type {Promise<void>} */
let childGone = Promise.resolve();
let serverUp = false;
let shuttingDown = false;

// Writing to a parent that is gone must not kill us before the cleanup.
process.stdout.on('error', () => {});

function emit(event) {
  try {
    process.stdout.write(`${JSON.stringify(event)}\n`);
  } catch {
    // nobody is listening any more
  }
}

function spawnAs(file, args, stdio) {
  const options = { stdio, env: config.env, cwd: config.cwd };
  if (config.uid !== undefined) Object.assign(options, { uid: config.uid, gid: config.gid });
  const spawned = spawn(file, args, options);
  child = spawned;
  childGone = new Promise((resolve) => {
    spawned.once('exit', () => resolve());
    spawned.once('error', () => resolve());
  });
  return spawned;
}

function initdb() {
  return new Promise((resolve) => {
    const proc = spawnAs(config.initdb, config.initdbArgs, ['ignore', 'pipe', 'pipe']);
    let output = '';
    proc.stdout.on('data', (chunk) => (output += chunk));
    proc.stderr.on('data', (chunk) => (output += chunk));
    proc.once('error', (err) => resolve({ code: -1, output: `${output}${err.message}\n` }));
    proc.once('close', (code, signal) => resolve({ code: code ?? signal, output }));
  });
}

function startServer() {
  const log = fs.openSync(config.logFile, 'a');
  const proc = spawnAs(config.postgres, config.postgresArgs, ['ignore', log, log]);
  fs.closeSync(log);
  proc.once('spawn', () => {
    serverUp = true;
    emit({ event: 'running', pid: proc.pid });
  });
  proc.once('error', (err) => {
    fs.appendFileSync(config.logFile, `supervisor: cannot start ${config.postgres}: ${err.message}\n`);
    serverUp = false;
    emit({ event: 'exited', code: -1, signal: null });
  });
  proc.once('exit', (code, signal) => {
    serverUp = false;
    emit({ event: 'exited', code, signal });
  });
}

function within(promise, ms) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    promise.then(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

function send(signal) {
  try {
    child?.kill(signal);
  } catch {
    // already gone
  }
}

async function removeDirectory() {
  if (config === undefined) return; // the parent went before sending anything
  for (let attempt = 0; attempt < 10; attempt++) {
    try {
      fs.rmSync(config.removeDir, { recursive: true, force: true });
      return;
    } catch {
      // a backend of a killed postmaster may still be writing; try again shortly
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

async function shutdown() {
  if (shuttingDown) return;
  shuttingDown = true;
  if (child && child.exitCode === null && child.signalCode === null) {
    if (serverUp) {
      // Fast shutdown first; immediate and then SIGKILL only if it hangs.
      send('SIGINT');
      if (!(await within(childGone, FAST_SHUTDOWN_MS))) {
        send('SIGQUIT');
        if (!(await within(childGone, IMMEDIATE_SHUTDOWN_MS))) send('SIGKILL');
      }
    } else {
      send('SIGKILL'); // initdb: nothing worth keeping
    }
    await within(childGone, IMMEDIATE_SHUTDOWN_MS);
  }
  await removeDirectory();
  emit({ event: 'stopped' });
  process.exit(0);
}

/** Resolves with the config once its line has come in; the lines after it are commands. */
const configured = new Promise((resolve) => {
  let received = '';
  process.stdin.on('data', (chunk) => {
    const lines = (received + chunk).split('\n');
    received = lines.pop() ?? '';
    for (const raw of lines) {
      const line = raw.trim();
      if (config === undefined) {
        config = JSON.parse(line);
        resolve(config);
      } else if (line === 'stop') void shutdown();
    }
  });
});
for (const event of ['end', 'close', 'error']) process.stdin.on(event, () => void shutdown());
// A Ctrl-C in a terminal reaches the whole process group, us included: stop
// the server as the parent would have asked.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => void shutdown());

await configured;
const result = await initdb();
if (!shuttingDown) {
  if (result.code === 0) startServer();
  else emit({ event: 'initdb-failed', code: result.code, output: result.output });
}
