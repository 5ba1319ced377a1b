/** Types of pg-server.mjs. */
import type { Binaries, OsUser } from './pg-binaries.mjs';

export interface ServerOptions {
  /** initdb and postgres to use. */
  bins: Binaries;
  /** Run initdb and postgres as this account (when we run as root); undefined: as ourselves. */
  user: OsUser | undefined;
  /** The `postgres` superuser's password (SCRAM); undefined: connections from 127.0.0.1 are trusted. */
  password?: string;
  /** Server settings, passed as `-c key=value` after fsync=off and friends. */
  settings?: Record<string, string>;
  /** How long to wait for the server to accept connections (ms). Default 60 000. */
  startTimeoutMs?: number;
  /** Name prefix of the server's directory under the temp dir, e.g. `pg-retest-server-`. */
  dirPrefix: string;
  /** Start the supervisor in a process group of its own, out of reach of a terminal's Ctrl-C. */
  ownProcessGroup?: boolean;
  /** Put the last 30 lines of the server log in errors, instead of its most telling line. */
  fullLogs?: boolean;
  /** Builds the errors thrown for a server that cannot start. Default: plain Error. */
  makeError?: (message: string) => Error;
  /** Progress messages. */
  debug?: (message: string) => void;
  /**
   * The port to try first instead of a free one (a taken port is given up for a free one, as a
   * port taken between the probe and the bind is). Tests use it to take that path on purpose.
   */
  firstPort?: number;
}

/** A running throwaway server. */
export interface ThrowawayServer {
  /** `postgres://postgres[:password]@127.0.0.1:<port>/postgres` */
  url: string;
  port: number;
  /**
   * The directory of the server's Unix-domain socket (the server's own, mode 0700), or undefined
   * when its path would be too long; the server listens on 127.0.0.1 either way.
   */
  socketDir: string | undefined;
  /** The superuser: `postgres`. */
  user: string;
  /** The cluster's data directory; removed by stop(). */
  dataDir: string;
  /** The server's log; removed by stop(). */
  logFile: string;
  /**
   * Stops the server (fast shutdown, then harder) and removes its directory. Safe to call more
   * than once. Rejects when the server did not stop in time (it has then been killed).
   */
  stop(): Promise<void>;
  /** Sends a signal to the postmaster (default SIGKILL). */
  kill(signal?: NodeJS.Signals): void;
  /** Lets this process exit while the server runs; the supervisor then stops it. stop() undoes this. */
  unref(): void;
}

/** Starts a throwaway server on a free port of 127.0.0.1 in a fresh temporary directory. */
export function startThrowawayServer(options: ServerOptions): Promise<ThrowawayServer>;
