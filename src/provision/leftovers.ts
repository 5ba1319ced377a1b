/**
 * Databases a run leaves on a server it did not start when it cannot drop them itself (a
 * SIGKILL, a runner that vanished): every database the tool creates carries a marker
 * (database-marker.ts), and a later gate on that server, or `cleanup`, drops the marked databases
 * of runs idle for longer than a limit. Nothing without the marker is touched, whatever its name.
 * The run's replay role is marked too, and goes once none of its run's databases is left.
 *
 * A run's databases go together: a run is idle when its newest database is older than the
 * limit. A long gate keeps creating a database per replay, so its templates, hours old, are not
 * taken from under it; a killed one stops, and goes once the limit has passed. A run with a
 * connection to any of its databases is alive, whatever the ages, and is kept. Only databases
 * this user may drop (its own, its roles', or any as superuser) are considered.
 */
import { runStatements, withConnection } from './database.js';
import { readMarker } from './database-marker.js';
import type { Server } from './types.js';
import type { Logger } from '../runtime/logger.js';

/** How long a run must have been idle before a gate drops its databases (a GitHub job's limit). */
export const DEFAULT_STALE_AFTER_MS = 6 * 3_600_000;

/** A database with our marker. */
export interface MarkedDatabase {
  name: string;
  run: string;
  createdAt: Date;
  /** Open connections to it. */
  connections: number;
  /** Whether this user may drop it (it owns it, or is a member of the owner, or is superuser). */
  mayDrop: boolean;
}

/** A role with our marker (a run's replay role). */
export interface MarkedRole {
  name: string;
  run: string;
  createdAt: Date;
  /** Sessions logged in as it. */
  connections: number;
}

/** What a cleanup found and did. */
export interface Cleanup {
  /** Databases of idle runs: dropped, or to be dropped in a dry run. */
  dropped: MarkedDatabase[];
  /** Replay roles of idle runs with none of their databases left: dropped, or to be in a dry run. */
  droppedRoles: MarkedRole[];
  /** Marked databases kept: of runs active within the limit, of runs with a connection, or another role's. */
  kept: { recent: number; inUse: number; notOurs: number };
  /** Databases that could not be dropped, with why. */
  failed: string[];
}

/**
 * The marked databases on a server, and the server's time.
 * @param serverUrl a URL on the server
 * @returns what is there
 */
async function markedDatabases(serverUrl: string): Promise<{ now: Date; databases: MarkedDatabase[] }> {
  return withConnection(serverUrl, 'cannot list the databases of earlier runs', async (client) => {
    const { rows } = await client.query<{ name: string; marker: string; connections: number; may_drop: boolean; now: Date }>(
      `SELECT d.datname AS name, s.description AS marker, pg_has_role(d.datdba, 'USAGE') AS may_drop,
              (SELECT count(*) FROM pg_stat_activity a WHERE a.datname = d.datname)::int AS connections, now() AS now
         FROM pg_database d
         JOIN pg_shdescription s ON s.objoid = d.oid AND s.classoid = 'pg_database'::regclass
        WHERE s.description LIKE 'pg-retest-action run %'`,
    );
    const databases: MarkedDatabase[] = [];
    for (const row of rows) {
      const marker = readMarker(row.name, row.marker);
      if (marker) databases.push({ name: row.name, ...marker, connections: row.connections, mayDrop: row.may_drop });
    }
    // With no marked database there is nothing to age.
    return { now: rows[0]?.now ?? new Date(), databases };
  });
}

/**
 * The marked roles on a server that this user may drop (superuser, or CREATEROLE).
 * @param serverUrl a URL on the server
 * @returns them
 */
async function markedRoles(serverUrl: string): Promise<MarkedRole[]> {
  return withConnection(serverUrl, 'cannot list the roles of earlier runs', async (client) => {
    const { rows } = await client.query<{ name: string; marker: string; connections: number }>(
      `SELECT r.rolname AS name, s.description AS marker,
              (SELECT count(*) FROM pg_stat_activity a WHERE a.usename = r.rolname)::int AS connections
         FROM pg_roles r
         JOIN pg_shdescription s ON s.objoid = r.oid AND s.classoid = 'pg_authid'::regclass
        WHERE s.description LIKE 'pg-retest-action run %'
          AND (SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user)`,
    );
    const roles: MarkedRole[] = [];
    for (const row of rows) {
      const marker = readMarker(row.name, row.marker);
      if (marker) roles.push({ name: row.name, ...marker, connections: row.connections });
    }
    return roles;
  });
}

