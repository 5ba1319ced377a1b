// The verdict's rules end to end against real PostgreSQL: failures judged by what they are and
// how often (a failure that depends on interleaving, seen on one side only, does not fail the
// gate; a deterministic one does from its first occurrence), and the server-time rule catching a
// slowdown of 0.3 ms per call that a relay's random delays hide from the client's timings.
//
// Every outcome here is decided by design, not by chance: the failures are raised by a trigger
// in one named replay database only (the gate names them `<prefix>_r<round>_<side>`), and the
// spin adds ten times the statement's own server time to every call.
import net from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { writeWorkload } from '../src/engine/index.js';
import { GATE_TIMEOUT_MS, gate, tmpDir, useGateFixtures } from './support/gate-run.js';
import { LATENCY_RULE_OUT_OF_REACH } from './support/latency-rule.js';
import { syntheticProfile, type ProfileStatement } from './support/profile.js';

useGateFixtures();

/** Writes `files` (name → SQL) into a fresh directory and returns its glob. */
function migrations(name: string, files: Record<string, string>): string {
  const dir = path.join(tmpDir(), name);
  fs.mkdirSync(dir, { recursive: true });
  for (const [file, sql] of Object.entries(files)) fs.writeFileSync(path.join(dir, file), sql);
  return path.join(dir, '*.sql');
}

async function workload(name: string, sessions: ProfileStatement[][]): Promise<string> {
  const file = path.join(tmpDir(), `${name}.wkl`);
  await writeWorkload(file, syntheticProfile(sessions, { user: 'postgres', database: 'postgres' }));
  return file;
}

const TABLE = 'CREATE TABLE t (id serial PRIMARY KEY, v int NOT NULL);\n';

/**
 * A trigger on `t` that raises `sqlstate` for the insert of `v`, in round 1's head replay only:
 * one occurrence in the whole run.
 */
function failOnceOnHead(sqlstate: string, v: number): string {
  return `
CREATE FUNCTION fail_${sqlstate.toLowerCase()}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.v = ${v} AND current_database() LIKE '%\\_r1\\_head' THEN
    RAISE EXCEPTION 'raised for the test' USING ERRCODE = '${sqlstate}';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER fail_${sqlstate.toLowerCase()} BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION fail_${sqlstate.toLowerCase()}();
`;
}

/** Three sessions inserting and reading 25 values each, 4 ms apart. */
function insertSessions(): ProfileStatement[][] {
  return [0, 1, 2].map((s) =>
    Array.from({ length: 50 }, (_, i): ProfileStatement => {
      const v = s * 25 + Math.floor(i / 2);
      return i % 2 === 0
        ? [i * 4000, `INSERT INTO t (v) VALUES (${v})`, 'Insert']
        : [i * 4000, `SELECT count(*) FROM t WHERE v = ${v}`, 'Select'];
    }),
  );
}

describe('errors judged by what they are and how often', () => {
  it(
    'a unique violation in one head replay only varies between replays and passes; a deterministic failure in one replay fails the gate',
    async () => {
      const wkl = await workload('inserts', insertSessions());
      const base = migrations('errors-base', { '1.sql': TABLE });
      const race = migrations('errors-race', { '1.sql': TABLE + failOnceOnHead('23505', 7) });
      const args = (head: string) => [
        'gate',
        '--database-url',
        inject('pgUrl'),
        '--workload',
        wkl,
        '--base-migrations',
        base,
        '--migrations',
        head,
        // What is judged here is errors; the latency rules and the confirmation rounds they can
        // start (a busy runner can make a fast insert look slower) would change the exit status
        // and the number of replays by chance.
        '--confirm-rounds',
        '0',
        ...LATENCY_RULE_OUT_OF_REACH,
      ];

      const raced = await gate(args(race));
      expect(raced.code, raced.stderr).toBe(0);
      const c = raced.report!.comparison!;
      expect(c.new_errors).toEqual([]);
      expect(c.varying_errors).toMatchObject([
        { sqlstate: '23505', class: 'interleaving', rule: 'varies', head_replays: [1, 0, 0], base_count: 0 },
      ]);
      expect(raced.stdout).toMatch(/1 failure that varies between replays \(not gated\)/);

      const broken = migrations('errors-broken', { '1.sql': TABLE + failOnceOnHead('23505', 7) + failOnceOnHead('42703', 8) });
      const failed = await gate(args(broken));
      expect(failed.code, failed.stderr).toBe(1);
      const f = failed.report!.comparison!;
      expect(f.new_errors).toMatchObject([
        { sqlstate: '42703', class: 'deterministic', rule: 'deterministic', head_count: 1, head_replays: [1, 0, 0] },
      ]);
      expect(f.varying_errors.map((e) => e.sqlstate)).toEqual(['23505']);
      expect(failed.report!.headline).toMatch(/^regression: 1 new error/);
    },
    GATE_TIMEOUT_MS,
  );
});

