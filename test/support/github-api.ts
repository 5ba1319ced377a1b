// A stand-in for GitHub's REST API on 127.0.0.1: the few endpoints the action calls, with
// comments kept in memory, pagination by Link headers as GitHub does it, rate limits answered
// as GitHub answers them (429 or 403, with its headers) when a test asks, and every request
// recorded (method, path, query, headers, body) for the tests to inspect. It is the only thing
// the action's tests simulate.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedCall {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface FakeComment {
  id: number;
  issue: number;
  body: string;
  user: { login: string; type: string };
}

/** The next requests to refuse for a rate limit, as GitHub does. */
export interface FakeRateLimit {
  /** How many requests (matching `method`, when given) get the refusal; counts down. */
  times: number;
  /** 429, or 403 (GitHub's secondary limits and an exhausted primary limit). */
  status: 429 | 403;
  /** e.g. `retry-after`, or `x-ratelimit-remaining` and `x-ratelimit-reset`. */
  headers: Record<string, string>;
  message: string;
  /** Only requests of this method (e.g. POST: comment writes). */
  method?: string;
}

/** GitHub's message for a secondary rate limit. */
export const SECONDARY_LIMIT_MESSAGE = 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.';

export interface FakeGitHub {
  url: string;
  calls: RecordedCall[];
  comments: FakeComment[];
  /** Open pull requests, for GET /repos/:o/:r/pulls?head=owner:branch. */
  pulls: { number: number; head: { sha: string; label: string } }[];
  /** Status to answer comment creation and edits with instead of succeeding (403: a read-only token). */
  rejectWrites: number | undefined;
  /** The only repository served. */
  repository: string;
  /** A user token's login (GET /user answers it, and comments are written as this user); undefined: an Actions token. */
  userLogin: string | undefined;
  /** Rate-limit refusals still to give. */
  rateLimit: FakeRateLimit | undefined;
  close(): Promise<void>;
}

/** The identity of an Actions token, which writes as this bot. */
export const ACTIONS_BOT = { login: 'github-actions[bot]', type: 'Bot' };

/**
 * Starts the server.
 * @param repository owner/repo
 * @param perPageLimit the largest page the server gives (GitHub: 100), smaller to test pagination
 * @returns the running fake
 */
export async function startFakeGitHub(repository: string, perPageLimit = 100): Promise<FakeGitHub> {
  let nextId = 1000;
  const state: Omit<FakeGitHub, 'url' | 'close'> = {
    calls: [],
    comments: [],
    pulls: [],
    rejectWrites: undefined,
    repository,
    userLogin: undefined,
    rateLimit: undefined,
  };

  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      state.calls.push({
        method: req.method ?? '',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: req.headers,
        body,
      });
      const send = (status: number, value: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
        res.end(JSON.stringify(value));
      };
      const htmlUrl = (c: FakeComment) => `https://github.com/${repository}/pull/${c.issue}#issuecomment-${c.id}`;
      const view = (c: FakeComment) => ({ id: c.id, body: c.body, user: c.user, html_url: htmlUrl(c) });
      if (!/^Bearer .+/.test(req.headers.authorization ?? '')) return send(401, { message: 'Requires authentication' });
      const limit = state.rateLimit;
      if (limit && limit.times > 0 && (limit.method === undefined || limit.method === req.method)) {
        limit.times--;
        return send(
          limit.status,
          { message: limit.message, documentation_url: 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api' },
          limit.headers,
        );
      }
      const prefix = `/repos/${repository}`;
      if (req.method === 'GET' && url.pathname === '/user') {
        if (state.userLogin) return send(200, { login: state.userLogin, type: 'User' });
        return send(403, { message: 'Resource not accessible by integration' });
      }
      const commentsOfIssue = new RegExp(`^${prefix}/issues/(\\d+)/comments$`).exec(url.pathname);
      if (commentsOfIssue) {
        const issue = Number(commentsOfIssue[1]);
        if (req.method === 'GET') {
          const perPage = Math.min(Number(url.searchParams.get('per_page') ?? 30), perPageLimit);
          const page = Number(url.searchParams.get('page') ?? 1);
          const all = state.comments.filter((c) => c.issue === issue);
          const slice = all.slice((page - 1) * perPage, page * perPage);
          const headers: Record<string, string> = {};
          if (page * perPage < all.length) {
            const next = new URL(url);
            next.searchParams.set('page', String(page + 1));
            headers.link = `<http://${req.headers.host}${next.pathname}${next.search}>; rel="next"`;
          }
          return send(200, slice.map(view), headers);
        }
        if (req.method === 'POST') {
          if (state.rejectWrites) return send(state.rejectWrites, { message: 'Resource not accessible by integration' });
          const user = state.userLogin ? { login: state.userLogin, type: 'User' } : ACTIONS_BOT;
          const comment: FakeComment = { id: nextId++, issue, body: JSON.parse(body).body, user };
          state.comments.push(comment);
          return send(201, view(comment));
        }
      }
      const oneComment = new RegExp(`^${prefix}/issues/comments/(\\d+)$`).exec(url.pathname);
      if (oneComment && req.method === 'PATCH') {
        const comment = state.comments.find((c) => c.id === Number(oneComment[1]));
        if (!comment) return send(404, { message: 'Not Found' });
        if (state.rejectWrites) return send(state.rejectWrites, { message: 'Resource not accessible by integration' });
        // As GitHub: a token edits only its own identity's comments.
        const writer = state.userLogin ?? ACTIONS_BOT.login;
        if (comment.user.login !== writer) return send(403, { message: 'Resource not accessible by integration' });
        comment.body = JSON.parse(body).body;
        return send(200, view(comment));
      }
      if (url.pathname === `${prefix}/pulls` && req.method === 'GET') {
        const head = url.searchParams.get('head');
        return send(
          200,
          state.pulls.filter((p) => head === null || p.head.label === head),
        );
      }
      return send(404, { message: 'Not Found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
