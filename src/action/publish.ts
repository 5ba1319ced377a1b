/**
 * Showing a report on GitHub: the job summary (always: it needs no permission, so it works for
 * forks too), the sticky PR comment (when there is a PR and the policy wants one) and the check
 * annotations on migration lines (workflow commands on the log: no permission either). None
 * changes the verdict: a comment that cannot be written is a warning.
 */
import * as core from '@actions/core';
import type { MigrationAnnotation } from './annotations.js';
import type { GateReport } from '../verdict/report-types.js';
import { commentBody, CommentPermissionError, CommentRateLimitError, upsertComment } from './comment.js';
import type { GitHubApi, Repository } from './github-api.js';
import type { ActionOptions } from './inputs.js';
import { scrub } from './logger.js';

/**
 * Appends the report to the job summary.
 * @param markdown the report
 */
export async function writeSummary(markdown: string): Promise<void> {
  try {
    await core.summary.addRaw(scrub(markdown), true).write();
  } catch (error) {
    core.warning(`could not write the job summary: ${(error as Error).message}`);
  }
}

export interface CommentTarget {
  api: GitHubApi;
  repository: Repository;
  pullRequest: number | undefined;
}

/**
 * Creates or updates the PR comment, as the `comment` policy says.
 * @param report the report (for the policy)
 * @param markdown its markdown
 * @param options the action's options
 * @param target where to post
 * @returns the comment's URL, when there is one
 */
export async function publishComment(
  report: Pick<GateReport, 'verdict'>,
  markdown: string,
  options: ActionOptions,
  target: CommentTarget,
): Promise<string | undefined> {
  if (options.comment === 'never') return undefined;
  if (target.pullRequest === undefined) {
    core.info('not a pull request: no PR comment (the report is in the job summary)');
    return undefined;
  }
  const body = commentBody(options['comment-id'], scrub(markdown));
  try {
    // on-regression: a passing run creates nothing, but still updates an earlier comment, so
    // a fixed PR does not keep showing a stale regression.
    const onlyUpdate = options.comment === 'on-regression' && report.verdict === 'pass';
    const result = await upsertComment(target.api, target.repository, target.pullRequest, body, options['comment-id'], { onlyUpdate });
    if (result) core.info(`PR comment ${result.action}: ${result.url}`);
    else core.info('pass and comment: on-regression: no PR comment');
    return result?.url;
  } catch (error) {
    if (error instanceof CommentPermissionError || error instanceof CommentRateLimitError) core.warning(scrub(error.message));
    else core.warning(`could not write the PR comment: ${scrub((error as Error).message)}`);
    return undefined;
  }
}

/**
 * Prints the annotations as workflow commands (`::warning file=…,line=…,title=…::…`): the runner
 * turns them into check annotations on those lines of the PR's Files tab.
 * @param annotations their files relative to the repository's root
 */
export function printAnnotations(annotations: MigrationAnnotation[]): void {
  const print = { error: core.error, warning: core.warning, notice: core.notice };
  for (const a of annotations) {
    print[a.level](scrub(a.message), { file: a.file, startLine: a.line, title: scrub(a.title) });
  }
}
