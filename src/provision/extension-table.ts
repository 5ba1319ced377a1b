/**
 * The extensions the gate knows how to bring to a server it starts (docs/extensions.md): which
 * package has them for a PostgreSQL major on Debian and Ubuntu (the PostgreSQL project's apt
 * repository, which GitHub's Ubuntu runners use, names them the same way), which Docker image
 * has them, what they must preload, and which types and functions they provide (so that a
 * migration using them on a server without the package reads as the server's fault).
 *
 * Contrib extensions (pg_trgm, citext, pgcrypto, hstore, uuid-ossp, …) are not here: every
 * server has them, and the server's own extension directory says which it has.
 */

export interface KnownExtension {
  /** The name `CREATE EXTENSION` takes. */
  name: string;
  /** Other names users write for it (the project's name when it differs). */
  aliases: readonly string[];
  /** Other extensions the same package installs. */
  siblings: readonly string[];
  /** The Debian/Ubuntu package for a major. */
  aptPackage: (major: number) => string;
  /** Where the package comes from when the distribution's own sources do not have it. */
  aptSource: string;
  /** An image on Docker Hub with it, for a major (where its project publishes one). */
  dockerImage?: (major: number) => string;
  /** A library it needs in `shared_preload_libraries`, if any. */
  preload?: string;
  /** Its shared libraries' names (`$libdir/<name>` in a dump's C functions). */
  libraries: readonly string[];
  /** Types it provides (lower case). */
  types: readonly string[];
  /** A pattern of the functions it provides (lower case names). */
  functions?: RegExp;
}

const PGDG = "Debian's and Ubuntu's own sources and the PostgreSQL project's apt repository (PGDG)";

export const KNOWN_EXTENSIONS: readonly KnownExtension[] = [
  {
    name: 'postgis',
    aliases: [],
    siblings: ['postgis_raster', 'postgis_topology', 'postgis_sfcgal', 'postgis_tiger_geocoder', 'address_standardizer'],
    aptPackage: (major) => `postgresql-${major}-postgis-3`,
    aptSource: PGDG,
    dockerImage: (major) => `postgis/postgis:${major}-3.5`,
    libraries: ['postgis-3', 'postgis_raster-3', 'postgis_topology-3', 'postgis_sfcgal-3'],
    types: ['geometry', 'geography', 'box2d', 'box3d', 'raster', 'topogeometry'],
    functions: /^(st|postgis)_/,
  },
  {
    name: 'vector',
    aliases: ['pgvector'],
    siblings: [],
    aptPackage: (major) => `postgresql-${major}-pgvector`,
    aptSource: "the PostgreSQL project's apt repository (PGDG), and some distributions' own sources",
    dockerImage: (major) => `pgvector/pgvector:pg${major}`,
    libraries: ['vector'],
    types: ['vector', 'halfvec', 'sparsevec'],
  },
  {
    name: 'timescaledb',
    aliases: [],
    siblings: ['timescaledb_toolkit'],
    aptPackage: (major) => `timescaledb-2-postgresql-${major}`,
    aptSource: "Timescale's own apt repository (packagecloud), which has to be added first",
    dockerImage: (major) => `timescale/timescaledb:latest-pg${major}`,
    preload: 'timescaledb',
    libraries: ['timescaledb'],
    types: [],
    functions: /^(time_bucket|create_hypertable|add_(retention|compression|continuous_aggregate)_policy)$/,
  },
  {
    name: 'pg_partman',
    aliases: ['partman'],
    siblings: [],
    aptPackage: (major) => `postgresql-${major}-partman`,
    aptSource: PGDG,
    libraries: ['pg_partman_bgw'],
    types: [],
  },
  {
    name: 'pgaudit',
    aliases: [],
    siblings: [],
    aptPackage: (major) => `postgresql-${major}-pgaudit`,
    aptSource: PGDG,
    preload: 'pgaudit',
    libraries: ['pgaudit'],
    types: [],
  },
  {
    name: 'hypopg',
    aliases: [],
    siblings: [],
    aptPackage: (major) => `postgresql-${major}-hypopg`,
    aptSource: PGDG,
    libraries: ['hypopg'],
    types: [],
    functions: /^hypopg_/,
  },
  {
    name: 'pg_cron',
    aliases: ['cron'],
    siblings: [],
    aptPackage: (major) => `postgresql-${major}-cron`,
    aptSource: PGDG,
    preload: 'pg_cron',
    libraries: ['pg_cron'],
    types: [],
  },
  {
    name: 'pg_repack',
    aliases: ['repack'],
    siblings: [],
    aptPackage: (major) => `postgresql-${major}-repack`,
    aptSource: PGDG,
    libraries: ['pg_repack'],
    types: [],
  },
  {
    name: 'pgrouting',
    aliases: [],
    siblings: [],
    aptPackage: (major) => `postgresql-${major}-pgrouting`,
    aptSource: PGDG,
    libraries: [],
    types: [],
    functions: /^pgr_/,
  },
  {
    name: 'rum',
    aliases: [],
    siblings: [],
    aptPackage: (major) => `postgresql-${major}-rum`,
    aptSource: PGDG,
    libraries: ['rum'],
    types: [],
  },
  {
    name: 'orafce',
    aliases: [],
    siblings: [],
    aptPackage: (major) => `postgresql-${major}-orafce`,
    aptSource: PGDG,
    libraries: ['orafce'],
    types: [],
  },
  {
    name: 'pgtap',
    aliases: [],
    siblings: [],
    aptPackage: (major) => `postgresql-${major}-pgtap`,
    aptSource: PGDG,
    libraries: [],
    types: [],
  },
];

/**
 * The table's entry for an extension name (its own, an alias, or another extension of its package).
 * @param name an extension name, any case
 * @returns the entry, or undefined for a name the table does not know
 */
export function knownExtension(name: string): KnownExtension | undefined {
  const wanted = name.toLowerCase();
  return KNOWN_EXTENSIONS.find((e) => e.name === wanted || e.aliases.includes(wanted) || e.siblings.includes(wanted));
}

/**
 * The name `CREATE EXTENSION` takes for what the user wrote (`pgvector` → `vector`).
 * @param name as given
 * @returns the extension's name
 */
export function canonicalExtensionName(name: string): string {
  const wanted = name.toLowerCase();
  const entry = KNOWN_EXTENSIONS.find((e) => e.aliases.includes(wanted));
  return entry ? entry.name : wanted;
}

/**
 * The extension of the table that provides a type or a function, or owns a shared library.
 * @param kind what the server said is missing
 * @param name its name as the server wrote it
 * @returns the entry, or undefined
 */
export function extensionProviding(kind: 'type' | 'function' | 'library', name: string): KnownExtension | undefined {
  const bare = name.toLowerCase().replace(/^\$libdir\//, '');
  return KNOWN_EXTENSIONS.find((e) => {
    if (kind === 'type') return e.types.includes(bare);
    if (kind === 'library') return e.libraries.includes(bare);
    return e.functions?.test(bare) ?? false;
  });
}

/**
 * The preload libraries a list of extensions needs.
 * @param names extension names
 * @returns the libraries, in the list's order, without repeats
 */
export function preloadsOf(names: readonly string[]): string[] {
  const libs = names.map((n) => knownExtension(n)?.preload).filter((l): l is string => l !== undefined);
  return [...new Set(libs)];
}
