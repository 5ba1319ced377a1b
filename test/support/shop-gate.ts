// Running the bundled CLI's gate on the sample shop against the shared test server, for tests
// that check one option each: the shop's migrations on both sides (A/A), the workload they name.
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const shop = (...parts: string[]): string => path.join(root, 'examples', 'shop', ...parts);

/**
 * `pg-retest-action gate` on the shop, identical schemas, outside any CI system's change request.
 * @param workload `workload.wkl` or `checkout.wkl`
 * @param extra more options (the ones under test)
 * @param cwd the working directory (a repository, for base commits)
 * @param env more environment
 * @returns the finished process
 */
export function shopGate(workload: string, extra: string[], cwd = root, env: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  const migrations = shop('migrations', '*.sql');
  const args = [
    path.join(root, 'dist', 'cli.js'),
    'gate',
    '--database-url',
    inject('pgUrl'),
    '--workload',
    shop(workload),
    '--base-migrations',
    migrations,
    '--migrations',
    migrations,
    ...extra,
  ];
  const full: NodeJS.ProcessEnv = { ...process.env, CI: 'true', ...env };
  for (const name of ['GITHUB_EVENT_NAME', 'GITHUB_EVENT_PATH', 'GITHUB_ACTIONS', 'GITLAB_CI', 'JENKINS_URL'])
    if (!(name in env)) delete full[name];
  return spawnSync(process.execPath, args, { cwd, encoding: 'utf8', env: full });
}

/** Variables of CI systems that would make the CLI read a change request. */
const CI_VARIABLES = ['PG_RETEST_DEBUG', 'GITHUB_EVENT_NAME', 'GITHUB_EVENT_PATH', 'GITHUB_ACTIONS', 'GITLAB_CI', 'JENKINS_URL'];

/**
 * The bundled CLI in a child process, without blocking the test's event loop (tests of one file
 * may run it side by side), outside any CI system's change request.
 * @param args its arguments
 * @param cwd the working directory
 * @returns the exit status and the output
 */
export function runCli(args: string[], cwd = root): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true' };
  for (const name of CI_VARIABLES) delete env[name];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(root, 'dist', 'cli.js'), ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
