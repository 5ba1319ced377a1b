/**
 * Hands a database's schema to a role: the objects the migrating user created become the role's,
 * and the role joins the roles the schema names, so that a workload replayed as it can do what it
 * did as that user (docs/gate.md, "Replay isolation").
 *
 * Ownership rather than grants: an owner may ALTER, DROP, TRUNCATE, VACUUM, REFRESH, CREATE INDEX
 * and bypasses row-level security (unless FORCE), as the superuser the workload used to run as
 * did; `GRANT ALL` gives none of that. The change is made once in each template, and every replay
 * database copied from it inherits it, so a replay pays only for making the role its database's
 * owner.
 */
import type pg from 'pg';
import { withConnection } from './database.js';

/** Schemas that are the server's, not the application's. */
const USER_SCHEMA = `n.nspname <> 'information_schema' AND n.nspname !~ '^pg_'`;

/** Not a member of an extension (its objects are the extension's business). */
const notExtensionMember = (catalog: string, alias: string) =>
  `NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = '${catalog}'::regclass AND d.objid = ${alias}.oid AND d.deptype = 'e')`;

/**
 * The `ALTER … OWNER TO` statements, as queries producing them, in an order that works for a user
 * that is not superuser: the new owner of a relation, routine or type must have CREATE on its
 * schema, so schemas come first. Sequences owned by a column or identity follow their table;
 * array types follow their element type; relations' row types follow the relation.
 */
const OWNED_OBJECTS = [
  `SELECT format('ALTER SCHEMA %I OWNER TO %I', n.nspname, $1::text) FROM pg_namespace n
    WHERE n.nspowner = $2 AND ${USER_SCHEMA} AND ${notExtensionMember('pg_namespace', 'n')}`,
  `SELECT format('ALTER %s %s OWNER TO %I',
                 CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'S' THEN 'SEQUENCE' WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END,
                 c.oid::regclass, $1::text)
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relowner = $2 AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f') AND ${USER_SCHEMA} AND ${notExtensionMember('pg_class', 'c')}
      AND NOT (c.relkind = 'S' AND EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')))`,
  `SELECT format('ALTER ROUTINE %s OWNER TO %I', p.oid::regprocedure, $1::text)
     FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE p.proowner = $2 AND ${USER_SCHEMA} AND ${notExtensionMember('pg_proc', 'p')}`,
  `SELECT format('ALTER %s %s OWNER TO %I', CASE t.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END, t.oid::regtype, $1::text)
     FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
    WHERE t.typowner = $2 AND t.typtype IN ('b', 'c', 'd', 'e', 'r') AND ${USER_SCHEMA} AND ${notExtensionMember('pg_type', 't')}
      AND (t.typrelid = 0 OR EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = t.typrelid AND c.relkind = 'c'))
      AND NOT EXISTS (SELECT 1 FROM pg_type e WHERE e.typarray = t.oid)`,
  `SELECT format('ALTER LARGE OBJECT %s OWNER TO %I', l.oid, $1::text) FROM pg_largeobject_metadata l WHERE l.lomowner = $2`,
];

/**
 * Roles the schema names (owners, grantees of privileges, roles of policies) that the replay role
 * may join: none that could act beyond the database (superuser, CREATEROLE, CREATEDB,
 * REPLICATION), no predefined role, not the migrating user itself.
 */
