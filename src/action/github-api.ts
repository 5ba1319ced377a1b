/**
 * The few REST calls the action makes, over `fetch`: list (paginated), create and update a
 * PR's issue comments, look up pull requests by head branch, and ask who the token is.
 * Responses the action relies on are validated with zod; the token is sent to GITHUB_API_URL
 * only (a pagination link to another origin is refused).
 *
 * GitHub's rate limits (429; 403 with `retry-after`, `x-ratelimit-remaining: 0` or the
 * secondary-rate-limit message) are waited out and the request sent again, as GitHub asks
 * (`retry-after`, else until `x-ratelimit-reset`, else {@link FALLBACK_WAITS_MS}), bounded by
 * {@link DEFAULT_RETRY}: at most 3 tries and 60 s of waiting in all per request. A wait that
 * would go past that is not begun: the error says it was a rate limit, and the caller reports
 * it as such (the comment is a warning; the summary and the verdict stand).
 */
import { z } from 'zod';

export interface Repository {
  owner: string;
  repo: string;
}

const commentSchema = z.object({
  id: z.number(),
  body: z
    .string()
    .nullish()
    .transform((body) => body ?? ''),
  html_url: z.string(),
  user: z.object({ login: z.string(), type: z.string().optional() }).nullish(),
});
export type IssueComment = z.output<typeof commentSchema>;

const pullSchema = z.object({ number: z.number(), head: z.object({ sha: z.string() }) });
export type PullRequestRef = z.output<typeof pullSchema>;

/** A request GitHub answered with an error status. */
export class GitHubApiError extends Error {
  override readonly name = 'GitHubApiError';
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly detail: string,
    /** GitHub refused for a rate limit (still, after the retries {@link RetryPolicy} allows). */
    readonly rateLimited = false,
  ) {
    super(`${method} ${path}: ${status} ${detail}`);
  }
}

/** How rate-limited requests are retried; tests give a sleep that does not wait. */
export interface RetryPolicy {
  /** Tries per request, the first included. */
  tries: number;
  /** Waiting, all retries of one request together, at most this long (ms). */
  budgetMs: number;
  sleep: (ms: number) => Promise<void>;
  now: () => number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  tries: 3,
  budgetMs: 60_000,
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  now: () => Date.now(),
};

/** Waits before the 2nd and 3rd try when GitHub says nothing about how long (its docs: a minute or more, growing). */
const FALLBACK_WAITS_MS = [20_000, 40_000];

export interface GitHubApi {
  /** The token's user login, or undefined when the token may not ask (an Actions or App token). */
  viewer(): Promise<string | undefined>;
  listComments(repo: Repository, issue: number): Promise<IssueComment[]>;
  createComment(repo: Repository, issue: number, body: string): Promise<IssueComment>;
  updateComment(repo: Repository, id: number, body: string): Promise<IssueComment>;
  /** Open pull requests whose head is `owner:branch`. */
  pullRequestsForHead(repo: Repository, head: string): Promise<PullRequestRef[]>;
}

/** Pages of 100, and at most this many pages: a PR with 10,000 comments is not worth waiting for. */
const PER_PAGE = 100;
const MAX_PAGES = 100;
/** How long one request may take. */
const REQUEST_TIMEOUT_MS = 30_000;

/**
 * A client for the REST API at `baseUrl`.
 * @param baseUrl GITHUB_API_URL (https://api.github.com, or a GHES or test server)
 * @param token the token to send
 * @returns the client
 */
