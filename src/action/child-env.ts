/**
 * The environment every process the action starts inherits: the migrate and seed commands (the
 * PR's code, on the head side), git, pg_restore, docker and the server supervisor all copy
 * `process.env`, so the credentials are taken out of it once, before anything is started.
 *
 * What goes, and why:
 * - every `INPUT_*` variable: the action's inputs, among them `github-token` and the database
 *   URLs with their passwords; a command gets its own database in `DATABASE_URL` and `PG*`;
 * - the runner's credentials for a JavaScript action ({@link RUNNER_CREDENTIALS}): the token of
 *   the Actions service (cache, artifacts) and the one that asks for OIDC tokens (with
 *   `id-token: write`, a door to cloud accounts), with their URLs;
 * - any other variable holding one of those tokens, whatever its name (`GITHUB_TOKEN` or
 *   `GH_TOKEN` set from `github.token` in the workflow).
 *
 * Other variables a workflow sets stay: a migrate command may need them (a registry token to
 * install its migration tool), and the workflow chose to put them there.
 *
 * Node cannot change this process's own initial environment: `/proc/<pid>/environ` of the
 * action keeps every variable the runner started it with, and a command running as the same
 * user can read it. That is why the token is also masked in its encoded forms
 * (src/action/secret-forms.ts), and why the docs tell workflows what a migrate command can reach.
 */

/** Variables the runner gives a JavaScript action that hold, or lead to, credentials. */
export const RUNNER_CREDENTIALS = [
  'ACTIONS_RUNTIME_TOKEN',
  'ACTIONS_RUNTIME_URL',
  'ACTIONS_RESULTS_URL',
  'ACTIONS_CACHE_URL',
  'ACTIONS_ID_TOKEN_REQUEST_TOKEN',
  'ACTIONS_ID_TOKEN_REQUEST_URL',
] as const;

/** The runner's tokens among {@link RUNNER_CREDENTIALS} (the rest are URLs). */
export const RUNNER_TOKENS = ['ACTIONS_RUNTIME_TOKEN', 'ACTIONS_ID_TOKEN_REQUEST_TOKEN'] as const;

/** A token shorter than this is not looked for in other variables' values (it would match by chance). */
const MIN_TOKEN_LENGTH = 8;

/**
 * Removes the credentials from an environment, in place.
 * @param env the environment the action's children will inherit (process.env)
 * @param tokens the tokens to look for in other variables (the `github-token` input, the runner's tokens)
 * @returns the names removed, sorted (for a debug line: never the values)
 */
export function removeCredentials(env: NodeJS.ProcessEnv, tokens: (string | undefined)[]): string[] {
  const needles = tokens.filter((token): token is string => token !== undefined && token.length >= MIN_TOKEN_LENGTH);
  const removed: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    const credential =
      name.startsWith('INPUT_') ||
      (RUNNER_CREDENTIALS as readonly string[]).includes(name) ||
      (value !== undefined && needles.some((token) => value.includes(token)));
    if (!credential) continue;
    delete env[name];
    removed.push(name);
  }
  return removed.sort();
}
