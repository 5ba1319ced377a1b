/** The driver apps of test/drivers/ by short name. */
export type DriverName = 'node' | 'python' | 'java' | 'go';

/** One app: its label, what it is built from, and whether its toolchain is here. */
export interface Driver {
  /** The driver's name (`pgx`, `pgjdbc`, `psycopg`, `node-postgres`). */
  label: string;
  /** The files its build depends on, relative to test/drivers/ (a script run as it is is not one). */
  inputs: string[];
  /** One line naming the missing toolchain and how to install it, or null when it is here. */
  toolchain(): string | null;
}

export const DRIVERS: Record<DriverName, Driver>;

/** Builds one app unless its last build was made from the same files with the same toolchain; throws when its toolchain is missing or the build fails. */
export function installDriver(driver: DriverName): Promise<{ driver: DriverName; built: boolean; ms: number }>;

/** Runs a built app against a database (the URL in its environment as DATABASE_URL, never on its command line) to its end. */
export function runDriver(driver: DriverName, databaseUrl: string): Promise<{ code: number; stdout: string; stderr: string }>;
