/**
 * The sticky PR comment: one per `comment-id`, found again by a hidden marker among the PR's
 * comments (all pages), written by the token's own identity, updated in place; skipped when
 * the body's digest is the one already posted, so an unchanged report makes no edit (and no
 * notification). A token that may not write gets a {@link CommentPermissionError} whose
 * message says which permission is missing; a rate limit that outlasts the retries, a
 * {@link CommentRateLimitError} that says so.
 */
import crypto from 'node:crypto';
import { type GitHubApi, GitHubApiError, type IssueComment, type Repository } from './github-api.js';

/** GitHub refuses longer comment bodies (characters). */
export const COMMENT_LIMIT = 65_536;

/** The hidden first line that marks this gate's comment. */
export function markerOf(commentId: string): string {
  return `<!-- pg-retest-action:comment id=${commentId} -->`;
}

const DIGEST = /<!-- pg-retest-action:digest ([0-9a-f]{64}) -->/;

/**
 * The comment's body: marker, digest of the report, report.
 * @param commentId the gate's comment id
 * @param markdown the report (at most {@link COMMENT_LIMIT} minus {@link HEADER_ROOM} characters)
 * @returns the body
 */
export function commentBody(commentId: string, markdown: string): string {
  const digest = crypto.createHash('sha256').update(markdown).digest('hex');
  return `${markerOf(commentId)}\n<!-- pg-retest-action:digest ${digest} -->\n${markdown}`;
}

/** Room the two hidden lines take in a body. */
export const HEADER_ROOM = 200;

/** The token may not write comments on this PR. */
export class CommentPermissionError extends Error {
  override readonly name = 'CommentPermissionError';
}

/** GitHub refused for a rate limit, still after the retries (src/action/github-api.ts). */
export class CommentRateLimitError extends Error {
  override readonly name = 'CommentRateLimitError';
}

export type UpsertResult = { action: 'created' | 'updated' | 'unchanged'; url: string };

/**
 * Creates the gate's comment on the PR, or updates the one it made before.
 * @param api the REST client
 * @param repo the repository
 * @param pr the PR number
 * @param body from {@link commentBody}
 * @param commentId the gate's comment id
 * @param options onlyUpdate: update an existing comment but create none
 * @returns what was done and the comment's URL; undefined when nothing exists and onlyUpdate
 * @throws CommentPermissionError when the token is read-only here
 */
export async function upsertComment(
  api: GitHubApi,
  repo: Repository,
  pr: number,
  body: string,
  commentId: string,
  { onlyUpdate = false }: { onlyUpdate?: boolean } = {},
): Promise<UpsertResult | undefined> {
  if (body.length > COMMENT_LIMIT) throw new Error(`the comment is ${body.length} characters; GitHub accepts ${COMMENT_LIMIT}`);
  try {
    for (const existing of await findOwnComments(api, repo, pr, commentId)) {
      if (DIGEST.exec(existing.body)?.[1] === DIGEST.exec(body)?.[1]) return { action: 'unchanged', url: existing.html_url };
      try {
        const updated = await api.updateComment(repo, existing.id, body);
        return { action: 'updated', url: updated.html_url };
      } catch (error) {
        // Another bot's comment (the token could not tell whose): not ours to edit; try the next.
        if (!(error instanceof GitHubApiError && !error.rateLimited && (error.status === 403 || error.status === 404))) throw error;
      }
    }
    if (onlyUpdate) return undefined;
    const created = await api.createComment(repo, pr, body);
    return { action: 'created', url: created.html_url };
  } catch (error) {
    if (error instanceof GitHubApiError && error.rateLimited) {
      throw new CommentRateLimitError(
        `cannot write the PR comment now (${error.method} ${error.path} answered ${error.status}: ${error.detail}): GitHub's rate limit; the report is in the job summary`,
      );
    }
    if (error instanceof GitHubApiError && error.status === 404) {
      throw new CommentPermissionError(
        `cannot write the PR comment (${error.method} ${error.path} answered 404: ${error.detail}): the pull request or repository was not found, or the token cannot see it`,
      );
    }
    if (error instanceof GitHubApiError && error.status === 403) {
      throw new CommentPermissionError(
        `cannot write the PR comment (${error.method} ${error.path} answered ${error.status}: ${error.detail}): ` +
          'the token lacks the pull-requests: write permission. Add `permissions: { pull-requests: write }` to the job; ' +
          'a pull request from a fork always gets a read-only token: post the report from a workflow_run workflow with `mode: comment` (docs/action.md)',
      );
    }
    throw error;
  }
}

/**
 * The comments this gate may have written before: the marker on the first line, and written by
 * the token's identity (a user token's login), so a comment that merely quotes the marker is
 * never taken over. An Actions or App token cannot ask who it is: then every bot's marked
 * comment, the Actions bot's first, for the caller to try in turn (editing another bot's fails).
 */
async function findOwnComments(api: GitHubApi, repo: Repository, pr: number, commentId: string): Promise<IssueComment[]> {
  const marker = markerOf(commentId);
  const login = await api.viewer();
  const marked = (await api.listComments(repo, pr)).filter((c) => c.body.startsWith(marker));
  if (login !== undefined) return marked.filter((c) => c.user?.login === login).slice(0, 1);
  const bots = marked.filter((c) => c.user?.type === 'Bot');
  return [...bots.filter((c) => c.user?.login === 'github-actions[bot]'), ...bots.filter((c) => c.user?.login !== 'github-actions[bot]')];
}
