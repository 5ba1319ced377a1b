/**
 * The partial reports an aggregate reads: paths or globs (the action's `partials` input takes
 * `partials/**\/*.json` after a download of every shard's artifact; a shell expands them for the
 * CLI already). A shard whose artifact never came is not an error here: it is missing, and the
 * aggregate names it.
 */
import path from 'node:path';
import { glob, isDynamicPattern } from 'tinyglobby';
import { InputError } from '../exit-codes.js';

/**
 * The files the patterns name, each once, in a stable order.
 * @param patterns paths or globs
 * @param cwd what relative ones are relative to
 * @param askedAs how the user gave them, for the message (`option --partial`)
 * @returns absolute paths
 * @throws InputError when nothing was given, or nothing matched
 */
export async function partialFiles(patterns: readonly string[], cwd: string, askedAs: string): Promise<string[]> {
  const files = new Set<string>();
  for (const pattern of patterns) {
    if (!isDynamicPattern(pattern)) {
      files.add(path.resolve(cwd, pattern));
      continue;
    }
    for (const file of await glob(pattern, { cwd, absolute: true, onlyFiles: true })) files.add(path.resolve(file));
  }
  if (files.size === 0) {
    throw new InputError(
      `${askedAs}: ${patterns.length === 0 ? 'is required' : `nothing matches ${patterns.join(', ')}`}: the partial reports of the shards (gate --shard i/N --json FILE)`,
    );
  }
  return [...files].sort();
}
