// GitHub's rate limits against the REST stand-in: a refusal for a rate limit (429; 403 with
// retry-after, x-ratelimit-remaining: 0 or the secondary-limit message) is waited out as GitHub
// asks and the request sent again, at most 3 tries and 60 s of waiting per request; then the
// comment is a warning that says "rate limit", and the step's status and summary stand. The
// sleep is injected and records the waits: no test waits for real.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeEach, describe, expect, it } from 'vitest';
import { commentBody, upsertComment } from '../src/action/comment.js';
import { createGitHubApi, GitHubApiError, type RetryPolicy } from '../src/action/github-api.js';
import { run } from '../src/action/main.js';
import { captureStdout, setupStep, useFakeGitHub, workflowRunEvent } from './support/action-in-process.js';
import { type FakeGitHub, SECONDARY_LIMIT_MESSAGE } from './support/github-api.js';

const repo = { owner: 'acme', repo: 'shop' };
const NOW = Date.UTC(2025, 0, 1, 12, 0, 0);
let waits: number[];
const retry: Partial<RetryPolicy> = {
  sleep: async (ms) => {
    waits.push(ms);
  },
  now: () => NOW,
};
const fake = useFakeGitHub();
let github: FakeGitHub;
beforeEach(() => {
  github = fake();
  waits = [];
});

const api = () => createGitHubApi(github.url, 'ghs_test_token', retry);
const posts = () => github.calls.filter((c) => c.method === 'POST');

describe('a rate-limited request', () => {
  it('429 with retry-after: waits as long as GitHub says, then sends it again', async () => {
    github.rateLimit = { times: 1, status: 429, headers: { 'retry-after': '7' }, message: 'API rate limit exceeded', method: 'POST' };
    const result = await upsertComment(api(), repo, 3, commentBody('x', 'one'), 'x');
    expect(result?.action).toBe('created');
    expect(waits).toEqual([7_000]);
    expect(posts()).toHaveLength(2);
  });

  it("403 with the secondary limit's message and no header: 20 s, then 40 s, then reported as a rate limit", async () => {
    github.rateLimit = { times: 10, status: 403, headers: {}, message: SECONDARY_LIMIT_MESSAGE, method: 'POST' };
    await expect(upsertComment(api(), repo, 3, commentBody('x', 'one'), 'x')).rejects.toThrow(
      /^cannot write the PR comment now \(POST \/repos\/acme\/shop\/issues\/3\/comments answered 403: You have exceeded a secondary rate limit.* \(rate limit: still after 3 tries over 60 s\)\): GitHub's rate limit; the report is in the job summary$/,
    );
    expect(waits).toEqual([20_000, 40_000]);
    expect(posts()).toHaveLength(3);
  });

  it('403 with x-ratelimit-remaining: 0 waits until x-ratelimit-reset (and a second)', async () => {
    const reset = String(NOW / 1000 + 30);
    github.rateLimit = {
      times: 1,
      status: 403,
      headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': reset },
      message: 'API rate limit exceeded for installation',
      method: 'POST',
    };
    expect((await upsertComment(api(), repo, 3, commentBody('x', 'one'), 'x'))?.action).toBe('created');
    expect(waits).toEqual([31_000]);
  });

  it('a wait longer than the 60 s budget is not begun: reported at once', async () => {
    github.rateLimit = { times: 1, status: 429, headers: { 'retry-after': '3600' }, message: 'API rate limit exceeded' };
    const error = await api()
      .listComments(repo, 3)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(GitHubApiError);
    expect((error as GitHubApiError).rateLimited).toBe(true);
    expect((error as GitHubApiError).message).toBe(
      'GET /repos/acme/shop/issues/3/comments: 429 API rate limit exceeded (rate limit: GitHub asked to wait 3600 s, more than the 60 s the action waits)',
    );
    expect(waits).toEqual([]);
  });

  it('a 403 that is no rate limit (a read-only token) is not retried', async () => {
    github.rejectWrites = 403;
    try {
      await expect(upsertComment(api(), repo, 3, commentBody('x', 'one'), 'x')).rejects.toThrow(/pull-requests: write/);
      expect(posts()).toHaveLength(1);
      expect(waits).toEqual([]);
    } finally {
      github.rejectWrites = undefined;
    }
  });
});

describe('mode: comment under a rate limit, through the entry point', () => {
  const report = fileURLToPath(new URL('./fixtures/reports/regression.json', import.meta.url));

  /** A fork's PR found by its head; the step's stdout captured. */
  function setup(): { summary: string; stdout: () => string } {
    const { summary } = setupStep(workflowRunEvent(), github.url, { mode: 'comment', report });
    github.pulls.push({ number: 5, head: { sha: 'c'.repeat(40), label: 'someone:fix' } });
    return { summary, stdout: captureStdout() };
  }

  it('a limit that lasts: a warning that says rate limit; the summary has the report and the step passes', async () => {
    const { summary, stdout } = setup();
    github.rateLimit = { times: 100, status: 429, headers: { 'retry-after': '1' }, message: 'API rate limit exceeded', method: 'POST' };
    expect(await run(process.env, { retry })).toBe(0);
    expect(stdout()).toMatch(
      /^::warning::cannot write the PR comment now \(POST .* answered 429: API rate limit exceeded \(rate limit: still after 3 tries over 2 s\)\): GitHub's rate limit; the report is in the job summary$/m,
    );
    expect(fs.readFileSync(summary, 'utf8')).toMatch(/pg-retest: regression/);
    expect(posts()).toHaveLength(3);
    expect(waits).toEqual([1_000, 1_000]);
  });

  it('a limit that passes: the comment is written after the wait', async () => {
    const { stdout } = setup();
    github.rateLimit = { times: 1, status: 403, headers: { 'retry-after': '2' }, message: SECONDARY_LIMIT_MESSAGE, method: 'POST' };
    expect(await run(process.env, { retry })).toBe(0);
    expect(stdout()).toMatch(/^PR comment created: /m);
    expect(github.comments).toHaveLength(1);
    expect(waits).toEqual([2_000]);
  });
});