/**
 * A TCP relay to the shared server that holds every chunk the server sends for a random 0–4 ms
 * (in order, per connection): the client's round trips get a noise far larger than 0.3 ms, while
 * what the server spends on each statement is untouched.
 */
async function noisyRelay(target: URL): Promise<{ url: string; close: () => Promise<void> }> {
  // A fixed sequence of delays (a linear congruential generator), so that every run has the same noise.
  let state = 29;
  const random = () => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    return state / 2 ** 32;
  };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream);
    // Chunks leave in order: each waits for the one before it and its own delay.
    let last = Promise.resolve();
    upstream.on('data', (chunk: Buffer) => {
      const delay = random() * 4;
      last = last
        .then(() => new Promise((resolve) => setTimeout(resolve, delay)))
        .then(() => {
          if (!client.destroyed) client.write(chunk);
        });
    });
    upstream.on('end', () => void last.then(() => client.end()));
    client.on('end', () => upstream.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target.href);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.href,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('the server-time rule', () => {
  it(
    'catches a function that spins 0.3 ms per call on head although a relay makes the client timings noisy',
    async () => {
      // Four sessions of 40 point reads each, 5 ms apart: 160 calls per replay.
      const reads = [0, 1, 2, 3].map((s) =>
        Array.from(
          { length: 40 },
          (_, i): ProfileStatement => [i * 5000, `SELECT v FROM hot WHERE id = ${s * 40 + i + 1} AND work()`, 'Select'],
        ),
      );
      const wkl = await workload('reads', reads);
      const table = 'CREATE TABLE hot (id int PRIMARY KEY, v int);\nINSERT INTO hot SELECT g, g FROM generate_series(1, 1000) g;\n';
      const base = migrations('spin-base', {
        '1.sql': `${table}CREATE FUNCTION work() RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN RETURN true; END $$;\n`,
      });
      const head = migrations('spin-head', {
        '1.sql':
          table +
          `CREATE FUNCTION work() RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE started timestamptz := clock_timestamp();
BEGIN
  WHILE clock_timestamp() < started + interval '300 microseconds' LOOP END LOOP;
  RETURN true;
END $$;
`,
      });
      const relay = await noisyRelay(new URL(inject('pgUrl')));
      try {
        const run = await gate(['gate', '--database-url', relay.url, '--workload', wkl, '--base-migrations', base, '--migrations', head]);
        expect(run.code, run.stderr).toBe(1);
        const c = run.report!.comparison!;
        expect(c.server_time.measured).toBe(true);
        const f = c.fingerprints.find((x) => x.normalized.includes('FROM hot'))!;
        expect(f.rules).toContain('server_time');
        expect(f.server_time!.shift_us).toBeGreaterThanOrEqual(250);
        expect(f.server_time!.checks).toEqual({
          over_threshold: true,
          ci_above_noise: true,
          over_min_delta: true,
          enough_calls: true,
          slower_in_every_replay: true,
        });
        // The relay's delays (3.8 ms at the p95) are in the client's timings, not in the server's
        // (tens of µs; a factor of 2 leaves room for a descheduled backend on a busy runner).
        expect(f.base.p95_us).toBeGreaterThan(2 * f.server_time!.base.p95_us);
        expect(run.stdout).toMatch(/server time per call \d+ µs → \d+ µs median/);
      } finally {
        await relay.close();
      }
    },
    GATE_TIMEOUT_MS,
  );
});
