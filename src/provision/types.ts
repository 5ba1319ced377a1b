/**
 * The shapes shared by every way of getting a PostgreSQL server (design §3.3): a
 * {@link Provisioner} per server kind, each returning a {@link Server} that it knows how to
 * stop.
 */

import type { Logger } from '../runtime/logger.js';

/** Where a server comes from. */
export type ServerKind = 'database-url' | 'local' | 'embedded' | 'docker';

/** A server ready for connections. */
export interface Server {
  kind: ServerKind;
  /**
   * Superuser (or the caller's) URL of a database on the server. For servers we start it is
   * `postgres://postgres[:password]@127.0.0.1:<port>/postgres`; mask it before printing
   * (`maskUrl` in url.ts).
   */
  url: string;
  /**
   * For a server we started on this machine: the directory of its Unix-domain socket, which the
   * replay connects to instead of `url`'s TCP port (`replayUrl` in url.ts). Undefined otherwise.
   */
  socketDir?: string;
  /** `major.minor`, e.g. `17.6`, as reported by the server or its binaries. */
  version: string;
  /** Where it came from, for logs: a bindir or the masked URL. */
  description: string;
  /** The server log, for servers we started; worth pointing at when something fails. */
  logFile?: string;
  /**
   * Stops the server and removes everything it created. Does nothing for a server we did not
   * start. Safe to call more than once; never throws (cleanup must not hide the real outcome).
   */
  stop(): Promise<void>;
}

/** Options for starting a throwaway server. */
export interface StartOptions {
  /** PostgreSQL major (13–18); undefined lets the provisioner choose. */
  major?: number;
  /** Extra server settings, passed as `-c key=value`. */
  settings?: Record<string, string>;
  /** How long to wait for the server to accept connections (ms). */
  startTimeoutMs?: number;
  /** docker only: the image to run instead of `postgres:<major>` (a pg-retest config names one). */
  image?: string;
  /**
   * Extensions the server must be able to create before any migration runs (extensions.ts): a
   * provisioner that cannot have them refuses before starting.
   */
  extensions?: readonly string[];
  logger?: Logger;
}

/** One way of getting a server. */
export interface Provisioner {
  readonly kind: ServerKind;
  start(options: StartOptions): Promise<Server>;
}
