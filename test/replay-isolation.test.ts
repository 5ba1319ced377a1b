// Replay isolation (docs/gate.md, "Replay isolation"): the gate replays as a role it creates for
// the run, and on a server it did not start it sends no statement that acts beyond the replay
// database. A captured `ALTER ROLE … PASSWORD` used to change a real role's password on the
// --database-url server. Through the bundled CLI, as users run it; one round, no confirmation,
// the latency rule out of reach: what is asserted are roles, accounting and errors.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { inspectWorkload, writeWorkload } from '../src/engine/index.js';
import { renderWorkloadSummary } from '../src/format/workload-summary.js';
import type { GateReport } from '../src/verdict/report-types.js';
import { adminQuery, adminSql } from './support/admin-sql.js';
import { LATENCY_RULE_OUT_OF_REACH } from './support/latency-rule.js';
import { localMajors } from './support/postgres.js';
import { type ProfileStatement, syntheticProfile } from './support/profile.js';
import { runCli } from './support/shop-gate.js';

const RUN_TIMEOUT_MS = 180_000;
const tag = randomBytes(3).toString('hex');
/**
 * Real roles of the server whose password and connection limit a workload tries to change, and
 * roles it tries to create: one pair for the run that sends them, one for the runs that must not
 * (the tests run side by side on the shared server).
 */
const kept = { victim: `iso_victim_${tag}`, intruder: `iso_intruder_${tag}` };
const sent = { victim: `iso_victim2_${tag}`, intruder: `iso_intruder2_${tag}` };
/** A role the schema grants to, which the workload switches to with SET ROLE. */
const reader = `iso_reader_${tag}`;
/** A user that may create databases but not roles. */
const limited = `iso_limited_${tag}`;
const limitedPassword = randomBytes(12).toString('hex');

let tmp: string;
let migrations: string;
let seed: string;
let workloads: { kept: string; sent: string };

/** Statements the application's sessions sent, with the ones that act beyond its database among them. */
function sessions({ victim, intruder }: { victim: string; intruder: string }): ProfileStatement[][] {
  const lookups = (s: number): ProfileStatement[] =>
    Array.from({ length: 40 }, (_, i) => [i * 1000, `SELECT qty FROM items WHERE id = ${1 + ((s * 40 + i) % 100)}`, 'Select']);
  return [
    lookups(0),
    lookups(1),
    [
      [0, 'UPDATE items SET qty = qty - 1 WHERE id = 7', 'Update'],
      // What the schema's owner may do: the replay role owns the schema's objects and the database.
      [1000, 'ALTER TABLE items ADD COLUMN IF NOT EXISTS note text', 'Ddl'],
      [2000, 'CREATE TABLE scratch (id int)', 'Ddl'],
      [3000, `SET ROLE ${reader}`, 'Other'],
      [4000, 'SELECT count(*) FROM items', 'Select'],
      [5000, 'RESET ROLE', 'Other'],
      // Superuser only: fails on both sides as the replay role.
      [6000, 'SET log_min_duration_statement = 0', 'Other'],
      // Server-wide.
      [7000, `ALTER ROLE ${victim} PASSWORD 'changed-by-replay'`, 'Other'],
      [8000, `DO $$ BEGIN EXECUTE 'ALTER ROLE ${victim} CONNECTION LIMIT 3'; END $$`, 'Other'],
      [9000, `CREATE ROLE ${intruder} LOGIN`, 'Ddl'],
    ],
  ];
}

/** A victim's password hash and connection limit, as the server keeps them. */
async function victimState(victim: string): Promise<string> {
  const rows = await adminQuery<{ state: string }>("SELECT rolpassword || '/' || rolconnlimit AS state FROM pg_authid WHERE rolname = $1", [
    victim,
  ]);
  return rows[0]!.state;
}

