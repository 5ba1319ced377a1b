// `replay --database-url` and `run` against a database the tool did not create: a workload that may
// change data is refused there (exit 2, nothing written, the message says what would be written
// and how to allow it) unless the user allows the writes or skips them; statements that act
// beyond the database are skipped there. Against a real seeded database (the example shop), in
// this process (support/cli.ts).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { writeWorkload } from '../src/engine/index.js';
import { ExitCode } from '../src/exit-codes.js';
import type { ReplayReport } from '../src/types.js';
import { adminSql } from './support/admin-sql.js';
import { runCli as cli } from './support/cli.js';
import { exampleDatabase, shop } from './support/gate-run.js';
import { syntheticProfile } from './support/profile.js';

let tmp: string;
const databases: string[] = [];

/** A seeded copy of the shop, of this test's own. */
async function seeded(): Promise<string> {
  const url = await exampleDatabase();
  databases.push(decodeURIComponent(new URL(url).pathname.slice(1)));
  return url;
}

/** The first column of the first row. */
async function scalar(url: string, sql: string, values: unknown[] = []): Promise<string> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    return String(Object.values((await client.query(sql, values)).rows[0] as object)[0]);
  } finally {
    await client.end();
  }
}

/** What the shop's checkout workload changes: its orders and its stock. */
function state(url: string): Promise<string> {
  return scalar(url, "SELECT (SELECT count(*) FROM orders) || ' orders, stock ' || (SELECT sum(stock) FROM products)");
}

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-writes-'));
});

