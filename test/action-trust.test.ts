// Whose code the action runs, and with what in reach, through the action's entry point:
// pull_request_target and workflow_run (a write token and secrets, whoever opened the PR) are
// refused in the modes that run the checked-out code unless allow-untrusted-pr-code says the
// workflow means it; a fork's pull_request is said to run without secrets; and the environment
// the action's children inherit has no credentials in it.
import fs from 'node:fs';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { removeCredentials } from '../src/action/child-env.js';
import { run } from '../src/action/main.js';
import { captureStdout, type InProcessStep, setupStep, workflowRunEvent } from './support/action-in-process.js';

const saved = { ...process.env };
let stdout: () => string;
let files: InProcessStep;

beforeEach(() => {
  stdout = captureStdout();
});
afterEach(() => {
  vi.restoreAllMocks();
  process.env = { ...saved };
});
afterAll(() => {
  process.exitCode = 0;
});

const pr = (headRepo: string | null) => ({
  pull_request: {
    number: 9,
    base: { sha: 'a'.repeat(40), repo: { full_name: 'acme/shop' } },
    head: { sha: 'b'.repeat(40), repo: headRepo === null ? null : { full_name: headRepo } },
  },
});

/** One step; nothing may be asked of GitHub before a refusal: nothing listens at its API URL. */
function setup(event: string, payload: unknown, inputs: Record<string, string>): void {
  files = setupStep({ name: event, payload }, 'http://127.0.0.1:1', inputs);
}

const errors = () =>
  stdout()
    .split('\n')
    .filter((line) => line.startsWith('::error::'));
const gateInputs = { workload: 'db/workload.wkl', migrations: 'db/migrations/*.sql' };

describe('pull_request_target and workflow_run', () => {
  it('pull_request_target in mode gate: exit 2, one line naming the risk, the fork-safe pair and the input; nothing started', async () => {
    setup('pull_request_target', pr('acme/shop'), gateInputs);
    expect(await run(process.env)).toBe(2);
    expect(errors()).toEqual([
      "::error::refusing mode: gate on a pull_request_target event: the pull request's migrations (SQL run as a superuser), migrate-command and seed-command would run with this workflow's write token and secrets in reach; " +
        'run the gate on pull_request (comment: never, the JSON report uploaded as an artifact) and post it from a workflow_run job with mode: comment ' +
        '(examples/workflows/fork-safe-gate.yml and fork-safe-comment.yml), or set allow-untrusted-pr-code: true if this job only runs code you trust',
    ]);
    expect(fs.readFileSync(files.summary, 'utf8')).toMatch(/pg-retest: error\n\nrefusing mode: gate on a pull\\_request\\_target event/);
    expect(fs.readFileSync(files.state, 'utf8')).toBe('');
  });

  it('says when the PR comes from a fork (or from a repository GitHub no longer knows)', async () => {
    for (const head of ['someone/shop', null]) {
      setup('pull_request_target', pr(head), gateInputs);
      expect(await run(process.env)).toBe(2);
      expect(errors().at(-1)).toMatch(
        /^::error::refusing mode: gate on a pull_request_target event: pull request #9 comes from a fork, and its migrations/,
      );
    }
  });

  it('workflow_run in mode gate and mode capacity is refused alike; mode comment is not', async () => {
    for (const mode of ['gate', 'capacity']) {
      setup('workflow_run', workflowRunEvent().payload, { ...gateInputs, mode });
      expect(await run(process.env)).toBe(2);
      expect(errors().at(-1)).toMatch(
        new RegExp(`^::error::refusing mode: ${mode} on a workflow_run event: .*allow-untrusted-pr-code: true`),
      );
    }
    setup('workflow_run', workflowRunEvent().payload, { mode: 'comment' });
    expect(await run(process.env)).toBe(2);
    expect(errors().at(-1)).toBe(
      '::error::input `report` is required with mode: comment: the JSON report (json-report-path) of the gate run, e.g. from a downloaded artifact',
    );
  });

  it('allow-untrusted-pr-code: true runs it, with a warning (here it stops at the next check, the missing workload)', async () => {
    setup('pull_request_target', pr('someone/shop'), { 'allow-untrusted-pr-code': 'true', migrations: 'db/migrations/*.sql' });
    expect(await run(process.env)).toBe(2);
    expect(stdout()).toMatch(
      /^::warning::running mode: gate on a pull_request_target event \(allow-untrusted-pr-code: true\): the checked-out code runs with this workflow's write token and secrets in reach$/m,
    );
    expect(errors()).toEqual([expect.stringMatching(/^::error::input `workload`/)]);
  });

  it('a bad value of allow-untrusted-pr-code is an input error', async () => {
    setup('pull_request_target', pr('acme/shop'), { ...gateInputs, 'allow-untrusted-pr-code': 'sure' });
    expect(await run(process.env)).toBe(2);
    expect(errors()).toEqual(["::error::input `allow-untrusted-pr-code`: expected true or false, got 'sure'"]);
  });
});

