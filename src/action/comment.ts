/**
 * The sticky PR comment: one per `comment-id`, found again by a hidden marker among the PR's
 * comments (all pages), written by the token's own identity, updated in place; skipped when
 * the body's digest is the one already posted, so an unchanged report makes no edit (and no
 * notification). A token that may not write gets a {@link CommentPermissionError} whose
 * message says which permission is missing.
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
    const existing = await findOwnComment(api, repo, pr, commentId);
    if (existing) {
      if (DIGEST.exec(existing.body)?.[1] === DIGEST.exec(body)?.[1]) return { action: 'unchanged', url: existing.html_url };
      const updated = await api.updateComment(repo, existing.id, body);
      return { action: 'updated', url: updated.html_url };
    }
    if (onlyUpdate) return undefined;
    const created = await api.createComment(repo, pr, body);
    return { action: 'created', url: created.html_url };
  } catch (error) {
    if (error instanceof GitHubApiError && (error.status === 403 || error.status === 404)) {
      throw new CommentPermissionError(
        `cannot write the PR comment (${error.method} ${error.path} answered ${error.status}: ${error.detail}): ` +
          'the token lacks the pull-requests: write permission. Add `permissions: { pull-requests: write }` to the job; ' +
          "a pull request from a fork always gets a read-only token: post the report from a workflow_run workflow with `mode: comment` (docs/action.md)",
      );
    }
    throw error;
  }
}

/**
 * The comment this gate wrote before: the marker on its first line, and written by the token's
 * identity (a user token's login; for an Actions or App token, which cannot ask, a bot), so a
 * comment that merely quotes the marker is never taken over.
 */
async function findOwnComment(api: GitHubApi, repo: Repository, pr: number, commentId: string): Promise<IssueComment | undefined> {
  const marker = markerOf(commentId);
  const login = await api.viewer();
  const comments = await api.listComments(repo, pr);
  return comments.find((c) => {
    if (!c.body.startsWith(marker)) return false;
    return login !== undefined ? c.user?.login === login : c.user?.type === 'Bot';
  });
}
