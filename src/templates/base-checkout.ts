/**
 * The base commit's files, next to the working tree: a `git worktree` of the base ref in a
 * temporary directory, removed afterwards. The working tree itself is never touched.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { InfraError, InputError } from '../exit-codes.js';

export interface Checkout {
  /** The directory of the checkout that corresponds to the working directory. */
  root: string;
  sha: string;
  /** Removes the worktree; never throws. */
  dispose(): Promise<void>;
}

function git(args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', args, { cwd, encoding: 'utf8', timeout: 120_000, maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      if (error) reject(Object.assign(new Error((stderr || error.message).trim()), { cause: error }));
      else resolve(stdout.trim());
    });
  });
}

/**
 * The commit checked out in `cwd`, if it is a git repository.
 * @param cwd a directory
 * @returns the SHA, or null outside a repository
 */
export async function currentCommit(cwd: string): Promise<string | null> {
  try {
    return await git(['rev-parse', 'HEAD'], cwd);
  } catch {
    return null;
  }
}

/**
 * Checks out `ref` into a temporary worktree.
 * @param ref a commit, branch or tag
 * @param cwd the working directory, inside the repository
 * @returns the checkout
 * @throws InputError when this is no repository or the ref is not in it
 */
export async function checkoutBase(ref: string, cwd: string): Promise<Checkout> {
  let top: string;
  try {
    top = await git(['rev-parse', '--show-toplevel'], cwd);
  } catch {
    throw new InputError(`option --base-ref: ${cwd} is not inside a git repository; run from the repository, or give --base-migrations`);
  }
  let sha: string;
  try {
    sha = await git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], cwd);
  } catch {
    throw new InputError(
      `option --base-ref: '${ref}' is not a commit in this clone; fetch it first (actions/checkout with fetch-depth: 0, or git fetch origin ${ref})`,
    );
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-base-'));
  try {
    await git(['worktree', 'add', '--detach', '--quiet', dir, sha], top);
  } catch (error) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw new InfraError(`cannot check out the base commit ${sha.slice(0, 12)}: ${(error as Error).message.split('\n')[0]}`);
  }
  return {
    root: path.join(dir, path.relative(top, fs.realpathSync(cwd))),
    sha,
    dispose: async () => {
      await git(['worktree', 'remove', '--force', dir], top).catch(() => {});
      fs.rmSync(dir, { recursive: true, force: true });
      await git(['worktree', 'prune'], top).catch(() => {});
    },
  };
}
