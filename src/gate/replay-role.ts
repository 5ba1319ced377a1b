/**
 * Who the gate's replays run as (docs/gate.md, "Replay isolation").
 *
 * A replay sends whatever the workload captured. As the URL's user (often superuser or CREATEROLE)
 * a captured `ALTER ROLE app PASSWORD …` changed a real role. So the gate replays as a role it
 * creates for the run: LOGIN, no superuser, no CREATEROLE, CREATEDB, REPLICATION or BYPASSRLS,
 * a random password that lives only in this process (the server gets a SCRAM verifier). The role
 * owns the run's databases and the schema's objects in them (role-ownership.ts), and is dropped
 * with them. The gate's own connections (templates, EXPLAIN, statistics, pg_stat_statements)
 * keep the URL's user.
 *
 * Where the URL's user may create no role, or the role cannot log in (a pooler that knows only
 * its own users), the replays run as the URL's user and the report says so. Both sides always
 * replay as the same kind of user: a role's missing privileges on one side only would show as
 * errors the change under test did not cause.
 */
import crypto from 'node:crypto';
import pg from 'pg';
import type { Server } from '../provision/index.js';
import type { Logger } from '../runtime/logger.js';
import { createLoginRole, dropRole, rolePrivileges, setDatabaseOwner } from '../provision/database.js';
import { giveSchemaTo, takeSchemaBack } from '../provision/role-ownership.js';
import { scramVerifier } from '../provision/scram.js';
import { passwordOf, redact, replayUrl, withDatabase } from '../provision/url.js';

/** A role created for the run. */
export interface ReplayRole {
  name: string;
  /** Random; kept in memory only (mask it in anything printed). */
  password: string;
}

/** What one server of the run replays as. */
export interface PlaceIdentity {
  /** The role, when the replays there run as one; undefined: as the URL's user. */
  role?: ReplayRole;
  /** `current_user` of the URL. */
  user: string;
  /** Why not as a role of the run's own; undefined when as one. */
  reason?: string;
  /** The user asked for it (`allow-server-wide`): nothing to warn about. */
  asked?: boolean;
  /** Other things the report should say (roles of the schema it could not join, statistics it hides). */
  warnings: string[];
}

/** A server of the run, what it has built there, and where a role's name is recorded for cleanup. */
export interface RolePlace {
  server: Server;
  prefix: string;
  /** The templates built on it, which replays copy. */
  templates: string[];
  /** Set as soon as a role may exist, so that cleanup drops it whatever happens next. */
  role?: string;
  /** Whether pg_stat_statements is read there (its reader must see the role's query ids). */
  readsCounters: boolean;
}

/**
 * Creates the replay role on a place's server and hands it the templates; on any refusal, says
 * why the replays there run as the URL's user instead (and drops what it made).
 * @param place the server, the name prefix, the templates
 * @param logger progress lines
 * @param asUser why the user asked for the replays to run as the URL's user, if it did
 * @returns the identity
 */
export async function prepareReplayRole(place: RolePlace, logger: Logger, asUser?: string): Promise<PlaceIdentity> {
  const privileges = await rolePrivileges(place.server.url);
  const user = privileges.user;
  if (asUser !== undefined) return { user, reason: asUser, asked: true, warnings: [] };
  if (!privileges.superuser && !privileges.createRole) {
    return { user, reason: `${user} may not create roles (it has neither CREATEROLE nor SUPERUSER)`, warnings: [] };
  }
  const role: ReplayRole = { name: `${place.prefix}_replay`, password: crypto.randomBytes(24).toString('hex') };
  const secret = passwordOf(place.server.url);
  place.role = role.name;
  const started = Date.now();
  /** The templates the role has been handed (or may have been, when a handover failed). */
  const given: string[] = [];
  try {
    await createLoginRole(place.server.url, role.name, scramVerifier(role.password), privileges.superuser);
    const warnings: string[] = [];
    let objects = 0;
    for (const template of place.templates) {
      given.push(template);
      await setDatabaseOwner(place.server.url, template, role.name);
      const handover = await giveSchemaTo(withDatabase(place.server.url, template), role.name);
      objects += handover.objects;
      if (handover.refused.length > 0 && template === place.templates[0]) {
        warnings.push(
          `the replay role ${role.name} could not join these roles of the schema, so a workload's SET ROLE to them fails: ${handover.refused.join('; ')}`,
        );
      }
    }
    await checkLogin(roleUrl(replayUrl(place.server, withDatabase(place.server.url, place.templates[0]!)), role));
    if (place.readsCounters && !privileges.readsAllStats) {
      warnings.push(
        `pg_stat_statements shows ${user} the statements of the replay role ${role.name} without their query ids, so buffers and server time come from EXPLAIN; grant pg_read_all_stats to ${user} to use them`,
      );
    }
    logger.info(
      `replays run as ${role.name}, a role of the run's own (${objects} objects of the schema handed to it in ${Date.now() - started} ms)`,
    );
    return { role, user, warnings };
  } catch (error) {
    const why = redact(error instanceof Error ? error.message : String(error), secret);
    await releaseReplayRole(place, logger, given);
    return { user, reason: `a role of the run's own could not be used: ${why}`, warnings: [] };
  }
}