async function rolesNamed(prefix: string): Promise<string[]> {
  return (await adminQuery<{ rolname: string }>('SELECT rolname FROM pg_roles WHERE starts_with(rolname, $1)', [prefix])).map(
    (r) => r.rolname,
  );
}

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-isolation-'));
  fs.mkdirSync(path.join(tmp, 'db'));
  fs.writeFileSync(
    path.join(tmp, 'db', '001_items.sql'),
    // The reader exists on the shared server already; a server the gate starts gets it here.
    `DO $$ BEGIN CREATE ROLE ${reader} NOLOGIN; EXCEPTION WHEN duplicate_object OR insufficient_privilege THEN NULL; END $$;\n` +
      `CREATE TABLE items (id int PRIMARY KEY, qty int NOT NULL);\nGRANT SELECT ON items TO ${reader};\n`,
  );
  migrations = path.join(tmp, 'db', '*.sql');
  seed = path.join(tmp, 'seed.sql');
  fs.writeFileSync(seed, 'INSERT INTO items SELECT g, 100 FROM generate_series(1, 100) g;\n');
  workloads = { kept: path.join(tmp, 'kept.wkl'), sent: path.join(tmp, 'sent.wkl') };
  await writeWorkload(workloads.kept, syntheticProfile(sessions(kept)));
  await writeWorkload(workloads.sent, syntheticProfile(sessions(sent)));
  for (const { victim } of [kept, sent]) await adminSql(`CREATE ROLE ${victim} LOGIN PASSWORD 'original'`);
  await adminSql(`CREATE ROLE ${reader} NOLOGIN`);
  await adminSql(`CREATE ROLE ${limited} LOGIN CREATEDB PASSWORD '${limitedPassword}'`);
});

