/**
 * Migration files: globs resolved to files, ordered the way migration tools order them (by
 * file name, lexically), each with a digest so that a file edited in place can be told from an
 * unchanged one.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { glob, isDynamicPattern } from 'tinyglobby';
import { InputError } from '../exit-codes.js';

export interface MigrationFile {
  /** The file name: what orders migrations and identifies one across commits. */
  name: string;
  /** Absolute path. */
  path: string;
  /** Relative to the checkout it came from, for messages and reports. */
  display: string;
  /** sha256 of the contents. */
  digest: string;
}

/**
 * A directory given where files are asked for stands for its own `*.sql` files (not its
 * subdirectories'): what `db/migrations` means to the migration tools that keep one file per step.
 */
function directoryAsSqlFiles(pattern: string, root: string): string {
  if (isDynamicPattern(pattern)) return pattern;
  const full = path.resolve(root, pattern);
  if (!fs.existsSync(full) || !fs.statSync(full).isDirectory()) return pattern;
  return `${pattern.replace(/\/+$/, '')}/*.sql`;
}

/**
 * Resolves globs, plain paths or directories (their `*.sql` files) relative to `root`.
 * @param patterns globs such as `db/migrations/*.sql`
 * @param root the directory they are relative to (the working directory, or the same place in the base checkout)
 * @param option the option's name, for messages
 * @param required throw when a pattern matches nothing (head), or accept it (a base commit that predates the files)
 * @returns the files, sorted by name
 * @throws InputError for a pattern that matches nothing (when required) or two files with one name
 */
export async function resolveMigrationFiles(patterns: string[], root: string, option: string, required: boolean): Promise<MigrationFile[]> {
  const found = new Map<string, string>();
  for (const given of patterns) {
    const pattern = directoryAsSqlFiles(given, root);
    if (path.isAbsolute(pattern) && isDynamicPattern(pattern) === false) {
      if (fs.existsSync(pattern)) found.set(pattern, pattern);
      else if (required) throw new InputError(`option --${option}: file ${pattern} does not exist`);
      continue;
    }
    const matches = await glob(pattern, { cwd: root, absolute: true, onlyFiles: true, expandDirectories: false });
    if (matches.length === 0 && required) {
      const what = pattern === given ? `'${given}' matches no file` : `directory '${given}' has no .sql file`;
      throw new InputError(`option --${option}: ${what} (relative to ${root}); check the path or quote the glob`);
    }
    for (const match of matches) found.set(path.resolve(match), pattern);
  }
  const files = [...found.keys()].map((file) => ({
    name: path.basename(file),
    path: file,
    display: path.relative(root, file) || file,
    digest: crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex'),
  }));
  files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.path < b.path ? -1 : 1));
  for (let i = 1; i < files.length; i++) {
    if (files[i]!.name === files[i - 1]!.name) {
      throw new InputError(
        `option --${option}: two migration files are named ${files[i]!.name} (${files[i - 1]!.display}, ${files[i]!.display}); ` +
          'file names order and identify migrations, so they must be unique',
      );
    }
  }
  return files;
}
