// Gating server changes (docs/gate.md, "Gating server changes"): head on a server of its own —
// two identical servers (A/A), a smaller work_mem, another major, PgBouncer in transaction mode
// in front of the same server — through the bundled CLI, as users run it. Schemas and workloads
// are small and written here; each run is one round (base, head, noise) without confirmation.
// What is asserted does not depend on the runner's speed: versions and settings read from the
// servers, temp blocks per call, errors, and a slowdown of two orders of magnitude (docs/testing.md,
// "Timing").
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { writeWorkload } from '../src/engine/index.js';
import type { GateReport } from '../src/verdict/report-types.js';
import { adminQuery } from './support/admin-sql.js';
import { LATENCY_RULE_OUT_OF_REACH } from './support/latency-rule.js';
import { type PgBouncer, pgbouncerBinary, startPgBouncer } from './support/pgbouncer.js';
import { localMajors } from './support/postgres.js';
import { type ProfileStatement, syntheticProfile } from './support/profile.js';
import { runCli } from './support/shop-gate.js';

const RUN_TIMEOUT_MS = 180_000;
let tmp: string;

type Session = ProfileStatement[];

/** Point lookups: four sessions of 30, 2 ms apart. */
function lookups(): Session[] {
  return [0, 1, 2, 3].map((s) =>
    Array.from({ length: 30 }, (_, i) => [
      i * 2000 + s * 500,
      `SELECT name FROM customers WHERE id = ${1 + (((s * 30 + i) * 37) % 5000)}`,
      'Select',
    ]),
  );
}

/**
 * NOT IN over 5,000 rows: a hashed subplan (a few ms) while the hash table fits in work_mem, a
 * subplan rescanning a materialized (and, at 64kB, spilled) list per outer row otherwise (a few
 * hundred ms).
 */
const NOT_IN = (n: number) => `SELECT count(*) FROM customers WHERE id % 12 = ${n % 12} AND id NOT IN (SELECT customer_id FROM blocked)`;

/** Statements that leave state on their connection: what a transaction pooler breaks. */
function sessionState(): Session[] {
  return [0, 1, 2].map((s) => [
    [0, 'SET search_path TO app, public', 'Other'],
    [1000, `PREPARE lookup AS SELECT name FROM customers WHERE id = $1`, 'Other'],
    [2000, 'LISTEN order_ready', 'Other'],
    [3000, `SELECT pg_advisory_lock(${100 + s})`, 'Select'],
    ...Array.from({ length: 20 }, (_, i): Session[number] => [
      4000 + i * 2000,
      i % 2 === 0 ? 'SELECT count(*) FROM widgets' : `EXECUTE lookup(${i + s})`,
      i % 2 === 0 ? 'Select' : 'Other',
    ]),
    [50_000, `SELECT pg_advisory_unlock(${100 + s})`, 'Select'],
  ]);
}

/** The files of one project: a migration, the seed, the workloads. */
let project: { migrations: string; seed: string; lookups: string; spill: string; sessions: string };

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-servers-'));
  fs.mkdirSync(path.join(tmp, 'db'));
  fs.writeFileSync(
    path.join(tmp, 'db', '001_schema.sql'),
    [
      'CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL);',
      'CREATE TABLE blocked (customer_id int NOT NULL);',
      'CREATE SCHEMA app;',
      'CREATE TABLE app.widgets (id int PRIMARY KEY);',
    ].join('\n'),
  );
  fs.writeFileSync(
    path.join(tmp, 'seed.sql'),
    [
      "INSERT INTO customers SELECT g, 'customer ' || g FROM generate_series(1, 5000) g;",
      'INSERT INTO blocked SELECT g * 2 FROM generate_series(1, 5000) g;',
      'INSERT INTO app.widgets SELECT g FROM generate_series(1, 100) g;',
    ].join('\n'),
  );
  const write = async (name: string, sessions: Session[]) => {
    const file = path.join(tmp, name);
    await writeWorkload(file, syntheticProfile(sessions));
    return file;
  };
  const spill = lookups().slice(0, 2);
  for (const s of [0, 1]) spill.push(Array.from({ length: 12 }, (_, i) => [i * 1000, NOT_IN(s * 12 + i), 'Select']));
  project = {
    migrations: path.join(tmp, 'db', '*.sql'),
    seed: path.join(tmp, 'seed.sql'),
    lookups: await write('lookups.wkl', lookups()),
    spill: await write('spill.wkl', spill),
    sessions: await write('sessions.wkl', [...lookups().slice(0, 1), ...sessionState()]),
  };
});

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  report: GateReport;
}

