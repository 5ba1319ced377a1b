/**
 * Where the schemas and the test data come from, as the gate's and the capacity sweep's options
 * resolve them: what the templates are built from.
 */

/** How the two schemas are built: migration files (base's own when given apart) or a migrate command. */
export type SchemaSource = { kind: 'files'; head: string[]; base: string[] | undefined } | { kind: 'command'; command: string };

/** The test data loaded after base's migrations: a file (SQL, or a pg_dump archive) or a shell command. */
export type SeedSource = { kind: 'file'; path: string } | { kind: 'command'; command: string };
