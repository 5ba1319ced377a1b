// The action's entry point (`run()` of src/action/main.ts) called in the test's own process, with
// the environment a runner gives a JavaScript action set in `process.env`: the event and its
// payload, the command files (GITHUB_STEP_SUMMARY, GITHUB_OUTPUT, GITHUB_STATE) and the inputs
// as INPUT_* with the defaults action.yml gives them. The workflow commands the step prints
// (`::warning::`, `::error::`) are captured from stdout.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, vi } from 'vitest';
import { type FakeGitHub, startFakeGitHub } from './github-api.js';

/**
 * The REST stand-in for the calling file's steps, emptied before each test; `process.env` and
 * the exit status are put back and stdout captures undone after them. Call at the file's top level.
 * @returns the stand-in, once started
 */
export function useFakeGitHub(): () => FakeGitHub {
  let github: FakeGitHub | undefined;
  const saved = { ...process.env };
  beforeAll(async () => {
    github = await startFakeGitHub('acme/shop');
  });
  beforeEach(() => {
    github!.comments.length = 0;
    github!.calls.length = 0;
    github!.pulls.length = 0;
    github!.rateLimit = undefined;
    github!.rejectWrites = undefined;
    github!.userLogin = undefined;
  });
  afterEach(() => vi.restoreAllMocks());
  afterAll(async () => {
    process.env = saved;
    process.exitCode = 0;
    await github?.close();
  });
  return () => github!;
}

/** The defaults the runner passes for the action's own inputs (action.yml). */
export const INPUT_DEFAULTS = {
  'github-token': 'ghs_test_token',
  mode: 'gate',
  comment: 'always',
  'comment-id': 'default',
  'fail-on-regression': 'true',
};

export interface InProcessStep {
  summary: string;
  output: string;
  state: string;
}

/** The steps' directories (command files, RUNNER_TEMP), removed once the test file is done. */
const stepDirs: string[] = [];
afterAll(() => {
  for (const dir of stepDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * Sets `process.env` up for one step (the caller restores it after its tests).
 * @param event the event's name and payload
 * @param apiUrl GITHUB_API_URL
 * @param inputs the inputs given, on top of {@link INPUT_DEFAULTS}
 * @returns the command files
 */
export function setupStep(event: { name: string; payload: unknown }, apiUrl: string, inputs: Record<string, string>): InProcessStep {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'action-step-'));
  stepDirs.push(dir);
  const file = (name: string, text: string) => {
    const at = path.join(dir, name);
    fs.writeFileSync(at, text);
    return at;
  };
  const files = { summary: file('summary', ''), output: file('output', ''), state: file('state', '') };
  Object.assign(process.env, {
    GITHUB_REPOSITORY: 'acme/shop',
    GITHUB_EVENT_NAME: event.name,
    GITHUB_EVENT_PATH: file('event.json', JSON.stringify(event.payload)),
    GITHUB_API_URL: apiUrl,
    GITHUB_STEP_SUMMARY: files.summary,
    GITHUB_OUTPUT: files.output,
    GITHUB_STATE: files.state,
    GITHUB_WORKSPACE: process.cwd(),
    RUNNER_TEMP: dir,
  });
  for (const [name, value] of Object.entries({ ...INPUT_DEFAULTS, ...inputs })) process.env[`INPUT_${name.toUpperCase()}`] = value;
  return files;
}

/**
 * Collects what the step writes to stdout (restore with `vi.restoreAllMocks()`).
 * @returns the text so far, on each call
 */
export function captureStdout(): () => string {
  let stdout = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  });
  return () => stdout;
}

/**
 * The `name<<delimiter` file format of GITHUB_OUTPUT and GITHUB_STATE.
 * @param file the file
 * @returns name → value
 */
export function readCommandFile(file: string): Record<string, string> {
  const values: Record<string, string> = {};
  const lines = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n') : [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^([^<]+)<<(.+)$/.exec(lines[i]!);
    if (!m) continue;
    const value: string[] = [];
    while (++i < lines.length && lines[i] !== m[2]) value.push(lines[i]!);
    values[m[1]!] = value.join('\n');
  }
  return values;
}

/** A workflow_run payload of a run on branch `fix` of `someone`, at `c…c`, listing these PRs. */
export const workflowRunEvent = (pullRequests: unknown[] = []) => ({
  name: 'workflow_run',
  payload: {
    workflow_run: {
      head_sha: 'c'.repeat(40),
      head_branch: 'fix',
      head_repository: { owner: { login: 'someone' } },
      pull_requests: pullRequests,
    },
  },
});