/** `gate` on the project: one round, no confirmation, latency rules far from what noise reaches. */
async function gate(workload: string, extra: string[], latency: readonly string[] = LATENCY_RULE_OUT_OF_REACH): Promise<Run> {
  const json = path.join(tmp, `report-${randomBytes(4).toString('hex')}.json`);
  const args = [
    'gate',
    '--workload',
    workload,
    '--base-migrations',
    project.migrations,
    '--migrations',
    project.migrations,
    '--seed',
    project.seed,
    '--rounds',
    '1',
    '--confirm-rounds',
    '0',
    ...latency,
    '--json',
    json,
    ...extra,
  ];
  const run = await runCli(args, tmp);
  if (!fs.existsSync(json)) throw new Error(`no JSON report (exit ${run.code}):\n${run.stderr}`);
  return { ...run, report: JSON.parse(fs.readFileSync(json, 'utf8')) as GateReport };
}

/** The machine's own major (else 16), and another one for an upgrade (18's binaries are the ones other tests use too). */
const baseMajor = localMajors()[0] ?? 16;
const otherMajor = baseMajor === 18 ? 17 : 18;

// Each run starts servers of its own (or databases of its own on the shared one): they run side
// by side; what is asserted does not depend on how busy the machine is.
describe.concurrent('head on a server the gate starts', () => {
  it(
    'two identical servers: A/A passes, and the report says nothing differs',
    async () => {
      const run = await gate(project.lookups, ['--postgres-version', String(baseMajor), '--head-postgres-version', String(baseMajor)]);
      expect(run.code, `${run.stderr}\n${run.stdout}`).toBe(0);
      const servers = run.report.servers!;
      expect(servers.base.version).toBe(servers.head.version);
      expect(servers.settings).toEqual([]);
      expect([servers.base.keeps_sessions, servers.head.keeps_sessions]).toEqual([true, true]);
      expect(run.report.headline).toMatch(/^pass: .*\(head's server: same version and settings\)$/);
      expect(run.report.replays.map((r) => r.side)).toEqual(['base', 'head', 'noise']);
      expect(run.stdout).toMatch(/\| PostgreSQL \| [\d.]+ on both sides \|/);
    },
    RUN_TIMEOUT_MS,
  );

  it(
    'work_mem=64kB on head: the NOT IN that no longer hashes fails, named, with the setting and its temp blocks',
    async () => {
      // 25 ms: far below the 260 ms the NOT IN gains, far above what a busy runner adds to it.
      const run = await gate(
        project.spill,
        ['--postgres-version', String(baseMajor), '--head-postgres-config', 'work_mem=64kB'],
        ['--p95-threshold', '50%', '--min-delta-ms', '25'],
      );
      expect(run.code, `${run.stderr}\n${run.stdout}`).toBe(1);
      const r = run.report;
      expect(r.servers!.settings).toEqual([{ name: 'work_mem', base: '4MB', head: '64kB' }]);
      expect(r.servers!.head.postgres_config).toEqual({ work_mem: '64kB' });
      const notIn = r.comparison!.fingerprints.find((f) => f.normalized.includes('NOT IN'))!;
      expect(notIn.regressed, JSON.stringify(notIn)).toBe(true);
      // Named among the reasons; the lookups beside it share two cores with the rescanning NOT IN
      // on head, and may be slower too on a loaded runner.
      expect(r.reasons).toContainEqual(expect.stringMatching(/^`SELECT count\(\*\) FROM customers WHERE id % \$1 = \$2 AND id NOT IN/));
      expect(r.headline).toMatch(/^regression: \d+ quer(y|ies) slower.* \(head's server: work_mem 4MB → 64kB\)$/);
      // Deterministic: the materialized list spills on head and not on base.
      const plan = r.plans!.fingerprints.find((f) => f.fingerprint === notIn.fingerprint)!;
      expect(plan.base.stats!.temp_written_per_call).toBe(0);
      expect(plan.head.stats!.temp_written_per_call).toBeGreaterThan(0);
      expect(run.stdout).toContain('wrote more to temporary files on head');
      expect(run.stdout).toMatch(/\| settings that differ \| `work_mem` 4MB → 64kB \|/);
    },
    RUN_TIMEOUT_MS,
  );

  it(
    `another major (${baseMajor} → ${otherMajor}): runs on both and reports both versions and the settings only one has`,
    async () => {
      const run = await gate(project.lookups, ['--postgres-version', String(baseMajor), '--head-postgres-version', String(otherMajor)]);
      expect(run.code, `${run.stderr}\n${run.stdout}`).toBe(0);
      const servers = run.report.servers!;
      expect(servers.base.version).toMatch(new RegExp(`^${baseMajor}\\.`));
      expect(servers.head.version).toMatch(new RegExp(`^${otherMajor}\\.`));
      expect(servers.only_base.length + servers.only_head.length).toBeGreaterThan(0);
      expect(run.report.headline).toContain(`(head's server: PostgreSQL ${servers.base.version} → ${servers.head.version}`);
      expect(run.stdout).toContain(`| PostgreSQL | base ${servers.base.version}, head ${servers.head.version} |`);
    },
    RUN_TIMEOUT_MS,
  );
});

describe
  .skipIf(pgbouncerBinary() === undefined)
  .concurrent('head through PgBouncer in transaction mode, in front of the same server', () => {
    let pooler: PgBouncer;
    const direct = () => inject('pgUrl');
    beforeAll(async () => {
      const url = new URL(direct());
      pooler = await startPgBouncer({ port: Number(url.port), user: decodeURIComponent(url.username) }, 'transaction');
    });
    afterAll(async () => {
      await pooler?.stop();
    });

    it(
      'a workload without session state passes; the report names the pooler and that it does not keep sessions',
      async () => {
        const run = await gate(project.lookups, ['--base-database-url', direct(), '--head-database-url', pooler.url()]);
        expect(run.code, `${run.stderr}\n${run.stdout}`).toBe(0);
        const servers = run.report.servers!;
        expect(servers.base.keeps_sessions).toBe(true);
        expect(servers.head.keeps_sessions).toBe(false);
        expect(servers.head.sessions_note).toMatch(/transaction pooling/);
        expect(servers.head.url).toBe(pooler.url());
        // The pooler knows no role of the run's: head replays as the URL's user, and the role,
        // given the templates' objects first, is given none left and dropped. Nothing of the run stays.
        expect(run.report.environment.replay_user).toMatch(/could not be used: .*cannot log in/);
        expect(run.stderr).not.toMatch(/^warning:/m);
        const prefix = run.report.environment.database_prefix!;
        expect(await adminQuery('SELECT rolname FROM pg_roles WHERE starts_with(rolname, $1)', [prefix])).toEqual([]);
        expect(await adminQuery('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [prefix])).toEqual([]);
        // The migrations' server connections the pooler keeps idle on head's template are ended,
        // so head's statistics are decided from the catalogs (nothing changed: base's are kept).
        expect(run.stderr).toMatch(/^head: every table keeps base's statistics \(none changed\)$/m);
        expect(servers.session_features).toEqual([]);
        expect(servers.settings).toEqual([]);
        expect(run.report.warnings).toContain(
          "head's server does not keep a client on one server connection (a transaction pooler); no statement of the workload depends on that",
        );
      },
      RUN_TIMEOUT_MS,
    );

    it(
      '--statement-timeout-ms, which travels as the options startup parameter, stops the run with the fix',
      async () => {
        const run = await gate(project.lookups, [
          '--base-database-url',
          direct(),
          '--head-database-url',
          pooler.url(),
          '--statement-timeout-ms',
          '60000',
        ]);
        expect(run.code, `${run.stderr}\n${run.stdout}`).toBe(3);
        expect(run.report.error).toMatchObject({ stage: 'replay' });
        // PgBouncer's message; the engine adds the fix (ALTER ROLE … SET statement_timeout), tested in native/core's replay::tests.
        expect(run.report.error!.message).toMatch(
          /^cannot connect to PostgreSQL at 127\.0\.0\.1:\d+\/pgr_\w+_h_r1_head as postgres: unsupported startup parameter: options/,
        );
      },
      RUN_TIMEOUT_MS,
    );

    it(
      'session SET, a prepared statement, LISTEN and an advisory lock fail as new errors, each named with what breaks it',
      async () => {
        const run = await gate(project.sessions, ['--base-database-url', direct(), '--head-database-url', pooler.url()]);
        expect(run.code, `${run.stderr}\n${run.stdout}`).toBe(1);
        const r = run.report;
        expect(r.servers!.sessions_lost_on_head).toBe(true);
        const named = r.servers!.session_features.map((f) => [f.feature, f.normalized]);
        expect(named).toEqual(
          expect.arrayContaining([
            ['session-set', 'SET search_path TO $1, $2'],
            ['prepared-statement', 'PREPARE lookup AS SELECT name FROM customers WHERE id = $1'],
            ['prepared-statement', expect.stringMatching(/^EXECUTE lookup\(/)],
            ['listen', 'LISTEN order_ready'],
            ['advisory-lock', expect.stringMatching(/^SELECT pg_advisory_lock\(\$1\)$/)],
            ['advisory-lock', expect.stringMatching(/^SELECT pg_advisory_unlock\(\$1\)$/)],
          ]),
        );
        expect(named).toHaveLength(6);
        expect(r.headline).toMatch(/^regression: \d+ new errors/);
        expect(r.reasons).toContain(
          'session SET in `SET search_path TO $1, $2` (' +
            r.servers!.session_features.find((f) => f.feature === 'session-set')!.fingerprint +
            "): head's server does not keep a client on one server connection (a transaction pooler), and the setting stays on the server connection that ran it: the session's later transactions may run without it, and other clients with it",
        );
        // Base (direct) ran everything without an error.
        expect(r.accounting!.base.errors).toBe(0);
        expect(run.stdout).toContain('| session state | statement | what a transaction pooler does to it |');
      },
      RUN_TIMEOUT_MS,
    );
  });
