/**
 * What a GitHub Actions run tells us about the change under test: on a `pull_request` event,
 * the PR's base and head commits (the default base of the gate). Elsewhere (another CI, a
 * laptop), nothing.
 */
import fs from 'node:fs';
import { z } from 'zod';

export interface PullRequestContext {
  number: number;
  baseSha: string;
  headSha: string;
}

const payload = z.object({
  pull_request: z.object({
    number: z.number(),
    base: z.object({ sha: z.string().min(7) }),
    head: z.object({ sha: z.string().min(7) }),
  }),
});

/**
 * The pull request of the current GitHub Actions event, if it is one.
 * @param env the environment (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH)
 * @returns the PR's number and commits, or undefined
 */
export function pullRequestFromEnv(env: NodeJS.ProcessEnv): PullRequestContext | undefined {
  const name = env.GITHUB_EVENT_NAME;
  if (!env.GITHUB_EVENT_PATH || !name || !['pull_request', 'pull_request_target'].includes(name)) return undefined;
  try {
    const parsed = payload.safeParse(JSON.parse(fs.readFileSync(env.GITHUB_EVENT_PATH, 'utf8')));
    if (!parsed.success) return undefined;
    const pr = parsed.data.pull_request;
    return { number: pr.number, baseSha: pr.base.sha, headSha: pr.head.sha };
  } catch {
    return undefined;
  }
}

/**
 * Where the run happens, for the report: GitHub's runner name and OS, or the host.
 * @param env the environment
 * @param hostname the machine's name
 * @returns one short line
 */
export function runnerDescription(env: NodeJS.ProcessEnv, hostname: string): string {
  if (env.GITHUB_ACTIONS === 'true') {
    return `GitHub Actions ${env.RUNNER_ENVIRONMENT ?? ''} runner ${env.RUNNER_NAME ?? ''} (${env.RUNNER_OS ?? ''} ${env.RUNNER_ARCH ?? ''})`
      .replace(/\s+/g, ' ')
      .trim();
  }
  if (env.GITLAB_CI === 'true') return `GitLab CI runner ${env.CI_RUNNER_DESCRIPTION ?? hostname}`;
  return `${hostname} (${process.platform}-${process.arch})`;
}
