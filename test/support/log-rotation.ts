// New log files for each phase of a capture test: the server logs to several destinations at
// once (csvlog and jsonlog, or csvlog and stderr), and each phase must read only its own traffic.
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { eventually } from './eventually.js';

/**
 * Applies logging settings (ALTER SYSTEM, reload), rotates the logs, and returns the new file of
 * each destination, found by its suffix (`{ csv: '.csv', json: '.json' }`).
 */
export async function rotateLogs<K extends string>(
  admin: pg.Client,
  logDir: string,
  settings: Record<string, string>,
  suffixes: Record<K, string>,
): Promise<Record<K, string>> {
  for (const [key, value] of Object.entries(settings)) await admin.query(`ALTER SYSTEM SET ${key} = '${value}'`);
  await admin.query('SELECT pg_reload_conf()');
  // A new file name (log_filename has seconds): a lower bound on the clock, not a wait for
  // anything to happen; load only makes it longer.
  await sleep(1_100);
  const logFiles = () => new Set(fs.readdirSync(logDir).map((f) => path.join(logDir, f)));
  const before = logFiles();
  await admin.query('SELECT pg_rotate_logfile()');
  // The logging collector rotates when it sees the signal: the new files, once all exist, get
  // every statement sent after (it opens each destination's file before reading anything more
  // from its pipe).
  const kinds = Object.entries(suffixes) as [K, string][];
  const found: Partial<Record<K, string>> = {};
  await eventually(
    () => {
      const fresh = [...logFiles()].filter((f) => !before.has(f));
      for (const [kind, suffix] of kinds) found[kind] = fresh.find((f) => f.endsWith(suffix));
      return kinds.every(([kind]) => found[kind] !== undefined);
    },
    `new log files (${kinds.map(([, suffix]) => suffix).join(', ')})`,
    30_000,
    50,
  );
  return found as Record<K, string>;
}
