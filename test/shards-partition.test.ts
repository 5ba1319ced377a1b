// A sharded run's cut of the workload (src/shards/partition.ts, session-groups.ts): the same cut
// on every runner, every session in exactly one shard, sessions linked by generated keys in one
// shard, shards balanced, each part a workload that starts at 0.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { inspectWorkload, readWorkload, type WorkloadProfileJson } from '../src/engine/index.js';
import { partitionSessions } from '../src/shards/partition.js';
import { sessionGroups } from '../src/shards/session-groups.js';
import { writeWorkloadPart } from '../src/shards/workload-part.js';
import { type ProfileStatement, syntheticProfile } from './support/profile.js';

const example = (file: string): string => fileURLToPath(new URL(`../examples/${file}`, import.meta.url));

/** A workload of sessions given as lists of statements, one every 10 ms. */
function profile(sessions: string[][]): WorkloadProfileJson {
  let at = 0;
  return syntheticProfile(
    sessions.map((queries) =>
      queries.map((sql): ProfileStatement => {
        at += 10_000;
        return [at, sql];
      }),
    ),
  );
}

describe('session groups', () => {
  it('links a session that uses an id another session generated, and nothing on ids the seed had', () => {
    const groups = sessionGroups(
      profile([
        [
          'SELECT * FROM products WHERE id = 17',
          'INSERT INTO orders (customer_id) VALUES (3) RETURNING id',
          'INSERT INTO order_items (order_id, product_id) VALUES (120001, 17)',
        ],
        ['SELECT * FROM products WHERE id = 17'],
        ['UPDATE orders SET paid = true WHERE id = 120001'],
        ['SELECT 3'],
      ]),
    );
    expect(groups).toEqual([[0, 2], [1], [3]]);
  });

  it('a write that uses a sequence and returns nothing links nothing (the currval style); a text that returns its value does', () => {
    const currvalStyle = sessionGroups(
      profile([
        [
          'INSERT INTO orders (customer_id) VALUES (3)',
          "INSERT INTO order_items (order_id, product_id) VALUES (currval('orders_id_seq'), 1717)",
          "UPDATE orders SET total = 9 WHERE id = (SELECT currval('orders_id_seq'))",
          'UPDATE products SET stock = stock - 1 WHERE id = 2323',
        ],
        ['SELECT * FROM products WHERE id = 2323'],
      ]),
    );
    expect(currvalStyle).toEqual([[0], [1]]);
    for (const producer of [
      "INSERT INTO orders (customer_id) VALUES (3); SELECT currval('orders_id_seq')",
      "SELECT nextval('orders_id_seq')",
    ]) {
      const returned = sessionGroups(
        profile([[producer, 'INSERT INTO order_items (order_id) VALUES (120001)'], ['UPDATE orders SET paid = true WHERE id = 120001']]),
      );
      expect(returned, producer).toEqual([[0, 1]]);
    }
  });

  it('takes recorded keys as they are', () => {
    const p = profile([['INSERT INTO t (x) VALUES (1) RETURNING id'], ['DELETE FROM t WHERE id = 5501']]);
    (p.sessions[0]!.queries[0] as { response_values?: unknown }).response_values = [{ columns: [['id', '5501']] }];
    expect(sessionGroups(p)).toEqual([[0, 1]]);
  });
});

