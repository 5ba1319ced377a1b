// The sticky comment's rules against the REST stand-in: whose comment is ours (marker and the
// token's identity, also for a user token), the on-regression policy, pagination limits, and a
// 403 turned into a message that names the missing permission.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { commentBody, CommentPermissionError, markerOf, upsertComment } from '../src/action/comment.js';
import { createGitHubApi } from '../src/action/github-api.js';
import { type FakeGitHub, startFakeGitHub } from './support/github-api.js';

const repo = { owner: 'acme', repo: 'shop' };
let github: FakeGitHub;

beforeAll(async () => {
  // Pages of 10, whatever is asked: lookups must follow the Link header.
  github = await startFakeGitHub('acme/shop', 10);
});
afterAll(() => github.close());
beforeEach(() => {
  github.comments.length = 0;
  github.calls.length = 0;
  github.userLogin = undefined;
  github.rejectWrites = undefined;
});

const api = () => createGitHubApi(github.url, 'ghp_test');

describe('upsertComment', () => {
  it("with a user token, takes only that user's comment with the marker", async () => {
    github.userLogin = 'ci-user';
    for (let i = 0; i < 25; i++)
      github.comments.push({ id: i + 1, issue: 3, body: `${markerOf('x')}\nby someone else`, user: { login: 'mallory', type: 'User' } });
    const created = await upsertComment(api(), repo, 3, commentBody('x', 'one'), 'x');
    expect(created?.action).toBe('created');
    const updated = await upsertComment(api(), repo, 3, commentBody('x', 'two'), 'x');
    expect(updated).toEqual({ action: 'updated', url: created!.url });
    expect(github.comments.filter((c) => c.user.login === 'ci-user')).toHaveLength(1);
    expect(github.comments.filter((c) => c.user.login === 'mallory').every((c) => c.body.endsWith('by someone else'))).toBe(true);
    // 26 comments, pages of 10: three requests per lookup.
    expect(github.calls.filter((c) => c.method === 'GET' && c.path.endsWith('/comments')).map((c) => c.query.page ?? '1')).toEqual([
      '1',
      '2',
      '3',
      '1',
      '2',
      '3',
    ]);
  });

  it('keeps comment ids apart', async () => {
    await upsertComment(api(), repo, 3, commentBody('orders', 'a'), 'orders');
    await upsertComment(api(), repo, 3, commentBody('billing', 'b'), 'billing');
    expect((await upsertComment(api(), repo, 3, commentBody('orders', 'a'), 'orders'))?.action).toBe('unchanged');
    expect(github.comments.map((c) => c.body.split('\n')[0])).toEqual([markerOf('orders'), markerOf('billing')]);
  });

  it('onlyUpdate (comment: on-regression, a pass) creates nothing but updates an existing comment', async () => {
    expect(await upsertComment(api(), repo, 3, commentBody('x', 'pass'), 'x', { onlyUpdate: true })).toBeUndefined();
    expect(github.comments).toHaveLength(0);
    await upsertComment(api(), repo, 3, commentBody('x', 'regression'), 'x');
    expect((await upsertComment(api(), repo, 3, commentBody('x', 'pass'), 'x', { onlyUpdate: true }))?.action).toBe('updated');
    expect(github.comments[0]!.body).toMatch(/pass$/);
  });

  it('a 403 becomes a message naming pull-requests: write and the fork-safe mode', async () => {
    github.rejectWrites = 403;
    const attempt = upsertComment(api(), repo, 3, commentBody('x', 'r'), 'x');
    await expect(attempt).rejects.toBeInstanceOf(CommentPermissionError);
    await expect(upsertComment(api(), repo, 3, commentBody('x', 'r'), 'x')).rejects.toThrow(/403.*pull-requests: write.*mode: comment/);
  });

  it("with an Actions token, another bot's marked comment is left alone and ours is written", async () => {
    // An earlier setup posted with an App token; GitHub refuses to let this token edit it.
    github.comments.push({ id: 1, issue: 3, body: `${markerOf('x')}\nposted by another bot`, user: { login: 'my-app[bot]', type: 'Bot' } });
    const created = await upsertComment(api(), repo, 3, commentBody('x', 'one'), 'x');
    expect(created?.action).toBe('created');
    expect(github.comments.find((c) => c.id === 1)!.body).toMatch(/posted by another bot$/);
    // The next run finds its own comment first and updates it; the other bot's stays as it was.
    const updated = await upsertComment(api(), repo, 3, commentBody('x', 'two'), 'x');
    expect(updated).toEqual({ action: 'updated', url: created!.url });
    expect(github.comments.filter((c) => c.user.login === 'github-actions[bot]')).toHaveLength(1);
  });

  it('a rate limit or a missing PR is said as such, not as a missing permission', async () => {
    const refusing = http.createServer((req, res) => {
      const rateLimited = req.url!.includes('/issues/3/');
      res.writeHead(rateLimited ? 403 : 404, { 'content-type': 'application/json', ...(rateLimited ? { 'retry-after': '60' } : {}) });
      res.end(
        JSON.stringify({ message: rateLimited ? 'You have exceeded a secondary rate limit. Please wait a few minutes.' : 'Not Found' }),
      );
    });
    await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
    try {
      // A sleep that does not wait: the retries are test/action-rate-limit.test.ts's subject.
      const at = createGitHubApi(`http://127.0.0.1:${(refusing.address() as AddressInfo).port}`, 't', { sleep: async () => {} });
      await expect(upsertComment(at, repo, 3, commentBody('x', 'r'), 'x')).rejects.toThrow(
        /secondary rate limit.*\): GitHub's rate limit; the report is in the job summary$/,
      );
      await expect(upsertComment(at, repo, 4, commentBody('x', 'r'), 'x')).rejects.toThrow(
        /answered 404: Not Found\): the pull request or repository was not found, or the token cannot see it$/,
      );
    } finally {
      await new Promise<void>((resolve) => refusing.close(() => resolve()));
    }
  });

  it('refuses a body over 65,536 characters', async () => {
    await expect(upsertComment(api(), repo, 3, 'x'.repeat(65_537), 'x')).rejects.toThrow(/65536/);
  });
});
