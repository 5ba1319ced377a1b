/**
 * Whose code a run executes, and with what in reach. `mode: gate` and `mode: capacity` run the
 * checked-out code: the PR's migrations (SQL, run as a superuser of a server on the runner, where
 * `COPY … TO PROGRAM` is a shell), `migrate-command` and `seed-command`. On `pull_request` a fork's
 * PR gets a read-only token and no secrets, so that is safe. On `pull_request_target` and
 * `workflow_run` the job has the base repository's write token and its secrets, and a workflow
 * that checks out the PR's head hands both to whoever opened the PR. The action cannot see what
 * was checked out, so on those events it runs only when the workflow says it means it.
 */
import * as core from '@actions/core';
import { InputError } from '../exit-codes.js';
import type { EventInfo } from './event.js';
import { ActionInput } from './names.js';

/** Events whose jobs get the base repository's write token and secrets whoever opened the PR. */
const PRIVILEGED_EVENTS = ['pull_request_target', 'workflow_run'] as const;

/**
 * Refuses a run that would execute repository code on a privileged event, unless
 * `allow-untrusted-pr-code: true`; says what a fork's PR runs with otherwise.
 * @param event the triggering event
 * @param mode the action's mode (`comment` and `aggregate` run no repository code)
 * @param allowed the `allow-untrusted-pr-code` input
 * @throws InputError naming the risk and the fork-safe pair
 */
export function checkTrust(event: EventInfo, mode: 'gate' | 'comment' | 'capacity' | 'aggregate', allowed: boolean): void {
  // Posting a report, or pooling the shards' reports, runs none of the repository's code.
  if (mode === 'comment' || mode === 'aggregate') return;
  const fromFork = event.pullRequest?.fromFork === true;
  if ((PRIVILEGED_EVENTS as readonly string[]).includes(event.name)) {
    const whose = fromFork ? `pull request #${event.pullRequest!.number} comes from a fork, and its` : "the pull request's";
    if (!allowed) {
      throw new InputError(
        `refusing mode: ${mode} on a ${event.name} event: ${whose} migrations (SQL run as a superuser), migrate-command and seed-command would run with this workflow's write token and secrets in reach; ` +
          'run the gate on pull_request (comment: never, the JSON report uploaded as an artifact) and post it from a workflow_run job with mode: comment ' +
          `(examples/workflows/fork-safe-gate.yml and fork-safe-comment.yml), or set ${ActionInput.AllowUntrustedPrCode}: true if this job only runs code you trust`,
      );
    }
    core.warning(
      `running mode: ${mode} on a ${event.name} event (${ActionInput.AllowUntrustedPrCode}: true): the checked-out code runs with this workflow's write token and secrets in reach`,
    );
    return;
  }
  if (fromFork) {
    core.info(
      `pull request #${event.pullRequest!.number} comes from a fork: GitHub gives this run a read-only token and no secrets (unless the repository sends them to forks), ` +
        'so a PR comment can only come from a workflow_run job with mode: comment (docs/action.md); the job summary has the report',
    );
  }
}
