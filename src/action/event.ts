/**
 * What the triggering event says, validated: the repository, and the pull request the run is
 * about. On `pull_request` the PR is in the payload. On `workflow_run` (the fork-safe comment
 * poster) it is looked up from the run's head commit, never taken from an artifact, so that a
 * PR's own code cannot choose which PR gets the comment.
 */
import fs from 'node:fs';
import { z } from 'zod';
import { InputError } from '../exit-codes.js';
import type { Repository } from './github-api.js';

export interface EventInfo {
  name: string;
  repository: Repository;
  /** The PR of a pull_request (or pull_request_target) event; `fromFork`: its head is not known to be this repository. */
  pullRequest?: { number: number; baseSha: string; headSha: string; fromFork: boolean };
  /** The triggering run of a workflow_run event. */
  workflowRun?: { headSha: string; headBranch: string; headOwner: string; pullRequests: { number: number; headSha: string }[] };
}

const pullRequestPayload = z.object({
  pull_request: z.object({
    number: z.number().int().positive(),
    base: z.object({ sha: z.string().min(7), repo: z.object({ full_name: z.string() }).nullish() }),
    head: z.object({ sha: z.string().min(7), repo: z.object({ full_name: z.string() }).nullish() }),
  }),
});

const workflowRunPayload = z.object({
  workflow_run: z.object({
    head_sha: z.string().min(7),
    head_branch: z.string().nullish(),
    head_repository: z.object({ owner: z.object({ login: z.string() }) }).nullish(),
    pull_requests: z
      .array(
        z.object({
          number: z.number().int().positive(),
          head: z.object({ sha: z.string() }),
          base: z.object({ repo: z.object({ url: z.string() }).nullish() }).nullish(),
        }),
      )
      .default([]),
  }),
});

/**
 * Reads GITHUB_REPOSITORY, GITHUB_EVENT_NAME and the payload at GITHUB_EVENT_PATH.
 * @param env the environment
 * @returns the event's facts
 * @throws InputError when not run by GitHub Actions, or the payload is not what its event name says
 */
export function readEvent(env: NodeJS.ProcessEnv): EventInfo {
  const [owner, repo, ...rest] = (env.GITHUB_REPOSITORY ?? '').split('/');
  if (!owner || !repo || rest.length > 0) {
    throw new InputError('GITHUB_REPOSITORY is not set to owner/repo: run this as a GitHub Action, or use the CLI (pg-retest-action gate)');
  }
  const name = env.GITHUB_EVENT_NAME ?? '';
  const info: EventInfo = { name, repository: { owner, repo } };
  const payload = readPayload(env);
  if (name === 'pull_request' || name === 'pull_request_target') {
    const pr = pullRequestPayload.safeParse(payload);
    if (!pr.success)
      throw new InputError(`the ${name} event payload (GITHUB_EVENT_PATH) has no pull_request with number, base.sha and head.sha`);
    const p = pr.data.pull_request;
    // A head repository GitHub no longer knows (a deleted fork) is no proof of being this one.
    const fromFork = p.head.repo == null || p.head.repo.full_name !== (p.base.repo?.full_name ?? `${owner}/${repo}`);
    info.pullRequest = { number: p.number, baseSha: p.base.sha, headSha: p.head.sha, fromFork };
  } else if (name === 'workflow_run') {
    const run = workflowRunPayload.safeParse(payload);
    if (!run.success) throw new InputError('the workflow_run event payload (GITHUB_EVENT_PATH) has no workflow_run with head_sha');
    const r = run.data.workflow_run;
    info.workflowRun = {
      headSha: r.head_sha,
      headBranch: r.head_branch ?? '',
      headOwner: r.head_repository?.owner.login ?? owner,
      // GitHub also lists PRs of other repositories whose head is this branch (a fork's PR into
      // its own parent): only those into this repository are this repository's numbers.
      pullRequests: r.pull_requests
        .filter((p) => intoRepository(p.base?.repo?.url, owner, repo))
        .map((p) => ({ number: p.number, headSha: p.head.sha })),
    };
  }
  return info;
}

/** Whether a PR's base repository (its API URL) is `owner/repo`; unknown is not. */
function intoRepository(url: string | undefined, owner: string, repo: string): boolean {
  return url?.toLowerCase().endsWith(`/repos/${owner}/${repo}`.toLowerCase()) ?? false;
}

function readPayload(env: NodeJS.ProcessEnv): unknown {
  const file = env.GITHUB_EVENT_PATH;
  if (!file) return {};
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    throw new InputError(
      `cannot read the event payload ${file} (GITHUB_EVENT_PATH): ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}
