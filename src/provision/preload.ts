/**
 * `shared_preload_libraries` for servers the gate starts: pg_stat_statements is added so that
 * every replay's buffers and server time can be read per statement (docs/plans.md). A binary
 * distribution without the library (a minimal source build) would refuse to start with it, so
 * a started cluster drops libraries its binaries do not have, and says so.
 */
import fs from 'node:fs';
import path from 'node:path';

export const STAT_STATEMENTS = 'pg_stat_statements';

function libraries(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim().replace(/^"|"$/g, ''))
    .filter((s) => s !== '');
}

/**
 * Settings with pg_stat_statements added to the libraries the user asked for (if any).
 * @param settings the user's server settings
 * @returns a copy with `shared_preload_libraries` including pg_stat_statements
 */
export function withStatStatements(settings: Record<string, string>): Record<string, string> {
  return withPreloads(settings, [STAT_STATEMENTS]);
}

/**
 * Settings with libraries added to `shared_preload_libraries` (after those already there).
 * @param settings server settings
 * @param libs libraries to add: pg_stat_statements, or what requested extensions need (timescaledb)
 * @returns a copy with every library once
 */
export function withPreloads(settings: Record<string, string>, libs: readonly string[]): Record<string, string> {
  if (libs.length === 0) return settings;
  const wanted = libraries(settings.shared_preload_libraries);
  for (const lib of libs) if (!wanted.includes(lib)) wanted.push(lib);
  return { ...settings, shared_preload_libraries: wanted.join(',') };
}

/**
 * Where a binary distribution keeps its loadable modules: `lib/postgresql` (embedded
 * packages, most source builds) or `lib` (Debian's /usr/lib/postgresql/<major>).
 */
function moduleDirs(bindir: string): string[] {
  const root = path.dirname(bindir);
  return [path.join(root, 'lib', 'postgresql'), path.join(root, 'lib')];
}

/**
 * The settings without preload libraries that these binaries do not have.
 * @param bindir the binaries' directory
 * @param settings the settings to start with
 * @returns the settings to use and the libraries dropped
 */
export function availablePreloads(
  bindir: string,
  settings: Record<string, string> | undefined,
): { settings: Record<string, string> | undefined; dropped: string[] } {
  if (settings?.shared_preload_libraries === undefined) return { settings, dropped: [] };
  const dirs = moduleDirs(bindir);
  const wanted = libraries(settings.shared_preload_libraries);
  const kept = wanted.filter((lib) => dirs.some((dir) => fs.existsSync(path.join(dir, `${lib}.so`))));
  const dropped = wanted.filter((lib) => !kept.includes(lib));
  if (dropped.length === 0) return { settings, dropped };
  return { settings: { ...settings, shared_preload_libraries: kept.join(',') }, dropped };
}
