// `mode: comment` (a workflow_run posting a gate's report) through the action's entry point
// against the REST stand-in: a pull request that cannot be looked up costs the comment only,
// never the report in the job summary or the step's status; a PR of another repository that
// the event lists is never commented on here.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { run } from '../src/action/main.js';
import { type FakeGitHub, startFakeGitHub } from './support/github-api.js';

let github: FakeGitHub;
const saved = { ...process.env };
beforeAll(async () => {
  github = await startFakeGitHub('acme/shop');
});
afterAll(async () => {
  process.env = saved;
  process.exitCode = 0;
  await github.close();
});
beforeEach(() => {
  github.comments.length = 0;
  github.calls.length = 0;
  github.pulls.length = 0;
});

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'comment-mode-'));
const report = fileURLToPath(new URL('./fixtures/reports/regression.json', import.meta.url));

function setup(payload: unknown, apiUrl: string): { summary: string; output: string } {
  const file = (name: string, text: string) => {
    const at = path.join(dir, `${name}-${Math.random().toString(36).slice(2)}`);
    fs.writeFileSync(at, text);
    return at;
  };
  const paths = { summary: file('summary', ''), output: file('output', '') };
  Object.assign(process.env, {
    GITHUB_REPOSITORY: 'acme/shop',
    GITHUB_EVENT_NAME: 'workflow_run',
    GITHUB_EVENT_PATH: file('event', JSON.stringify(payload)),
    GITHUB_API_URL: apiUrl,
    GITHUB_STEP_SUMMARY: paths.summary,
    GITHUB_OUTPUT: paths.output,
    GITHUB_WORKSPACE: process.cwd(),
    INPUT_MODE: 'comment',
    INPUT_REPORT: report,
    'INPUT_GITHUB-TOKEN': 'ghs_test_token',
    INPUT_COMMENT: 'always',
    'INPUT_COMMENT-ID': 'default',
  });
  return paths;
}

const forkRun = (pullRequests: unknown[]) => ({
  workflow_run: { head_sha: 'c'.repeat(40), head_branch: 'fix', head_repository: { owner: { login: 'someone' } }, pull_requests: pullRequests },
});

describe('mode: comment', () => {
  it('a GitHub API that cannot be reached: the report is in the summary, the outputs are set, the step passes', async () => {
    const { summary, output } = setup(forkRun([]), 'http://127.0.0.1:1');
    expect(await run(process.env)).toBe(0);
    expect(fs.readFileSync(summary, 'utf8')).toMatch(/pg-retest: regression/);
    expect(fs.readFileSync(output, 'utf8')).toMatch(/result/);
  });

  it('a pull request the event lists into another repository is not commented on here', async () => {
    setup(forkRun([{ number: 7, head: { sha: 'c'.repeat(40) }, base: { repo: { url: 'https://api.github.com/repos/someone/shop' } } }]), github.url);
    expect(await run(process.env)).toBe(0);
    expect(github.calls.filter((c) => c.method === 'POST')).toEqual([]);
    expect(github.calls.some((c) => c.method === 'GET' && c.path === '/repos/acme/shop/pulls')).toBe(true);
  });
});
