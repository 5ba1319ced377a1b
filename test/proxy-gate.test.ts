// The gate on a workload recorded by `proxy`: the sample shop's node-postgres traffic
// (scripts/lib/shop-traffic.mjs: checkouts whose order ids come from `INSERT … RETURNING id`,
// storefront reads, a back office paying the new orders) sent through the proxy to a seeded copy
// of the shop, then gated twice side by side: against the stock-trigger variant, whose trigger
// sleeps 50 ms in the checkout's stock UPDATE, which must fail naming that statement, and
// against identical schemas (A/A), which must pass with every captured statement executed
// without an error on both sides.
//
// Timing: the slowed UPDATE's server time is ~0.05 ms, a 50 ms sleep makes it a thousand times
// slower on every call, on one round without confirmation; the A/A gate runs with the latency
// rule out of reach (docs/testing.md, "Timing"). The file runs in vitest's `alone` project.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { driveShop } from '../scripts/lib/shop-traffic.mjs';
import { run } from '../src/cli/main.js';
import type { ProxySummary } from '../src/engine/index.js';
import type { GateReport } from '../src/verdict/report-types.js';
import { adminSql } from './support/admin-sql.js';
import { eventually } from './support/eventually.js';
import { explain, GATE_TIMEOUT_MS, gate, leftoverDatabases, shop, tmpDir, useGateFixtures, exampleDatabase } from './support/gate-run.js';
import { LATENCY_RULE_OUT_OF_REACH } from './support/latency-rule.js';

useGateFixtures();

/** The statement the stock-trigger variant slows: every checkout line's stock decrement. */
const STOCK_UPDATE = 'UPDATE products SET stock = stock - $1 WHERE id = $2';
/** Orders the shop's checkout sessions place (6 sessions of 6), each with its RETURNING id. */
const ORDERS = 36;

let captured: string;
let workload: string;
let summary: ProxySummary;

/** Records the shop's traffic through a proxy started by the CLI (in this process), stopped with SIGINT. */
async function recordThroughProxy(target: string, output: string): Promise<ProxySummary> {
  let stdout = '';
  let stderr = '';
  const running = run(['proxy', '--listen', '127.0.0.1:0', '--target', target, '--output', output, '--json'], {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    env: { ...process.env, CI: 'true' },
  });
  await eventually(() => /listening on 127\.0\.0\.1:\d+/.test(stderr), 'the proxy listening', 30_000, 50);
  const url = new URL(target);
  url.host = `127.0.0.1:${/listening on 127\.0\.0\.1:(\d+)/.exec(stderr)![1]}`;
  await driveShop(url.toString());
  // Every session has ended its connection; the stop waits for the proxy's side of them.
  process.emit('SIGINT', 'SIGINT');
  const code = await running;
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout) as ProxySummary;
}

beforeAll(async () => {
  captured = await exampleDatabase();
  workload = path.join(tmpDir(), 'shop-proxy.wkl');
  summary = await recordThroughProxy(captured, workload);
}, GATE_TIMEOUT_MS);

afterAll(async () => {
  if (captured) await adminSql(`DROP DATABASE IF EXISTS ${new URL(captured).pathname.slice(1)} WITH (FORCE)`);
});

/** Every captured statement executed without an error on both sides, nothing left uncompared. */
function expectEverythingRan(report: GateReport): void {
  for (const side of ['base', 'head'] as const) {
    const a = report.accounting![side];
    expect(a.executed, side).toBe(a.captured);
    expect(a.errors, side).toBe(0);
  }
  expect(report.coverage!.sufficient).toBe(true);
  expect(report.coverage!.not_compared).toEqual([]);
}

describe('gate on a workload recorded through the proxy', () => {
  it('the proxy recorded the shop whole: every order id the server gave back, nothing failed or left out', () => {
    expect(fs.existsSync(workload)).toBe(true);
    expect(summary.sessions).toBe(6 + 8 + 2);
    expect(summary.failed_statements).toBe(0);
    expect(summary.not_replayable).toEqual({});
    expect(summary.warnings).toEqual([]);
    expect(summary.incomplete).toBe(false);
    expect(summary.statements_with_returned_rows).toBe(ORDERS);
  });

  it(
    'a trigger that slows the stock UPDATE fails the gate, naming that statement; the A/A gate passes',
    async () => {
      // Base runs the shop's migrations, head those and `head` (the variant's); one round, no confirmation.
      const gateOn = (head: string[], extra: string[] = []) => {
        const migrations = shop('migrations', '*.sql');
        return gate([
          ...['gate', '--database-url', inject('pgUrl'), '--workload', workload, '--seed', shop('seed.sql')],
          ...['--base-migrations', migrations, '--migrations', migrations, ...head],
          ...['--rounds', '1', '--confirm-rounds', '0', ...extra],
        ]);
      };
      const [slowed, same] = await Promise.all([
        gateOn([shop('variants', 'stock-trigger', '*.sql')]),
        gateOn([], [...LATENCY_RULE_OUT_OF_REACH]),
      ]);

      expect(slowed.code, explain(slowed)).toBe(1);
      const regressed = slowed.report!.comparison!.fingerprints.filter((f) => f.regressed).map((f) => f.normalized);
      expect(regressed).toContain(STOCK_UPDATE);
      expect(slowed.stdout).toContain(STOCK_UPDATE);
      expect(slowed.report!.comparison!.new_errors).toEqual([]);
      expectEverythingRan(slowed.report!);

      expect(same.code, explain(same)).toBe(0);
      expect(same.report!.verdict).toBe('pass');
      expect(same.report!.comparison!.new_errors).toEqual([]);
      expectEverythingRan(same.report!);
      // The ids the proxy saw RETURNING give back were carried to their later uses.
      expect(same.report!.keys?.correlation?.source).toBe('response_values');

      expect(await leftoverDatabases(slowed)).toEqual([]);
      expect(await leftoverDatabases(same)).toEqual([]);
    },
    GATE_TIMEOUT_MS,
  );
});
