/**
 * The marker on every database the tool creates, by which later runs and `cleanup` tell the
 * databases a killed run left behind from everyone else's (leftovers.ts).
 *
 * It is the database's comment, `pg-retest-action run pgr_1a2b3c4d created 2026-11-26T17:00:00Z`,
 * written right after `CREATE DATABASE` with the server's clock:
 *
 * - a comment is ours to write (we own what we create) and shows in `\l+`, where a name is a
 *   convention anyone can follow by accident (`pgr_test`);
 * - it names the run (the prefix of the database's name), so that a run's databases go together;
 * - it takes the server's clock, so that runners whose clocks are apart agree on ages.
 *
 * `CREATE DATABASE` cannot share a transaction with the comment: a kill in the one round trip
 * between them leaves an unmarked database, which no cleanup touches.
 */
import type pg from 'pg';

const MARKER = /^pg-retest-action run ([a-z0-9_]+) created (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)$/;

/** The names the tool gives its databases: `<tool prefix>_<8 hex digits of the run>[_…]`. */
const RUN_OF_NAME = /^([a-z]+_[0-9a-f]{8})(?:_|$)/;

/** The names the tool gives databases: plain identifiers, written into SQL unquoted. */
export const DATABASE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The run a database belongs to: its name's prefix, or the name itself.
 * @param name a database the tool creates
 * @returns the run's name
 */
function runOf(name: string): string {
  return RUN_OF_NAME.exec(name)?.[1] ?? name;
}

/**
 * Marks a database the tool has just created.
 * @param client a connection to the server, as the database's owner
 * @param name the database, a plain identifier
 */
export async function markDatabase(client: pg.Client, name: string): Promise<void> {
  const { rows } = await client.query<{ now: string }>(`SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS now`);
  await client.query(`COMMENT ON DATABASE ${name} IS 'pg-retest-action run ${runOf(name)} created ${rows[0]!.now}'`);
}

/**
 * The statement that marks a role the tool has just created, as {@link markDatabase} marks a
 * database (a `DO` block, so that the server's clock goes into the comment in the same round trip).
 * @param name the role, a plain identifier of the tool's (`<run>_replay`)
 * @returns the statement
 */
export function roleMarkerStatement(name: string): string {
  if (!DATABASE_NAME.test(name)) throw new Error(`invalid role name '${name}'`);
  return (
    `DO $$ BEGIN EXECUTE format('COMMENT ON ROLE %I IS %L', '${name}', ` +
    `'pg-retest-action run ${runOf(name)} created ' || to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')); END $$`
  );
}

/**
 * The run and creation time a database's (or role's) comment marks it with, when the comment is our marker
 * for this very name (a marker copied onto another database, or a name the tool never gives, is
 * not ours).
 * @param name the database
 * @param comment its comment
 * @returns the marker's content, or undefined
 */
export function readMarker(name: string, comment: string): { run: string; createdAt: Date } | undefined {
  const marker = MARKER.exec(comment);
  if (!marker || !DATABASE_NAME.test(name) || runOf(name) !== marker[1]) return undefined;
  return { run: marker[1]!, createdAt: new Date(marker[2]!) };
}
