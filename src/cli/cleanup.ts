/** `cleanup --database-url URL`: drops the databases killed runs left behind (provision/leftovers.ts). */
import { ExitCode, InfraError } from '../exit-codes.js';
import { plural, span } from '../format/units.js';
import { dropStaleDatabases } from '../provision/leftovers.js';
import { describeTarget } from '../provision/url.js';
import type { CleanupConfig } from './cleanup-options.js';
import type { Io } from '../runtime/io.js';

/**
 * Runs `cleanup`.
 * @param config validated options
 * @param io where to print
 * @returns 0, also when there was nothing to drop
 * @throws InfraError when the server cannot be reached or a database cannot be dropped (exit 3)
 */
export async function runCleanup(config: CleanupConfig, io: Io): Promise<ExitCode> {
  const found = await dropStaleDatabases(config.databaseUrl, { olderThanMs: config.olderThanMs, dryRun: config.dryRun });
  const verb = config.dryRun ? 'would drop' : 'dropped';
  const lines = [
    ...found.dropped.map((db) => `${verb} ${db.name} (run ${db.run}, created ${db.createdAt.toISOString()})`),
    ...found.droppedRoles.map((role) => `${verb} role ${role.name} (run ${role.run}, created ${role.createdAt.toISOString()})`),
  ];
  const kept = [
    found.kept.recent > 0 ? `${found.kept.recent} of runs active in the last ${span(config.olderThanMs * 1000)}` : '',
    found.kept.inUse > 0 ? `${found.kept.inUse} of runs with an open connection` : '',
    found.kept.notOurs > 0 ? `${found.kept.notOurs} owned by roles whose databases this user may not drop` : '',
  ].filter(Boolean);
  lines.push(
    `${describeTarget(config.databaseUrl)}: ${verb} ${plural(found.dropped.length, 'database')}` +
      (found.droppedRoles.length > 0 ? ` and ${plural(found.droppedRoles.length, 'role')}` : '') +
      ' of idle runs' +
      (kept.length > 0 ? `; kept ${kept.join(', ')}` : ''),
  );
  io.stdout.write(`${lines.join('\n')}\n`);
  if (found.failed.length > 0) {
    throw new InfraError(
      `${plural(found.failed.length, 'database or role', 'databases or roles')} could not be dropped: ${found.failed.join('; ')}`,
    );
  }
  return ExitCode.Ok;
}