describe('a pull_request from a fork', () => {
  it('is run, and the log says it has a read-only token and no secrets', async () => {
    setup('pull_request', pr('someone/shop'), { migrations: 'db/migrations/*.sql' });
    expect(await run(process.env)).toBe(2);
    expect(stdout()).toMatch(
      /^pull request #9 comes from a fork: GitHub gives this run a read-only token and no secrets .*workflow_run job with mode: comment/m,
    );
    expect(errors()).toEqual([expect.stringMatching(/^::error::input `workload`/)]);
  });

  it('from this repository: no such line', async () => {
    setup('pull_request', pr('acme/shop'), { migrations: 'db/migrations/*.sql' });
    expect(await run(process.env)).toBe(2);
    expect(stdout()).not.toMatch(/comes from a fork/);
  });
});

describe('the environment the action passes on', () => {
  it('has no inputs, no runner credentials and no variable holding the token; other variables stay', async () => {
    setup('pull_request', pr('acme/shop'), { migrations: 'db/migrations/*.sql', 'database-url': 'postgres://u:s3cret-pw@h/db' });
    Object.assign(process.env, {
      ACTIONS_RUNTIME_TOKEN: 'runtime-token-value',
      ACTIONS_RUNTIME_URL: 'https://pipelines.example/',
      ACTIONS_RESULTS_URL: 'https://results.example/',
      ACTIONS_CACHE_URL: 'https://cache.example/',
      ACTIONS_ID_TOKEN_REQUEST_TOKEN: 'oidc-request-token',
      ACTIONS_ID_TOKEN_REQUEST_URL: 'https://oidc.example/',
      GITHUB_TOKEN: 'ghs_test_token',
      GH_TOKEN: 'ghs_test_token',
      MY_SETTING: 'kept',
    });
    await run(process.env);
    const left = Object.keys(process.env);
    expect(
      left.filter((name) => name.startsWith('INPUT_') || name.startsWith('ACTIONS_') || ['GITHUB_TOKEN', 'GH_TOKEN'].includes(name)),
    ).toEqual([]);
    expect(JSON.stringify(process.env)).not.toMatch(/ghs_test_token|runtime-token-value|oidc-request-token|s3cret-pw/);
    expect(process.env.MY_SETTING).toBe('kept');
    expect(process.env.GITHUB_REPOSITORY).toBe('acme/shop');
  });

  it('removeCredentials: a short token is not looked for in values (it would match by chance)', () => {
    const env: NodeJS.ProcessEnv = { A: 'abc', B: 'xyz', INPUT_X: '1', ACTIONS_RUNTIME_TOKEN: 't' };
    expect(removeCredentials(env, ['abc', undefined])).toEqual(['ACTIONS_RUNTIME_TOKEN', 'INPUT_X']);
    expect(env).toEqual({ A: 'abc', B: 'xyz' });
  });
});
