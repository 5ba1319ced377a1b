// The CLI run in the test process (`run` from src/cli/main.ts, the engine from build/), its
// output collected, as in CI (no live progress line).
import { run } from '../../src/cli/main.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `pg-retest-action <args>` in this process.
 * @param args the arguments after the program name
 * @returns the exit status and what was printed
 */
export async function runCli(args: string[]): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await run(args, {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    env: { ...process.env, CI: 'true' },
  });
  return { code, stdout, stderr };
}