export function createGitHubApi(baseUrl: string, token: string, retry: Partial<RetryPolicy> = {}): GitHubApi {
  const base = new URL(baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
  const policy = { ...DEFAULT_RETRY, ...retry };

  async function send(method: string, url: URL, body?: unknown): Promise<{ response: Response; text: string }> {
    const response = await fetch(url, {
      method,
      headers: {
        accept: 'application/vnd.github+json',
        authorization: `Bearer ${token}`,
        'user-agent': 'pg-retest-action',
        'x-github-api-version': '2022-11-28',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      // A hung API must not hold the step (and its verdict) until the job's timeout.
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    return { response, text: await response.text() };
  }

  async function request(method: string, url: URL, body?: unknown): Promise<{ json: unknown; next: URL | undefined }> {
    if (url.origin !== base.origin) throw new Error(`refusing to send the token to ${url.origin} (GITHUB_API_URL is ${base.origin})`);
    let waited = 0;
    for (let attempt = 1; ; attempt++) {
      const { response, text } = await send(method, url, body);
      if (response.ok) return { json: text === '' ? null : JSON.parse(text), next: nextLink(response.headers.get('link'), url) };
      const detail = errorDetail(text);
      const wait = rateLimitWait(response, detail, attempt, policy.now());
      if (wait === undefined) throw new GitHubApiError(method, url.pathname, response.status, detail);
      if (attempt >= policy.tries || waited + wait > policy.budgetMs) {
        const after =
          attempt === 1
            ? `GitHub asked to wait ${Math.ceil(wait / 1000)} s, more than the ${policy.budgetMs / 1000} s the action waits`
            : `still after ${attempt} tries over ${Math.round(waited / 1000)} s`;
        throw new GitHubApiError(method, url.pathname, response.status, `${detail} (rate limit: ${after})`, true);
      }
      await policy.sleep(wait);
      waited += wait;
    }
  }

  const at = (path: string, query: Record<string, string> = {}): URL => {
    const url = new URL(path.replace(/^\//, ''), base);
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    return url;
  };
  const repoPath = (r: Repository) => `repos/${encodeURIComponent(r.owner)}/${encodeURIComponent(r.repo)}`;

  async function paginate<T>(first: URL, item: z.ZodType<T>): Promise<T[]> {
    const items: T[] = [];
    let url: URL | undefined = first;
    for (let page = 0; url && page < MAX_PAGES; page++) {
      const { json, next }: { json: unknown; next: URL | undefined } = await request('GET', url);
      items.push(...z.array(item).parse(json));
      url = next;
    }
    return items;
  }

  return {
    async viewer() {
      try {
        const { json } = await request('GET', at('user'));
        return z.object({ login: z.string() }).parse(json).login;
      } catch (error) {
        // GITHUB_TOKEN and App tokens get 403 here: they are not a user.
        if (error instanceof GitHubApiError && !error.rateLimited && [401, 403, 404].includes(error.status)) return undefined;
        throw error;
      }
    },
    listComments: (repo, issue) =>
      paginate(at(`${repoPath(repo)}/issues/${issue}/comments`, { per_page: String(PER_PAGE) }), commentSchema),
    async createComment(repo, issue, body) {
      const { json } = await request('POST', at(`${repoPath(repo)}/issues/${issue}/comments`), { body });
      return commentSchema.parse(json);
    },
    async updateComment(repo, id, body) {
      const { json } = await request('PATCH', at(`${repoPath(repo)}/issues/comments/${id}`), { body });
      return commentSchema.parse(json);
    },
    pullRequestsForHead: (repo, head) =>
      paginate(at(`${repoPath(repo)}/pulls`, { state: 'open', head, per_page: String(PER_PAGE) }), pullSchema),
  };
}

/** GitHub's `message`, or the start of a body of another shape. */
function errorDetail(text: string): string {
  try {
    return z.object({ message: z.string() }).parse(JSON.parse(text)).message;
  } catch {
    return text.slice(0, 200);
  }
}

/**
 * How long to wait before trying again, when GitHub refused for a rate limit; undefined for any
 * other refusal.
 * @param response the refusal
 * @param detail its message
 * @param attempt the try it answered (1 for the first)
 * @param now the time (ms since the epoch)
 * @returns milliseconds, or undefined
 */
export function rateLimitWait(
  response: Pick<Response, 'status' | 'headers'>,
  detail: string,
  attempt: number,
  now: number,
): number | undefined {
  const retryAfter = response.headers.get('retry-after');
  const remaining = response.headers.get('x-ratelimit-remaining');
  const limited =
    response.status === 429 || (response.status === 403 && (retryAfter !== null || remaining === '0' || /rate limit/i.test(detail)));
  if (!limited) return undefined;
  if (retryAfter !== null) {
    // Seconds, or an HTTP date.
    const seconds = /^\s*\d+\s*$/.test(retryAfter) ? Number(retryAfter) : (Date.parse(retryAfter) - now) / 1000;
    if (Number.isFinite(seconds)) return Math.max(0, Math.ceil(seconds * 1000));
  }
  const reset = Number(response.headers.get('x-ratelimit-reset'));
  // The primary limit: its window's end, and a second for the clocks to disagree.
  if (remaining === '0' && Number.isFinite(reset) && reset > 0) return Math.max(0, reset * 1000 - now + 1000);
  return FALLBACK_WAITS_MS[Math.min(attempt, FALLBACK_WAITS_MS.length) - 1]!;
}

/** The `rel="next"` URL of a Link header. */
function nextLink(header: string | null, current: URL): URL | undefined {
  if (!header) return undefined;
  for (const part of header.split(',')) {
    const match = /<([^>]+)>\s*;\s*rel="?next"?/.exec(part);
    if (match) return new URL(match[1]!, current);
  }
  return undefined;
}