/**
 * Drops the place's replay role, if it made one; never throws (cleanup must not hide the run's
 * outcome). Its databases must be gone first, or be named in `kept`.
 * @param place the place
 * @param logger for warnings
 * @param kept databases that stay and that the role was handed (templates, when the replays
 *   fall back to the URL's user): what it was given there is taken back first
 */
export async function releaseReplayRole(place: Pick<RolePlace, 'server' | 'role'>, logger: Logger, kept: string[] = []): Promise<void> {
  if (place.role === undefined) return;
  const name = place.role;
  place.role = undefined;
  const warn = (e: Error) => logger.info(`warning: ${redact(e.message, passwordOf(place.server.url))}`);
  for (const database of kept) await takeSchemaBack(withDatabase(place.server.url, database), name).catch(warn);
  await dropRole(place.server.url, name).catch(warn);
}

/**
 * A URL as the role: the same server and database, the role's name and password.
 * @param url a postgres:// URL (of the URL's user)
 * @param role the role
 * @returns the URL the replay connects with
 */
export function roleUrl(url: string, role: ReplayRole): string {
  const parsed = new URL(url);
  parsed.username = role.name;
  parsed.password = role.password;
  for (const key of [...parsed.searchParams.keys()]) {
    if (['user', 'password'].includes(key.toLowerCase())) parsed.searchParams.delete(key);
  }
  return parsed.toString();
}

/** Logs in as the role once: a server whose pg_hba.conf, or a pooler that, knows only its own users refuses it. */
async function checkLogin(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (error) {
    throw new Error(`it cannot log in: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * The identities of a run's places, made alike: when one place replays as its URL's user, all do
 * (what a role may not do would otherwise fail on one side only and read as the change's fault).
 * @param identities each place's, base first
 * @returns the identities to replay with, and the line for the report's environment
 */
export function settleIdentities(identities: PlaceIdentity[]): { identities: PlaceIdentity[]; note: string; warnings: string[] } {
  const warnings = identities.flatMap((i) => i.warnings);
  const without = identities.find((i) => i.role === undefined);
  if (without === undefined) {
    const names = [...new Set(identities.map((i) => i.role!.name))].join(' and ');
    return { identities, note: `${names}: a role created for the run (no superuser, CREATEROLE or CREATEDB), dropped after it`, warnings };
  }
  const users = [...new Set(identities.map((i) => i.user))].join(' and ');
  const note = `${users}, the URL's user: ${without.reason}`;
  const other =
    identities.length > 1 && identities.some((i) => i.role !== undefined) ? '; so that both sides replay alike, neither uses one' : '';
  if (!without.asked) {
    warnings.push(
      `the replays ran as ${users}, not as a role of the run's own: ${without.reason}${other}. The workload ran with that user's privileges (docs/gate.md, "Replay isolation")`,
    );
  }
  return { identities: identities.map((i) => ({ user: i.user, reason: i.reason ?? without.reason, warnings: [] })), note, warnings };
}