/**
 * Drops the marked databases of runs idle for `olderThanMs` or more (see the module's comment),
 * then the marked roles of runs that have none of their databases left.
 * @param serverUrl a URL on the server (of another database)
 * @param options the age limit, and whether only to say what would be dropped
 * @returns what was found and done
 * @throws InfraError when the server cannot be reached or listed
 */
export async function dropStaleDatabases(serverUrl: string, options: { olderThanMs: number; dryRun?: boolean }): Promise<Cleanup> {
  const { now, databases } = await markedDatabases(serverUrl);
  const runs = new Map<string, MarkedDatabase[]>();
  for (const db of databases) runs.set(db.run, [...(runs.get(db.run) ?? []), db]);
  const result: Cleanup = { dropped: [], droppedRoles: [], kept: { recent: 0, inUse: 0, notOurs: 0 }, failed: [] };
  for (const members of runs.values()) {
    const newest = Math.max(...members.map((db) => db.createdAt.getTime()));
    if (now.getTime() - newest < options.olderThanMs) {
      result.kept.recent += members.length;
    } else if (members.some((db) => db.connections > 0)) {
      result.kept.inUse += members.length;
    } else {
      for (const db of members) {
        if (!db.mayDrop) result.kept.notOurs += 1;
        else result.dropped.push(db);
      }
    }
  }
  const going = new Set(result.dropped.map((db) => db.name));
  // A role goes with the last of its run's databases, and only when it is as idle as they are.
  const staying = new Set(databases.filter((db) => !going.has(db.name)).map((db) => db.run));
  result.droppedRoles = (await markedRoles(serverUrl)).filter(
    (role) => !staying.has(role.run) && role.connections === 0 && now.getTime() - role.createdAt.getTime() >= options.olderThanMs,
  );
  if (options.dryRun) return result;
  result.dropped = await dropEach(serverUrl, result.dropped, 'database', result.failed);
  result.droppedRoles = await dropEach(serverUrl, result.droppedRoles, 'role', result.failed);
  return result;
}

/**
 * Drops each database or role, in order; what cannot be dropped is added to `failed`.
 * @returns those dropped
 */
async function dropEach<T extends { name: string }>(
  serverUrl: string,
  items: T[],
  kind: 'database' | 'role',
  failed: string[],
): Promise<T[]> {
  const dropped: T[] = [];
  for (const item of items) {
    try {
      // No FORCE and no terminating: a connection that came since the listing means the run lives.
      await runStatements(serverUrl, `cannot drop ${kind} ${item.name}`, [`DROP ${kind.toUpperCase()} IF EXISTS ${item.name}`]);
      dropped.push(item);
    } catch (error) {
      failed.push(error instanceof Error ? error.message : String(error));
    }
  }
  return dropped;
}

/**
 * The gate's sweep when its servers are up: the databases of runs that died on these servers
 * (database-url ones only: a server the gate starts is new) are dropped. Never throws: a sweep
 * that fails must not fail the run.
 * @param servers the run's servers
 * @param logger where to say what was dropped
 */
export async function sweepStaleDatabases(servers: readonly (Server | undefined)[], logger: Logger): Promise<void> {
  const urls = new Set(servers.filter((s) => s?.kind === 'database-url').map((s) => s!.url));
  for (const url of urls) {
    try {
      const found = await dropStaleDatabases(url, { olderThanMs: DEFAULT_STALE_AFTER_MS });
      if (found.dropped.length > 0) {
        const names = found.dropped.map((db) => db.name).join(', ');
        logger.info(
          `dropped ${found.dropped.length} database(s) left behind by runs idle for ${DEFAULT_STALE_AFTER_MS / 3_600_000} h or more: ${names}`,
        );
      }
      if (found.droppedRoles.length > 0) {
        logger.info(
          `dropped ${found.droppedRoles.length} replay role(s) of those runs: ${found.droppedRoles.map((r) => r.name).join(', ')}`,
        );
      }
      for (const failure of found.failed) logger.info(`warning: ${failure}`);
    } catch (error) {
      logger.info(
        `warning: could not look for databases earlier runs left behind: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
}