afterAll(async () => {
  for (const name of databases) await adminSql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

const REFUSAL =
  /^error: the workload has [\d,]+ statements that may change data \([\d,]+ UPDATE, [\d,]+ INSERT, .*\) in [\d,]+ sessions, and 127\.0\.0\.1:\d+\/t_gate_[0-9a-f]+ as [a-z_]+ is a database this tool did not create: /m;

describe('replay --database-url', () => {
  it('refuses a workload that writes (exit 2, nothing written), and replays it with --allow-writes or --read-only', async () => {
    const url = await seeded();
    const before = await state(url);
    const refused = await cli(['replay', '--database-url', url, '--workload', shop('workload.wkl'), '--speed', '0']);
    expect(refused.code, refused.stderr).toBe(ExitCode.BadInput);
    expect(refused.stderr).toMatch(REFUSAL);
    expect(refused.stderr).toMatch(/: pass --allow-writes to write them into it, or --read-only to skip them\n$/);
    expect(await state(url)).toBe(before);

    const readOnly = await cli(['replay', '--database-url', url, '--workload', shop('workload.wkl'), '--speed', '0', '--read-only']);
    expect(readOnly.code, readOnly.stderr).toBe(ExitCode.Ok);
    expect(await state(url)).toBe(before);

    const allowed = await cli(['replay', '--database-url', url, '--workload', shop('workload.wkl'), '--speed', '0', '--allow-writes']);
    expect(allowed.code, allowed.stderr).toBe(ExitCode.Ok);
    expect(await state(url)).not.toBe(before);
  }, 120_000);

  it('skips what acts beyond the database, unless --allow-server-wide', async () => {
    const url = await seeded();
    const victim = `wg_victim_${randomBytes(3).toString('hex')}`;
    await adminSql(`CREATE ROLE ${victim} PASSWORD 'original'`);
    try {
      const workload = path.join(tmp, 'role.wkl');
      await writeWorkload(
        workload,
        syntheticProfile([
          [
            [0, `ALTER ROLE ${victim} CONNECTION LIMIT 7`],
            [1000, 'SELECT count(*) FROM orders', 'Select'],
          ],
        ]),
      );
      const limit = () => scalar(inject('pgUrl'), 'SELECT rolconnlimit FROM pg_roles WHERE rolname = $1', [victim]);
      const json = path.join(tmp, 'role.json');
      const skipped = await cli([
        'replay',
        '--database-url',
        url,
        '--workload',
        workload,
        '--speed',
        '0',
        '--allow-writes',
        '--json',
        json,
      ]);
      expect(skipped.code, skipped.stderr).toBe(ExitCode.Ok);
      expect((JSON.parse(fs.readFileSync(json, 'utf8')) as ReplayReport).totals.skipped_by_reason).toEqual({ server_wide: 1 });
      expect(await limit()).toBe('-1');
      const sent = await cli([
        'replay',
        '--database-url',
        url,
        '--workload',
        workload,
        '--speed',
        '0',
        '--allow-writes',
        '--allow-server-wide',
      ]);
      expect(sent.code, sent.stderr).toBe(ExitCode.Ok);
      expect(await limit()).toBe('7');
    } finally {
      await adminSql(`DROP ROLE IF EXISTS ${victim}`);
    }
  });

  it('refuses --allow-writes where it means nothing', async () => {
    const workload = shop('workload.wkl');
    const started = await cli(['replay', '--workload', workload, '--allow-writes']);
    expect(started.code).toBe(ExitCode.BadInput);
    expect(started.stderr).toMatch(/option --allow-writes: applies with --database-url/);
    const both = await cli(['replay', '--workload', workload, '--database-url', 'postgres://u@h/db', '--allow-writes', '--read-only']);
    expect(both.code).toBe(ExitCode.BadInput);
    expect(both.stderr).toMatch(/option --allow-writes: cannot be combined with --read-only/);
  });
});

describe('run with a target', () => {
  it('refuses a workload that writes into [replay] target (exit 2, nothing written), and replays it with allow_writes = true', async () => {
    const url = await seeded();
    const before = await state(url);
    const config = (extra: string) => {
      const file = path.join(tmp, `run-${randomBytes(3).toString('hex')}.toml`);
      fs.writeFileSync(file, `[capture]\nworkload = "${shop('workload.wkl')}"\n[replay]\ntarget = "${url}"\nspeed = 0\n${extra}`);
      return file;
    };
    const refused = await cli(['run', '--config', config('')]);
    expect(refused.code, refused.stderr).toBe(ExitCode.BadInput);
    expect(refused.stderr).toMatch(REFUSAL);
    expect(refused.stderr).toMatch(
      /: set allow_writes = true under \[replay\] \(or pass --allow-writes\) to write them into it, or read_only = true to skip them\n/,
    );
    expect(await state(url)).toBe(before);

    const allowed = await cli(['run', '--config', config('allow_writes = true\n')]);
    expect(allowed.code, allowed.stderr).not.toBe(ExitCode.BadInput);
    expect(await state(url)).not.toBe(before);
    const flagged = await cli(['run', '--config', config(''), '--allow-writes']);
    expect(flagged.code, flagged.stderr).not.toBe(ExitCode.BadInput);
  }, 120_000);

  it('refuses a workload that writes into [[variants]] it cannot copy (exit 2, nothing written)', async () => {
    const user = `wg_nocreatedb_${randomBytes(3).toString('hex')}`;
    await adminSql(`CREATE ROLE ${user} LOGIN`);
    try {
      const own = [await seeded(), await seeded()];
      const urls = own.map((u) => {
        const url = new URL(u);
        url.username = user;
        return url.toString();
      });
      const befores = await Promise.all(own.map((u) => state(u)));
      const file = path.join(tmp, 'variants.toml');
      fs.writeFileSync(
        file,
        `[capture]\nworkload = "${shop('workload.wkl')}"\n[replay]\nspeed = 0\n${urls.map((u, i) => `[[variants]]\nlabel = "v${i}"\ntarget = "${u}"\n`).join('')}`,
      );
      const refused = await cli(['run', '--config', file]);
      expect(refused.code, refused.stderr).toBe(ExitCode.BadInput);
      expect(refused.stderr).toMatch(
        /statements that may change data .* and variant 'v0' \(127\.0\.0\.1:\d+\/t_gate_[0-9a-f]+ as wg_nocreatedb_[0-9a-f]+, which could not be copied\) is a database this tool did not create: set allow_writes = true/,
      );
      expect(await Promise.all(own.map((u) => state(u)))).toEqual(befores);
    } finally {
      await adminSql(`DROP ROLE IF EXISTS ${user}`);
    }
  });
});
