// Databases a killed run leaves on a server given with --database-url: marked when created,
// dropped by the next gate on that server or by `cleanup` once their run has been idle past the
// limit, and never a database without the marker. On a server of this file's own, since gates of
// other files sweep the shared one.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, dropDatabase } from '../src/provision/database.js';
import { dropStaleDatabases } from '../src/provision/leftovers.js';
import { runCli } from './support/cli.js';
import { eventually } from './support/eventually.js';
import { explain, gate, GATE_TIMEOUT_MS, useGateFixtures } from './support/gate-run.js';
import { LATENCY_RULE_OUT_OF_REACH } from './support/latency-rule.js';
import { startPostgres, type TestServer } from './support/postgres.js';
import { shop } from './support/shop-gate.js';

useGateFixtures();

let server: TestServer;
let admin: pg.Client;

beforeAll(async () => {
  server = await startPostgres();
  admin = new pg.Client(server.url);
  await admin.connect();
});

afterAll(async () => {
  await admin?.end().catch(() => {});
  await server?.stop();
});

const HOUR = 3_600_000;
const run = () => `pgr_${randomBytes(4).toString('hex')}`;

/** A database with a comment, as an earlier run (or someone else) left it. */
async function plant(name: string, comment?: string): Promise<void> {
  await admin.query(`CREATE DATABASE ${name}`);
  if (comment !== undefined) await admin.query(`COMMENT ON DATABASE ${name} IS '${comment}'`);
}

/** Our marker for a run, `hoursAgo` hours before now (whole seconds, as the tool writes it). */
const marker = (runName: string, hoursAgo: number) =>
  `pg-retest-action run ${runName} created ${new Date(Date.now() - hoursAgo * HOUR).toISOString().replace(/\.\d{3}Z$/, 'Z')}`;

/** The databases carrying our marker. */
async function markedDatabases(): Promise<string[]> {
  const { rows } = await admin.query<{ datname: string }>(
    "SELECT datname FROM pg_database WHERE shobj_description(oid, 'pg_database') LIKE 'pg-retest-action run %' ORDER BY 1",
  );
  return rows.map((r) => r.datname);
}

/** Moves a database's marker `hours` back. */
async function backdate(name: string, hours: number): Promise<void> {
  const { rows } = await admin.query<{ comment: string }>(
    "SELECT shobj_description(oid, 'pg_database') AS comment FROM pg_database WHERE datname = $1",
    [name],
  );
  const created = Date.parse(/created (\S+)$/.exec(rows[0]!.comment)![1]!);
  const moved = new Date(created - hours * HOUR).toISOString().replace(/\.\d{3}Z$/, 'Z');
  await admin.query(`COMMENT ON DATABASE ${name} IS '${rows[0]!.comment.replace(/created \S+$/, `created ${moved}`)}'`);
}

/** The roles carrying our marker. */
async function markedRoles(): Promise<string[]> {
  const { rows } = await admin.query<{ rolname: string }>(
    "SELECT rolname FROM pg_roles WHERE shobj_description(oid, 'pg_authid') LIKE 'pg-retest-action run %' ORDER BY 1",
  );
  return rows.map((r) => r.rolname);
}

/** Moves a role's marker `hours` back. */
async function backdateRole(name: string, hours: number): Promise<void> {
  const { rows } = await admin.query<{ comment: string }>(
    "SELECT shobj_description(oid, 'pg_authid') AS comment FROM pg_roles WHERE rolname = $1",
    [name],
  );
  const created = Date.parse(/created (\S+)$/.exec(rows[0]!.comment)![1]!);
  const moved = new Date(created - hours * HOUR).toISOString().replace(/\.\d{3}Z$/, 'Z');
  await admin.query(`COMMENT ON ROLE ${name} IS '${rows[0]!.comment.replace(/created \S+$/, `created ${moved}`)}'`);
}

async function databases(prefix: string): Promise<string[]> {
  const { rows } = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY 1', [
    prefix,
  ]);
  return rows.map((r) => r.datname);
}