afterAll(async () => {
  for (const role of [kept.intruder, kept.victim, sent.intruder, sent.victim, reader, limited])
    await adminSql(`DROP ROLE IF EXISTS ${role}`);
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

/** `gate` on the items schema (A/A), one round. */
async function gate(
  server: string[],
  extra: string[] = [],
  workload = workloads.kept,
): Promise<{ code: number | null; stderr: string; report: GateReport }> {
  const json = path.join(tmp, `report-${randomBytes(4).toString('hex')}.json`);
  const args = ['gate', ...server, '--workload', workload, '--base-migrations', migrations, '--migrations', migrations, '--seed', seed];
  const run = await runCli(
    [...args, '--rounds', '1', '--confirm-rounds', '0', '--min-coverage', '50%', ...LATENCY_RULE_OUT_OF_REACH, '--json', json, ...extra],
    tmp,
  );
  if (!fs.existsSync(json)) throw new Error(`no JSON report (exit ${run.code}):\n${run.stderr}`);
  return { code: run.code, stderr: run.stderr, report: JSON.parse(fs.readFileSync(json, 'utf8')) as GateReport };
}

/** SQLSTATEs of the statements that failed on both sides, by normalized text. */
function sharedErrors(report: GateReport): Record<string, string> {
  return Object.fromEntries((report.comparison?.shared_errors ?? []).map((e) => [e.normalized, e.sqlstate]));
}

describe.concurrent('replay isolation', () => {
  it(
    '--database-url: a captured ALTER ROLE leaves the role unchanged, is skipped as server_wide and listed; the replays run as a role of the run that owns the schema',
    async () => {
      const before = await victimState(kept.victim);
      const run = await gate(['--database-url', inject('pgUrl')]);
      expect(run.code, run.stderr).toBe(0);
      expect(await victimState(kept.victim)).toBe(before);
      expect(await rolesNamed(kept.intruder)).toEqual([]);

      const r = run.report;
      const baseReplays = r.replays.filter((p) => p.side === 'base').length;
      expect(r.coverage!.base.skipped_by_reason.server_wide).toBe(3 * baseReplays);
      expect(r.coverage!.head.skipped_by_reason.server_wide).toBe(3);
      const listed = r.coverage!.not_compared.filter((n) => n.reason.startsWith("it acts beyond the replay's database"));
      expect(listed.map((n) => n.normalized).join('\n')).toMatch(/ALTER ROLE[\s\S]*CREATE ROLE|CREATE ROLE[\s\S]*ALTER ROLE/);
      expect(listed).toHaveLength(3);

      // Not a superuser: the superuser-only setting fails on both sides, and nothing else does.
      expect(sharedErrors(r)).toEqual({ 'SET log_min_duration_statement = $1': '42501' });
      expect(r.comparison!.new_errors).toEqual([]);
      const prefix = r.environment.database_prefix!;
      expect(r.environment.replay_user).toBe(
        `${prefix}_replay: a role created for the run (no superuser, CREATEROLE or CREATEDB), dropped after it; statements that act beyond the database (roles, settings, files, other sessions) skipped`,
      );
      expect(await rolesNamed(prefix)).toEqual([]);
      expect(await adminQuery('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [prefix])).toEqual([]);
    },
    RUN_TIMEOUT_MS,
  );

  it(
    "--database-url with --allow-server-wide: the statements are sent, as the URL's user",
    async () => {
      const run = await gate(['--database-url', inject('pgUrl')], ['--allow-server-wide'], workloads.sent);
      try {
        expect(run.report.coverage!.base.skipped_by_reason.server_wide ?? 0).toBe(0);
        expect(await victimState(sent.victim)).toMatch(/\/3$/);
        expect(await rolesNamed(sent.intruder)).toEqual([sent.intruder]);
        expect(run.report.environment.replay_user).toMatch(/the URL's user: allow-server-wide/);
        expect(run.report.warnings.join('\n')).not.toMatch(/not as a role of the run's own/);
      } finally {
        await adminSql(`DROP ROLE IF EXISTS ${sent.intruder}`);
      }
    },
    RUN_TIMEOUT_MS,
  );

  it(
    '--database-url as a user that may not create roles: replays as that user, says so, and still skips what acts beyond the database',
    async () => {
      const before = await victimState(kept.victim);
      const url = new URL(inject('pgUrl'));
      url.username = limited;
      url.password = limitedPassword;
      const run = await gate(['--database-url', url.toString()]);
      expect(await victimState(kept.victim)).toBe(before);
      expect(run.report.coverage!.base.skipped_by_reason.server_wide).toBeGreaterThan(0);
      expect(run.report.environment.replay_user).toMatch(new RegExp(`^${limited}, the URL's user: ${limited} may not create roles`));
      expect(run.report.warnings.join('\n')).toMatch(new RegExp(`the replays ran as ${limited}, not as a role of the run's own`));
      expect(run.stderr).not.toContain(limitedPassword);
    },
    RUN_TIMEOUT_MS,
  );

  it(
    "a server the gate starts: every statement is sent, as the run's role, whose lack of CREATEROLE refuses the role statements on both sides",
    async () => {
      const major = localMajors()[0] ?? 16;
      const run = await gate(['--postgres-version', String(major)]);
      expect(run.code, run.stderr).toBe(0);
      const r = run.report;
      expect(r.coverage!.base.skipped_by_reason.server_wide ?? 0).toBe(0);
      const errors = sharedErrors(r);
      expect(errors['SET log_min_duration_statement = $1']).toBe('42501');
      expect(Object.entries(errors).find(([sql]) => sql.startsWith('CREATE ROLE'))?.[1]).toBe('42501');
      // The role logged in with its password (the server the gate starts asks for one).
      expect(r.environment.replay_user).toMatch(/^pgr_[0-9a-f]{8}_replay: a role created for the run .*; every statement sent$/);
      expect(r.warnings.join('\n')).not.toMatch(/not as a role of the run's own|could not join/);
    },
    RUN_TIMEOUT_MS,
  );
});

describe('inspect', () => {
  it('counts the statements a server the run did not start is not sent, and the writes by kind and session', async () => {
    const summary = await inspectWorkload(workloads.kept);
    expect(summary).toMatchObject({ server_wide: 3, writes: 6, sessions_with_writes: 1, writes_by_kind: { update: 1, ddl: 4, call: 1 } });
    expect(renderWorkloadSummary(workloads.kept, summary)).toContain('6 may write (6.7%), 3 act beyond their database');
  });
});
