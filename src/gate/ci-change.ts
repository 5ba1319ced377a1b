/**
 * The change under test, from the CI system's environment: which commit the base schema comes
 * from when `--base-ref` is not given. GitHub Actions describes a pull request in its event file;
 * GitLab describes a merge request pipeline in `CI_MERGE_REQUEST_*` variables; Jenkins (a
 * multibranch pipeline building a pull/change request) in `CHANGE_*` variables.
 */
import { type PullRequestContext, pullRequestFromEnv } from './github-event.js';

/** A change request and where its base comes from. */
export interface ChangeUnderTest extends PullRequestContext {
  /** The CI system that described it. */
  system: 'github' | 'gitlab' | 'jenkins';
  /** The base to check out: a commit SHA (GitHub, GitLab) or a ref (Jenkins: `origin/<target>`). */
  baseRef: string;
  /** Where the base came from, for the report. */
  describe: string;
}

/**
 * The change under test, if the environment describes one.
 * @param env the environment
 * @returns the change, or undefined outside a pull/merge/change request
 */
export function changeUnderTest(env: NodeJS.ProcessEnv): ChangeUnderTest | undefined {
  const github = pullRequestFromEnv(env);
  if (github)
    return { ...github, system: 'github', baseRef: github.baseSha, describe: `GitHub pull request #${github.number}: its base commit` };

  // GitLab merge request pipelines: the merge base of the MR's source and target branches
  // (what the MR's diff is against), which is what the base schema must be built from.
  const gitlabBase = env.CI_MERGE_REQUEST_DIFF_BASE_SHA?.trim();
  if (env.GITLAB_CI === 'true' && gitlabBase) {
    const number = Number(env.CI_MERGE_REQUEST_IID ?? 0);
    return {
      system: 'gitlab',
      number,
      baseSha: gitlabBase,
      baseRef: gitlabBase,
      headSha: env.CI_COMMIT_SHA?.trim() ?? '',
      describe: `GitLab merge request !${number}: CI_MERGE_REQUEST_DIFF_BASE_SHA`,
    };
  }

  // Jenkins builds a change request merged into its target branch (the default for pull
  // requests), so the target branch as fetched is the base.
  const target = env.CHANGE_TARGET?.trim();
  if (env.JENKINS_URL && env.CHANGE_ID && target) {
    const ref = `origin/${target}`;
    return {
      system: 'jenkins',
      number: Number(env.CHANGE_ID) || 0,
      baseSha: ref,
      baseRef: ref,
      headSha: env.GIT_COMMIT?.trim() ?? '',
      describe: `Jenkins change ${env.CHANGE_ID}: its target branch (CHANGE_TARGET=${target})`,
    };
  }
  return undefined;
}
