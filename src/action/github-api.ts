/**
 * The few REST calls the action makes, over `fetch`: list (paginated), create and update a
 * PR's issue comments, look up pull requests by head branch, and ask who the token is.
 * Responses the action relies on are validated with zod; the token is sent to GITHUB_API_URL
 * only (a pagination link to another origin is refused).
 */
import { z } from 'zod';

export interface Repository {
  owner: string;
  repo: string;
}

const commentSchema = z.object({
  id: z.number(),
  body: z.string().nullish().transform((body) => body ?? ''),
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
  ) {
    super(`${method} ${path}: ${status} ${detail}`);
  }
}

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
export function createGitHubApi(baseUrl: string, token: string): GitHubApi {
  const base = new URL(baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);

  async function request(method: string, url: URL, body?: unknown): Promise<{ json: unknown; next: URL | undefined }> {
    if (url.origin !== base.origin) throw new Error(`refusing to send the token to ${url.origin} (GITHUB_API_URL is ${base.origin})`);
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
    const text = await response.text();
    if (!response.ok) {
      let detail = text.slice(0, 200);
      try {
        detail = z.object({ message: z.string() }).parse(JSON.parse(text)).message;
      } catch {
        // not GitHub's JSON error shape: keep the start of the body
      }
      throw new GitHubApiError(method, url.pathname, response.status, detail);
    }
    return { json: text === '' ? null : JSON.parse(text), next: nextLink(response.headers.get('link'), url) };
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
        if (error instanceof GitHubApiError && [401, 403, 404].includes(error.status)) return undefined;
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

/** The `rel="next"` URL of a Link header. */
function nextLink(header: string | null, current: URL): URL | undefined {
  if (!header) return undefined;
  for (const part of header.split(',')) {
    const match = /<([^>]+)>\s*;\s*rel="?next"?/.exec(part);
    if (match) return new URL(match[1]!, current);
  }
  return undefined;
}