const SCHEMA_ROLES = `
  WITH named(oid) AS (
    SELECT c.relowner FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE ${USER_SCHEMA}
    UNION SELECT (aclexplode(c.relacl)).grantee FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE ${USER_SCHEMA} AND c.relacl IS NOT NULL
    UNION SELECT p.proowner FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE ${USER_SCHEMA}
    UNION SELECT (aclexplode(p.proacl)).grantee FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE ${USER_SCHEMA} AND p.proacl IS NOT NULL
    UNION SELECT n.nspowner FROM pg_namespace n WHERE ${USER_SCHEMA}
    UNION SELECT (aclexplode(n.nspacl)).grantee FROM pg_namespace n WHERE ${USER_SCHEMA} AND n.nspacl IS NOT NULL
    UNION SELECT unnest(pol.polroles) FROM pg_policy pol
  )
  SELECT r.rolname FROM pg_roles r JOIN named ON named.oid = r.oid
   WHERE NOT (r.rolsuper OR r.rolcreaterole OR r.rolcreatedb OR r.rolreplication)
     AND r.rolname !~ '^pg_' AND r.rolname <> current_user AND r.rolname <> $1
   ORDER BY 1`;

/** What {@link giveSchemaTo} did. */
export interface SchemaHandover {
  /** Objects whose owner changed. */
  objects: number;
  /** Roles of the schema the role joined. */
  joined: string[];
  /** Roles it could not join, each with PostgreSQL's reason. */
  refused: string[];
}

/**
 * Gives the role the objects the URL's user owns in the database, and membership in the roles
 * its schema names (so that a workload's `SET ROLE` to them keeps working).
 * @param databaseUrl the database (a template: copies inherit what changes here)
 * @param role the role (it must be one the URL's user may act as)
 * @returns what changed
 */
export async function giveSchemaTo(databaseUrl: string, role: string): Promise<SchemaHandover> {
  return withConnection(databaseUrl, `cannot give the schema's objects to ${role}`, async (client) => {
    const me = (await client.query<{ oid: number }>('SELECT oid::int8::float8 AS oid FROM pg_roles WHERE rolname = current_user')).rows[0]!
      .oid;
    let objects = 0;
    await client.query('BEGIN');
    try {
      for (const query of OWNED_OBJECTS) {
        const statements = (await client.query<{ format: string }>(query, [role, me])).rows.map((r) => r.format);
        for (const sql of statements) await client.query(sql);
        objects += statements.length;
      }
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw stripCode(error);
    }
    const { joined, refused } = await joinRoles(client, role);
    return { objects, joined, refused };
  });
}

/** Membership in the schema's roles, one at a time: a user that is not superuser may lack ADMIN OPTION on some. */
async function joinRoles(client: pg.Client, role: string): Promise<{ joined: string[]; refused: string[] }> {
  const names = (await client.query<{ rolname: string }>(SCHEMA_ROLES, [role])).rows.map((r) => r.rolname);
  const joined: string[] = [];
  const refused: string[] = [];
  for (const name of names) {
    try {
      const sql = (await client.query<{ sql: string }>('SELECT format($$GRANT %I TO %I$$, $1::text, $2::text) AS sql', [name, role]))
        .rows[0]!.sql;
      await client.query(sql);
      joined.push(name);
    } catch (error) {
      refused.push(`${name} (${error instanceof Error ? error.message : String(error)})`);
    }
  }
  return { joined, refused };
}

/** A database error as a plain one: the caller words the consequence, and no CREATEDB hint applies. */
function stripCode(error: unknown): Error {
  return new Error(error instanceof Error ? error.message : String(error));
}

/**
 * Undoes {@link giveSchemaTo} in a database the run goes on using as the URL's user (the role
 * could not log in): what the role owns there, and the databases it owns, go back to the URL's
 * user, and its privileges there are revoked. PostgreSQL drops no role that still owns or is
 * granted anything, and a role left behind on the user's server is a leak.
 * @param databaseUrl the database (a template the role was given)
 * @param role the role (a plain identifier; it must exist)
 */
export async function takeSchemaBack(databaseUrl: string, role: string): Promise<void> {
  await withConnection(databaseUrl, `cannot take the schema's objects back from ${role}`, async (client) => {
    try {
      await client.query(`REASSIGN OWNED BY ${role} TO CURRENT_USER`);
      await client.query(`DROP OWNED BY ${role}`);
    } catch (error) {
      throw stripCode(error);
    }
  });
}
