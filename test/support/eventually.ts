// Waiting on effects of another process that has no completion event (a server's log, a port
// closing), by polling with a generous deadline: the deadline is a bound for a broken run, never
// a timing the test depends on.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';

/**
 * Polls until `check` holds.
 * @param check the condition, sync or async
 * @param what what is waited for, for the error
 * @param limitMs how long before giving up (and failing the test)
 * @param everyMs how often to look
 */
export async function eventually(check: () => Promise<boolean> | boolean, what: string, limitMs = 60_000, everyMs = 200): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`still not true after ${limitMs / 1000}s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/**
 * Waits until the server's logging collector has written everything logged so far to `files`:
 * sends a statement of its own last and polls until every file holds it on a whole line (the
 * collector reads one pipe in order, and the files are line-buffered).
 * @param client a connection to the server, on a database the test's captures do not read
 * @param files the log files that must hold it
 */
export async function logged(client: { query(sql: string): Promise<unknown> }, files: string[]): Promise<void> {
  const sentinel = `log-sentinel-${randomBytes(8).toString('hex')}`;
  await client.query(`SELECT '${sentinel}' AS sentinel`);
  const written = new RegExp(`${sentinel}[^\\n]*\\n`);
  await eventually(() => files.every((f) => written.test(fs.readFileSync(f, 'utf8'))), `${sentinel} in ${files.join(' and ')}`, 30_000, 50);
}
