/**
 * A migration (or the seed) failing because the server lacks an extension's package is the
 * environment's fault, never the SQL's: `CREATE EXTENSION` of an extension the server does not
 * have, or a type, function or shared library that an extension of the table would provide on a
 * server that cannot create it. Such a failure is an infrastructure error (exit 3) naming the
 * extension, the server and how to get it (docs/extensions.md), on base and on head alike.
 *
 * What servers say: PostgreSQL 15 and later `extension "x" is not available` (SQLSTATE 0A000,
 * also in later minors of 13 and 14); earlier minors `could not open extension control file
 * ".../x.control": No such file or directory` (58P01). A C function of a dump:
 * `could not access file "$libdir/postgis-3"` (58P01); a type or function used without the
 * extension: 42704 and 42883, which only count when the server cannot create the extension.
 */
import { InfraError } from '../exit-codes.js';
import { withConnection } from './database.js';
import { extensionProviding, knownExtension } from './extension-table.js';

/** A SQL file or migrate command failed for lack of an extension: exit 3, whatever the side. */
export class ExtensionUnavailableError extends InfraError {
  constructor(
    message: string,
    readonly extension: string,
  ) {
    super(message);
  }
}

/** An extension a server's error points at, and whether the error alone proves it is missing. */
export interface ExtensionClue {
  name: string;
  /** The server said the extension itself is not there; otherwise its availability decides. */
  certain: boolean;
}

/**
 * The extension a server's error message points at, if any.
 * @param message PostgreSQL's message (or a command's output)
 * @param sqlstate its SQLSTATE, when known
 * @returns the clue, or undefined
 */
export function extensionClue(message: string, sqlstate?: string | null): ExtensionClue | undefined {
  const notAvailable = /extension "([^"]+)" is not available/.exec(message);
  if (notAvailable) return { name: notAvailable[1]!, certain: true };
  const control = /could not open extension control file "(?:[^"]*\/)?([^/"]+)\.control"/.exec(message);
  if (control) return { name: control[1]!, certain: true };
  const library = /could not access file "([^"]+)"/.exec(message);
  if (library && (sqlstate === undefined || sqlstate === null || sqlstate === '58P01')) {
    const entry = extensionProviding('library', library[1]!);
    if (entry) return { name: entry.name, certain: true };
  }
  const type = /type "(?:[^"]+\.)?([^".]+)" does not exist/.exec(message);
  if (type && (sqlstate ?? '42704') === '42704') {
    const entry = extensionProviding('type', type[1]!);
    if (entry) return { name: entry.name, certain: false };
  }
  const fn = /function (?:[a-z_][a-z0-9_]*\.)?([a-z_][a-z0-9_]*)\(/i.exec(message);
  if (fn && /does not exist/.test(message) && (sqlstate ?? '42883') === '42883') {
    const entry = extensionProviding('function', fn[1]!);
    if (entry) return { name: entry.name, certain: false };
  }
  return undefined;
}

/**
 * Whether a failure is an extension the server cannot create.
 * @param url the database the statement ran in
 * @param message PostgreSQL's message
 * @param sqlstate its SQLSTATE
 * @returns the extension's name, or undefined when the failure is something else
 */
export async function unavailableExtension(url: string, message: string, sqlstate?: string | null): Promise<string | undefined> {
  const clue = extensionClue(message, sqlstate);
  if (!clue) return undefined;
  if (clue.certain) return clue.name;
  // A type or function of an extension the server has: the migration forgot CREATE EXTENSION.
  try {
    const found = await withConnection(url, 'extensions: cannot read the available extensions', (client) =>
      client.query('select 1 from pg_available_extensions where name = $1', [clue.name]),
    );
    return found.rowCount === 0 ? clue.name : undefined;
  } catch {
    // Cannot tell: leave the failure as the server reported it.
    return undefined;
  }
}

/**
 * How to get an extension onto a server like this one: what the `extensions` option does for
 * its kind (docs/extensions.md).
 * @param extension the extension
 * @param server the server's description (`PostgreSQL 15.8 (local, …)`, `(embedded, …)`, `(docker …)`, or a URL's)
 * @returns the advice, without a leading verb's subject
 */
export function howToGetExtension(extension: string, server: string): string {
  const entry = knownExtension(extension);
  const name = entry?.name ?? extension;
  const major = Number(/PostgreSQL (\d+)/.exec(server)?.[1]) || undefined;
  const pkg = entry && major ? entry.aptPackage(major) : undefined;
  const image = entry?.dockerImage && major ? entry.dockerImage(major) : undefined;
  const docker = image ? `provision docker with image ${image}` : 'provision docker with an image that has it';
  if (/\(embedded, /.test(server)) {
    return `the embedded server has contrib extensions only: use provision local with extensions ${name}${pkg ? ` (the gate installs ${pkg} on Debian/Ubuntu)` : ''}, or ${docker}`;
  }
  if (/\(local, /.test(server)) {
    return `list it in the extensions option (extensions: ${name}${pkg ? `; the gate installs ${pkg} on Debian/Ubuntu` : ''}), or use ${docker}`;
  }
  if (/\(docker /.test(server)) return `use an image that has it: ${docker}, with extensions ${name}`;
  return `install it on that server${pkg ? ` (${pkg} on Debian/Ubuntu)` : ''}, or let the gate start one with extensions ${name}`;
}

/**
 * The one line for a failure caused by a missing extension.
 * @param extension its name
 * @param where what failed: `head migration db/002.sql, line 3` or `migrate-command (head)`
 * @param server the server's description (kind, version, binaries)
 * @param serverMessage what PostgreSQL said
 * @returns the error (exit 3)
 */
export function extensionUnavailableError(
  extension: string,
  where: string,
  server: string,
  serverMessage: string,
): ExtensionUnavailableError {
  return new ExtensionUnavailableError(
    `${where}: ${serverMessage}: the server lacks the extension ${extension}, not a fault of the SQL (${server}); ` +
      `${howToGetExtension(extension, server)} (docs/extensions.md)`,
    extension,
  );
}