describe('partition', () => {
  it('every session in one shard, contiguous in time, balanced, and the same cut every time', async () => {
    const p = await readWorkload(example('shop/workload.wkl'));
    const groups = sessionGroups(p);
    const parts = partitionSessions(p, groups, 4);
    expect(parts.flat().sort((a, b) => a - b)).toEqual(p.sessions.map((_, i) => i));
    expect(partitionSessions(p, sessionGroups(p), 4)).toEqual(parts);
    const statements = parts.map((part) => part.reduce((n, s) => n + p.sessions[s]!.queries.length, 0));
    const total = statements.reduce((a, b) => a + b, 0);
    // The shop is currval style: no session hands another a key, so the cut is by balance alone.
    for (const n of statements) expect(n).toBeGreaterThan(total / 5);
  });

  it('a capture in waves is cut at the waves: no shard spans a wave and the last session of the one before', async () => {
    // The shop's traffic four times as long: four 3.4 s waves, each with a report that starts late
    // in the wave. Cut by balance alone, three shards began with the previous wave's report and
    // spanned 4.4-4.9 s of capture; a replay keeps the captured timing, so their runners took longer.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-waves-'));
    try {
      const file = path.join(dir, 'shop-4x.wkl');
      const script = fileURLToPath(new URL('../scripts/make-example-workload.mjs', import.meta.url));
      const made = spawnSync(process.execPath, [script, file, '--waves', '4'], { encoding: 'utf8' });
      expect(made.status, made.stderr).toBe(0);
      const p = await readWorkload(file);
      const parts = partitionSessions(p, sessionGroups(p), 4);
      const statements = (part: number[]) => part.reduce((n, s) => n + p.sessions[s]!.queries.length, 0);
      const span = (part: number[]) => {
        const queries = part.flatMap((s) => p.sessions[s]!.queries);
        return (
          (Math.max(...queries.map((q) => q.start_offset_us + q.duration_us)) - Math.min(...queries.map((q) => q.start_offset_us))) / 1e6
        );
      };
      const total = p.sessions.reduce((n, s) => n + s.queries.length, 0);
      for (const part of parts) {
        expect(span(part)).toBeLessThan(3.4 * 1.1);
        expect(statements(part)).toBeGreaterThan(total / 5);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('sessions that all last the whole capture are cut by balance alone', () => {
    // Pooled connections: every cut spans the whole capture, so span cannot choose between cuts.
    const long = (at: number, n: number): ProfileStatement[] => [
      [at, 'SELECT 1'],
      ...Array.from({ length: n }, (_, i): ProfileStatement => [at + 1_000 + i, 'SELECT 2']),
      [at + 10_000_000, 'SELECT 3'],
    ];
    const p = syntheticProfile([long(0, 10), long(100, 40), long(200, 10), long(300, 10), long(400, 30), long(500, 10)]);
    const parts = partitionSessions(p, sessionGroups(p), 2);
    const statements = parts.map((part) => part.reduce((n, s) => n + p.sessions[s]!.queries.length, 0));
    expect(parts).toEqual([
      [0, 1, 2],
      [3, 4, 5],
    ]);
    expect(statements).toEqual([66, 56]);
  });

  it('a shard for each group at most: no shard left empty while there are groups to give it', () => {
    const p = profile([['SELECT 1'], ['SELECT 1', 'SELECT 2', 'SELECT 3', 'SELECT 4', 'SELECT 5', 'SELECT 6'], ['SELECT 1'], ['SELECT 1']]);
    const parts = partitionSessions(p, sessionGroups(p), 4);
    expect(parts.every((part) => part.length === 1)).toBe(true);
    expect(partitionSessions(p, sessionGroups(p), 6).filter((part) => part.length > 0)).toHaveLength(4);
  });

  it("checkout's orders and their lines stay in one shard; the part is a workload of its own from offset 0", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-part-'));
    try {
      const whole = await inspectWorkload(example('shop/checkout.wkl'));
      const parts = await Promise.all([1, 2, 3].map((index) => writeWorkloadPart(example('shop/checkout.wkl'), { index, count: 3 }, dir)));
      expect(parts.reduce((n, p) => n + p.sessions, 0)).toBe(whole.sessions);
      expect(parts.reduce((n, p) => n + p.statements, 0)).toBe(whole.statements);
      for (const part of parts) {
        const read = await readWorkload(part.file);
        expect(Math.min(...read.sessions.flatMap((s) => s.queries.map((q) => q.start_offset_us)))).toBe(0);
        expect(fs.existsSync(`${part.file}.capture.json`)).toBe(true);
      }
      // Every link the engine finds in the whole workload is inside one part.
      const links = (await Promise.all(parts.map((p) => inspectWorkload(p.file)))).reduce((n, i) => n + i.keys.links, 0);
      expect(links).toBe(whole.keys.links);
      expect(parts[0]!.whole.sha256).toMatch(/^[0-9a-f]{64}$/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
