// Writes examples/oltp/oltp.wkl: a standard OLTP load generator's traffic, captured from a real
// server's csvlog with the project's own `capture`. Nothing in it is written by hand: pgbench
// runs a transaction in the shape of sysbench's oltp_read_write against four look-alike tables
// (examples/oltp/migrations, seed.sql), with named prepared statements over the extended
// protocol (`-M prepared`), and the capture reads back what the server logged.
//
//   npm run build && node scripts/capture-oltp-workload.mjs [--random-seed N] [out.wkl]
//
// Each transaction, on one of the four tables (one pgbench script per table, each `@1`: pgbench
// cannot vary a table's name): a point select, a range select and a range sum of 100 ids, an
// UPDATE of the indexed k and one of c, then a DELETE of an id and an INSERT of the same id with a
// random k. Ids follow sysbench's default "special" distribution (75 % of draws fall on 1 % of
// the ids), so sessions meet on the same rows now and then: when two delete and re-insert the
// same id at once, the second INSERT fails with a unique violation (SQLSTATE 23505). That race
// is the point of the workload; the capture's own races are in its sidecar (`failed`).
//
// Two choices differ from sysbench, which draws every id separately. The UPDATEs change the row
// the reads read, not the one deleted: a session whose UPDATE of the deleted id waited for
// another's commit would then delete that one's new row and insert without a conflict, and the
// race would be gone. And the updated id is never above the deleted one (the two draws are
// swapped when it is): every transaction takes its row locks in id order, so none deadlock (a
// deadlock costs deadlock_timeout, 1 s, in a workload of about 1 s).
//
// pgbench ends a client at its first failed statement (only deadlocks and serialization
// failures are retried, `--max-tries`), where sysbench would restart the transaction. So each of
// the 4 clients is a pgbench process of its own, started again for its remaining transactions
// when a race ended it: 4 sessions at a time, a new session after each race, as an application
// reconnecting would. Rate-limited (`-R`): 125 transactions per client at 200 per second, which
// keeps the file in the hundreds of KB. `--random-seed` seeds pgbench's draws; timing comes
// from a real run, so the file differs from run to run.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { buildExampleDatabase, captureServerLog, root, startLoggingServer } from './lib/logged-capture.mjs';

const args = process.argv.slice(2);
const seedAt = args.indexOf('--random-seed');
const randomSeed = seedAt >= 0 ? Number(args.splice(seedAt, 2)[1]) : 1;
if (!Number.isSafeInteger(randomSeed)) throw new Error('--random-seed needs a whole number');
const out = path.resolve(args[0] ?? path.join(root, 'examples', 'oltp', 'oltp.wkl'));
const oltp = (...parts) => path.join(root, 'examples', 'oltp', ...parts);

const TABLES = 4;
const CLIENTS = 4;
/** Transactions per client, and their rate per client (per second): about 1 s of traffic. */
const TRANSACTIONS = 125;
const RATE = 200;

/**
 * One id drawn as sysbench's "special" distribution does by default: 75 % of draws on the
 * first 1 % of the ids, the rest uniform over all of them.
 */
const specialId = (name) => `\\set hot random(1, 100)
\\if :hot <= 75
\\set ${name} random(1, :rows / 100)
\\else
\\set ${name} random(1, :rows)
\\endif`;

/** The pgbench script of table `t` (1-based), for tables of `rows` rows. */
const transaction = (t, rows) => `-- sysbench's oltp_read_write, one transaction on sbtest${t}
\\set rows ${rows}
${specialId('id')}
${specialId('id2')}
\\if :id2 < :id
\\set swap :id
\\set id :id2
\\set id2 :swap
\\endif
\\set id_end :id + 99
\\set k random(1, 100 * :rows)
\\set cs random(1, 99999999999)
\\set ps random(1, 99999999999)
BEGIN;
SELECT c FROM sbtest${t} WHERE id = :id;
SELECT c FROM sbtest${t} WHERE id BETWEEN :id AND :id_end;
SELECT sum(k) FROM sbtest${t} WHERE id BETWEEN :id AND :id_end;
UPDATE sbtest${t} SET k = k + 1 WHERE id = :id;
UPDATE sbtest${t} SET c = repeat(lpad(:cs::text, 11, '0') || '-', 10) WHERE id = :id;
DELETE FROM sbtest${t} WHERE id = :id2;
INSERT INTO sbtest${t} (id, k, c, pad) VALUES (:id2, :k, repeat(lpad(:cs::text, 11, '0') || '-', 10), repeat(lpad(:ps::text, 11, '0') || '-', 5));
COMMIT;
`;

/** Runs a program; resolves with its exit code and output. */
function run(program, argv) {
  return new Promise((resolve, reject) => {
    const child = spawn(program, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * One client: pgbench with one connection, started again after a failed statement ended it,
 * until it has run its transactions.
 * @returns {Promise<number>} how many times a failure ended the client
 */
async function client(pgbench, url, scripts, slot) {
  let left = TRANSACTIONS;
  let ended = 0;
  while (left > 0) {
    const seed = randomSeed * 1000 + slot * 100 + ended;
    const argv = ['-n', '-M', 'prepared', '-c', '1', '-t', String(left), '-R', String(RATE), '--max-tries', '10', `--random-seed=${seed}`];
    const r = await run(pgbench, [...argv, ...scripts.flatMap((s) => ['-f', `${s}@1`]), url]);
    if (r.code === 0) return ended;
    // Exit 2, a processed count and an SQL error: a failed statement aborted the client.
    const processed = /number of transactions actually processed: (\d+)/.exec(r.stdout);
    const failure = /aborted in command \d+ query \d+: (ERROR:[^\n]*)/.exec(r.stderr);
    if (r.code !== 2 || !processed || !failure)
      throw new Error(`pgbench exited ${r.code}: ${r.stderr.trim().split('\n').slice(-3).join(' / ')}`);
    console.log(`client ${slot + 1}: ${failure[1]}; starting it again`);
    // The aborted transaction counts as run: the loop always moves on.
    left -= Number(processed[1]) + 1;
    ended += 1;
  }
  return ended;
}

async function main() {
  const server = await startLoggingServer('oltp');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-oltp-'));
  try {
    const url = await buildExampleDatabase(server, 'oltp', oltp());
    const setup = new pg.Client(url);
    await setup.connect();
    // The ids the scripts draw are the seed's: the smallest table's row count.
    const counts = [];
    for (let t = 1; t <= TABLES; t += 1) counts.push(Number((await setup.query(`SELECT count(*) FROM sbtest${t}`)).rows[0].count));
    await setup.end();
    const rows = Math.min(...counts);

    const scripts = [];
    for (let t = 1; t <= TABLES; t += 1) {
      const file = path.join(tmp, `sbtest${t}.sql`);
      fs.writeFileSync(file, transaction(t, rows));
      scripts.push(file);
    }
    const pgbench = path.join(server.bindir, 'pgbench');
    const started = Date.now();
    const ended = await Promise.all(Array.from({ length: CLIENTS }, (_, slot) => client(pgbench, url, scripts, slot)));
    const races = ended.reduce((a, b) => a + b, 0);
    console.log(
      `${CLIENTS} clients, ${TRANSACTIONS} transactions each, in ${((Date.now() - started) / 1000).toFixed(1)} s; ${races} ended by a failure`,
    );

    // Only pgbench's sessions: the setup's statements are not the workload.
    captureServerLog(server, out, ['--database', 'oltp', '--application-name', 'pgbench']);
  } finally {
    await server.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(`capture-oltp-workload: ${error.message}`);
  process.exit(1);
});
