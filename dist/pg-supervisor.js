import { createRequire as __pgRetestCreateRequire } from 'node:module'; const require = __pgRetestCreateRequire(import.meta.url);

// src/provision/pg-supervisor.mjs
import { spawn } from "node:child_process";
import fs from "node:fs";
var FAST_SHUTDOWN_MS = 2e4;
var IMMEDIATE_SHUTDOWN_MS = 5e3;
var config;
var child;
var childGone = Promise.resolve();
var serverUp = false;
var shuttingDown = false;
process.stdout.on("error", () => {
});
function emit(event) {
  try {
    process.stdout.write(`${JSON.stringify(event)}
`);
  } catch {
  }
}
function spawnAs(file, args, stdio) {
  const options = { stdio, env: config.env, cwd: config.cwd };
  if (config.uid !== void 0) Object.assign(options, { uid: config.uid, gid: config.gid });
  const spawned = spawn(file, args, options);
  child = spawned;
  childGone = new Promise((resolve) => {
    spawned.once("exit", () => resolve());
    spawned.once("error", () => resolve());
  });
  return spawned;
}
function initdb() {
  return new Promise((resolve) => {
    const proc = spawnAs(config.initdb, config.initdbArgs, ["ignore", "pipe", "pipe"]);
    let output = "";
    proc.stdout.on("data", (chunk) => output += chunk);
    proc.stderr.on("data", (chunk) => output += chunk);
    proc.once("error", (err) => resolve({ code: -1, output: `${output}${err.message}
` }));
    proc.once("close", (code, signal) => resolve({ code: code ?? signal, output }));
  });
}
function startServer() {
  const log = fs.openSync(config.logFile, "a");
  const proc = spawnAs(config.postgres, config.postgresArgs, ["ignore", log, log]);
  fs.closeSync(log);
  proc.once("spawn", () => {
    serverUp = true;
    emit({ event: "running", pid: proc.pid });
  });
  proc.once("error", (err) => {
    fs.appendFileSync(config.logFile, `supervisor: cannot start ${config.postgres}: ${err.message}
`);
    serverUp = false;
    emit({ event: "exited", code: -1, signal: null });
  });
  proc.once("exit", (code, signal) => {
    serverUp = false;
    emit({ event: "exited", code, signal });
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
  }
}
async function removeDirectory() {
  if (config === void 0) return;
  for (let attempt = 0; attempt < 10; attempt++) {
    try {
      fs.rmSync(config.removeDir, { recursive: true, force: true });
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
async function shutdown() {
  if (shuttingDown) return;
  shuttingDown = true;
  if (child && child.exitCode === null && child.signalCode === null) {
    if (serverUp) {
      send("SIGINT");
      if (!await within(childGone, FAST_SHUTDOWN_MS)) {
        send("SIGQUIT");
        if (!await within(childGone, IMMEDIATE_SHUTDOWN_MS)) send("SIGKILL");
      }
    } else {
      send("SIGKILL");
    }
    await within(childGone, IMMEDIATE_SHUTDOWN_MS);
  }
  await removeDirectory();
  emit({ event: "stopped" });
  process.exit(0);
}
var configured = new Promise((resolve) => {
  let received = "";
  process.stdin.on("data", (chunk) => {
    const lines = (received + chunk).split("\n");
    received = lines.pop() ?? "";
    for (const raw of lines) {
      const line = raw.trim();
      if (config === void 0) {
        config = JSON.parse(line);
        resolve(config);
      } else if (line === "stop") void shutdown();
    }
  });
});
for (const event of ["end", "close", "error"]) process.stdin.on(event, () => void shutdown());
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => void shutdown());
await configured;
var result = await initdb();
if (!shuttingDown) {
  if (result.code === 0) startServer();
  else emit({ event: "initdb-failed", code: result.code, output: result.output });
}