describe('databases the tool creates', () => {
  it('carry a marker naming their run and when they were created', async () => {
    const name = `${run()}_base`;
    await createDatabase(server.url, name);
    const { rows } = await admin.query<{ comment: string; now: Date }>(
      'SELECT shobj_description(oid, $2) AS comment, now() FROM pg_database WHERE datname = $1',
      [name, 'pg_database'],
    );
    const match = /^pg-retest-action run (pgr_[0-9a-f]{8}) created (\S+)$/.exec(rows[0]!.comment ?? '');
    expect(match, rows[0]!.comment).not.toBeNull();
    expect(`${match![1]}_base`).toBe(name);
    // The server's clock, to the second: a minute's room for a busy runner between the marker
    // and this query; a time zone taken wrongly would be an hour or more off.
    expect(Math.abs(Date.parse(match![2]!) - rows[0]!.now.getTime())).toBeLessThan(60_000);
    await admin.query(`DROP DATABASE ${name}`);
  });

  it('are dropped while a client connects again the moment it is cut off, as a pooler does', async () => {
    for (let attempt = 0; attempt < 10; attempt++) {
      const name = `${run()}_r1_head`;
      const client = reconnecting(await createDatabase(server.url, name));
      await dropDatabase(server.url, name);
      await client.stop();
      expect(await databases(name)).toEqual([]);
    }
  });

  it('are copied from a template a client connects to again the moment it is cut off', async () => {
    const template = `${run()}_base`;
    const client = reconnecting(await createDatabase(server.url, template));
    const copies = Array.from({ length: 10 }, (_, i) => `${template}_r${i}`);
    try {
      for (const copy of copies) await createDatabase(server.url, copy, template);
      expect(await databases(`${template}_r`)).toEqual(copies.sort());
    } finally {
      await client.stop();
      for (const name of [...copies, template]) await dropDatabase(server.url, name);
    }
  });
});

/**
 * One client after another on a database, each connecting the moment the last is ended, as a
 * pooler does when its clients keep asking. Connections are refused while a drop holds the
 * database, and once it is gone.
 * @returns stop: waits for the last client to end
 */
