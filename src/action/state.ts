/**
 * The only caller of `core.saveState`/`getState`. The main step saves its run directory as soon
 * as it exists (so the post step can clean up even when the main step was killed a moment
 * later) and points TMPDIR at it: every server data directory and base checkout the gate
 * creates then lives under one directory the post step knows.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as core from '@actions/core';
import { createProgressDisplay } from '../runtime/progress.js';
import { trapInterrupts } from '../runtime/interrupt.js';
import type { RunContext } from '../runtime/run-context.js';
import { actionLogger, progressOutput } from './logger.js';
import { State } from './names.js';

/**
 * Creates the run directory, makes it the temp directory of this process and its children,
 * and records it for the post step.
 * @param env the environment (RUNNER_TEMP)
 * @returns the directory
 */
export function startRunDir(env: NodeJS.ProcessEnv): string {
  const parent = env.RUNNER_TEMP || os.tmpdir();
  const dir = path.join(parent, `pg-retest-action-${crypto.randomBytes(6).toString('hex')}`);
  fs.mkdirSync(dir, { recursive: true });
  // A server started as another OS user (when the runner is root) must reach its data
  // directory below this one; the directories inside are private.
  fs.chmodSync(dir, 0o755);
  core.saveState(State.RunDir, dir);
  core.saveState(State.StartedAt, new Date().toISOString());
  process.env.TMPDIR = dir;
  return dir;
}

/** What the main step recorded, or undefined for what it did not get to. */
export function savedState(): { runDir?: string; startedAt?: string } {
  return { runDir: core.getState(State.RunDir) || undefined, startedAt: core.getState(State.StartedAt) || undefined };
}

/**
 * Runs a measuring run (the gate, the capacity sweep) in a run directory of its own, with the
 * action's logger and progress and an interrupt that stops it; removes the directory after.
 * @param env the runner's environment
 * @param workspace the repository
 * @param measure the run
 * @returns what the run returned
 */
export async function inRunDir<T>(env: NodeJS.ProcessEnv, workspace: string, measure: (context: RunContext) => Promise<T>): Promise<T> {
  const runDir = startRunDir(env);
  const interrupt = trapInterrupts((name) => core.warning(`received ${name}: stopping the replay and the server`));
  try {
    return await measure({
      logger: actionLogger,
      createProgress: () => createProgressDisplay(progressOutput, false),
      env,
      cwd: workspace,
      signal: interrupt.signal,
    });
  } finally {
    interrupt.dispose();
    fs.rmSync(runDir, { recursive: true, force: true });
  }
}
