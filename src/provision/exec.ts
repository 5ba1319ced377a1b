/**
 * The one door to subprocesses in provisioning: every `postgres --version`, `id -u` and the like
 * goes through {@link execCommand}, so there is one place that sets the environment and one
 * place a test can replace.
 */
import { execFile } from 'node:child_process';

export interface ExecOptions {
  /** Run as this user and group (root only). */
  uid?: number;
  gid?: number;
  /** Kill the command after this long (ms). Default 30 s. */
  timeoutMs?: number;
}

export interface ExecResult {
  /** Exit code; `null` when the command could not start or was killed. */
  code: number | null;
  stdout: string;
  stderr: string;
  /** Why it could not start (ENOENT, EACCES, …) or was killed. */
  error?: string;
}

/**
 * Runs a command to completion, collecting its output. Never throws: the caller decides what a
 * failure means.
 * @param file the executable
 * @param args its arguments
 * @param options user, timeout
 * @returns exit code and output
 */
export function execCommand(file: string, args: string[], options: ExecOptions = {}): Promise<ExecResult> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      {
        encoding: 'utf8',
        timeout: options.timeoutMs ?? 30_000,
        maxBuffer: 16 * 1024 * 1024,
        // Messages we parse (versions) must not be translated.
        env: { ...process.env, LC_ALL: 'C', LANG: 'C' },
        ...(options.uid === undefined ? {} : { uid: options.uid, gid: options.gid }),
      },
      (error, stdout, stderr) => {
        if (!error) return resolve({ code: 0, stdout, stderr });
        const code = typeof error.code === 'number' ? error.code : null;
        resolve({ code, stdout, stderr, error: code === null ? error.message : undefined });
      },
    );
  });
}