function reconnecting(url: string): { stop: () => Promise<void> } {
  let stopped = false;
  let current: pg.Client | undefined;
  const clients = (async () => {
    while (!stopped) {
      const client = new pg.Client(url);
      client.on('error', () => {});
      const ended = new Promise((resolve) => client.once('end', resolve));
      const connected = await client.connect().then(
        () => true,
        () => false,
      );
      if (!connected) continue;
      current = client;
      if (stopped) await client.end();
      else await ended;
      current = undefined;
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await current?.end().catch(() => {});
      await clients;
    },
  };
}

describe('dropping what killed runs left', () => {
  it('drops the marked databases of idle runs, and nothing fresh, in use, unmarked or marked for another name', async () => {
    const [idle, busy, active, copied] = [run(), run(), run(), run()];
    await plant(`${idle}_base`, marker(idle, 7));
    await plant(`${idle}_r1_head`, marker(idle, 6.5));
    // A run whose templates are old but that created a database an hour ago is still going.
    await plant(`${active}_base`, marker(active, 8));
    await plant(`${active}_r9_base`, marker(active, 1));
    // A run with a connection open is alive, whatever the ages.
    await plant(`${busy}_base`, marker(busy, 9));
    await plant(`${copied}_x`);
    await plant(`${copied}_y`, marker(idle, 9));
    const connection = new pg.Client({ connectionString: server.url.replace(/\/postgres$/, `/${busy}_base`) });
    await connection.connect();
    try {
      const dry = await dropStaleDatabases(server.url, { olderThanMs: 6 * HOUR, dryRun: true });
      expect(dry.dropped.map((d) => d.name).sort()).toEqual([`${idle}_base`, `${idle}_r1_head`]);
      expect(await databases(idle)).toHaveLength(2);

      const cli = await runCli(['cleanup', '--database-url', server.url]);
      expect(cli.code, cli.stderr).toBe(0);
      expect(cli.stdout).toContain(`dropped ${idle}_base (run ${idle}, created `);
      expect(cli.stdout).toMatch(
        /: dropped 2 databases of idle runs; kept 2 of runs active in the last 6 h 00 min, 1 of runs with an open connection/,
      );
      expect(await databases(idle)).toEqual([]);
      expect(await databases(active)).toHaveLength(2);
      expect(await databases(busy)).toHaveLength(1);
      // Unmarked, or marked with another run than its name says: not ours, even named pgr_*.
      expect(await databases(copied)).toEqual([`${copied}_x`, `${copied}_y`]);

      // A shorter limit on demand.
      const short = await runCli(['cleanup', '--database-url', server.url, '--older-than', '30m', '--dry-run']);
      expect(short.code, short.stderr).toBe(0);
      expect(short.stdout).toContain(`would drop ${active}_r9_base`);
      expect(await databases(active)).toHaveLength(2);
    } finally {
      await connection.end();
    }
    for (const name of [...(await databases(active)), ...(await databases(busy)), ...(await databases(copied))])
      await admin.query(`DROP DATABASE ${name}`);
  });

  it("drops a killed run's marked replay role once none of its databases is left, and no other role", async () => {
    const [gone, living, stranger] = [run(), run(), run()];
    for (const [role, comment] of [
      [`${gone}_replay`, marker(gone, 7)],
      [`${living}_replay`, marker(living, 7)],
      // Named like ours, but unmarked, and marked for another run: not ours.
      [`${stranger}_replay`, undefined],
      [`${stranger}_other`, marker(gone, 9)],
    ] as const) {
      await admin.query(`CREATE ROLE ${role}`);
      if (comment) await admin.query(`COMMENT ON ROLE ${role} IS '${comment}'`);
    }
    // The living run still has a database created an hour ago.
    await plant(`${living}_r3_base`, marker(living, 1));
    try {
      const dry = await runCli(['cleanup', '--database-url', server.url, '--dry-run']);
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stdout).toContain(`would drop role ${gone}_replay (run ${gone}, created `);
      expect(await markedRoles()).toContain(`${gone}_replay`);
      const cli = await runCli(['cleanup', '--database-url', server.url]);
      expect(cli.code, cli.stderr).toBe(0);
      expect(cli.stdout).toMatch(/: dropped 0 databases and 1 role of idle runs/);
      const { rows } = await admin.query<{ rolname: string }>('SELECT rolname FROM pg_roles WHERE rolname = ANY($1) ORDER BY 1', [
        [`${gone}_replay`, `${living}_replay`, `${stranger}_replay`, `${stranger}_other`],
      ]);
      expect(rows.map((r) => r.rolname)).toEqual([`${living}_replay`, `${stranger}_other`, `${stranger}_replay`].sort());
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${living}_r3_base`);
      for (const role of [`${gone}_replay`, `${living}_replay`, `${stranger}_replay`, `${stranger}_other`])
        await admin.query(`DROP ROLE IF EXISTS ${role}`);
    }
  });

  it('refuses a cleanup without a server, or with a bad limit', async () => {
    let r = await runCli(['cleanup']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/option --database-url: is required/);
    r = await runCli(['cleanup', '--database-url', server.url, '--older-than', 'soon']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/option --older-than: expected a duration such as 30m, 2h or 90s, got 'soon'/);
  });

  it(
    "a SIGKILLed gate's databases are dropped by the next gate once the limit has passed",
    async () => {
      const migrations = shop('migrations', '*.sql');
      const args = [
        'gate',
        '--database-url',
        server.url,
        '--workload',
        shop('workload.wkl'),
        '--base-migrations',
        migrations,
        '--migrations',
        migrations,
        '--rounds',
        '1',
        // What is checked is the cleanup; a latency false alarm on this busy server would turn
        // the verdict into a regression (exit 1) by chance.
        '--confirm-rounds',
        '0',
        ...LATENCY_RULE_OUT_OF_REACH,
      ];
      let killed = false;
      const first = await gate(args, undefined, (soFar, child) => {
        if (!killed && soFar.includes('round 1/')) {
          killed = true;
          child.kill('SIGKILL');
        }
      });
      expect(killed, explain(first)).toBe(true);
      // Its connections end with it; until then it would count as alive.
      await eventually(
        async () => (await admin.query('SELECT 1 FROM pg_stat_activity WHERE starts_with(datname, $1)', ['pgr_'])).rows.length === 0,
        "the killed gate's connections gone",
      );
      const left = await markedDatabases();
      expect(left.length, 'the killed run left its templates behind, marked').toBeGreaterThanOrEqual(2);
      const roles = await markedRoles();
      expect(roles, 'and its replay role, marked').toHaveLength(1);

      // Fresh: a gate now leaves them.
      expect((await dropStaleDatabases(server.url, { olderThanMs: 6 * HOUR, dryRun: true })).dropped).toEqual([]);
      // Seven hours later (the markers moved back, as the clock would have moved on).
      for (const name of left) await backdate(name, 7);
      await backdateRole(roles[0]!, 7);
      const next = await gate(args);
      // Without the seed much of the shop's workload fails on base: a pass or inconclusive (4).
      expect([0, 4], explain(next)).toContain(next.code);
      expect(next.stderr).toContain(`dropped ${left.length} database(s) left behind by runs idle for 6 h or more`);
      expect(next.stderr).toContain(`dropped 1 replay role(s) of those runs: ${roles[0]}`);
      expect(await markedDatabases()).toEqual([]);
      expect(await markedRoles()).toEqual([]);
      // A kill in the one round trip between CREATE DATABASE and its marker leaves an unmarked
      // database, which nothing drops: this test's own cleanup.
      for (const name of await databases('pgr_')) await admin.query(`DROP DATABASE ${name}`);
    },
    GATE_TIMEOUT_MS * 2,
  );
});
