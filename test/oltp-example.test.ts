// The committed race workload (examples/oltp, the calibration bench's `race` workload) is what its
// README says: pgbench's traffic captured from a server's log, one transaction on four look-alike
// tables, over the extended protocol, with the capture's own races in its sidecar and each of
// them on one of the four INSERTs. Read from the files alone (no server): a regenerated capture
// that lost its races, its sidecar or a table fails here before it reaches a calibration.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { captureEvidence } from '../src/gate/capture-evidence.js';
import { loadWorkload, type StatementExample, type Workload } from '../src/engine/index.js';
import type { CaptureSummary } from '../src/types.js';

const oltp = (file: string): string => fileURLToPath(new URL(`../examples/oltp/${file}`, import.meta.url));

/** The statement with the table's number dropped: what its look-alikes on sibling tables share. */
const family = (normalized: string): string => normalized.replace(/\bsbtest\d\b/g, 'sbtest');
const table = (normalized: string): string | undefined => /\bsbtest(\d)\b/.exec(normalized)?.[1];

describe('examples/oltp/oltp.wkl', () => {
  let workload: Workload;
  let examples: StatementExample[];
  const sidecar = JSON.parse(fs.readFileSync(oltp('oltp.wkl.capture.json'), 'utf8')) as CaptureSummary;

  beforeAll(async () => {
    workload = await loadWorkload(oltp('oltp.wkl'));
    examples = workload.examples();
  });

  it("loads without a warning, with the sidecar's sessions and statements", () => {
    expect(workload.warnings).toEqual([]);
    expect(sidecar.incomplete).toBe(false);
    expect(sidecar.warnings).toEqual([]);
    expect(workload.statements).toBe(sidecar.statements);
    expect(workload.sessions).toBe(sidecar.sessions);
    // 4 clients at a time, and one more session for each client a race ended.
    expect(workload.sessions).toBeGreaterThanOrEqual(4);
    expect(workload.sessions).toBeLessThanOrEqual(4 + sidecar.failed.length);
  });

  it('is one transaction on four look-alike tables: each statement four times, BEGIN and COMMIT once', () => {
    const tables = new Map<string, Set<string>>();
    for (const e of examples) {
      const key = family(e.normalized);
      if (!tables.has(key)) tables.set(key, new Set());
      const t = table(e.normalized);
      if (t !== undefined) tables.get(key)!.add(t);
    }
    const statements = [...tables.keys()];
    expect(statements.filter((s) => /^(BEGIN|COMMIT)\b/.test(s)).sort()).toEqual(['BEGIN;', 'COMMIT;']);
    const data = statements.filter((s) => s.includes('sbtest'));
    expect(data).toHaveLength(7);
    for (const s of data) expect([...tables.get(s)!].sort(), s).toEqual(['1', '2', '3', '4']);
    expect(examples).toHaveLength(7 * 4 + 2);
    const inserts = examples.filter((e) => e.kind === 'insert');
    expect(inserts.map((e) => table(e.normalized)).sort()).toEqual(['1', '2', '3', '4']);
    expect(new Set(inserts.map((e) => family(e.normalized))).size).toBe(1);
  });

  it('came over the extended protocol: the bind parameters are back in the text as quoted literals', () => {
    // pgbench's simple protocol writes a variable into the text as it is (id = 7); capture puts
    // an extended-protocol statement's logged parameters back quoted (id = '7').
    for (const e of examples.filter((x) => x.example.includes('sbtest'))) {
      expect(e.example, e.normalized).toMatch(/(= |BETWEEN |VALUES \()'\d+'/);
      expect(e.example, e.normalized).not.toMatch(/(= |BETWEEN |AND |VALUES \()\d/);
    }
  });

  it("the capture's races are in the sidecar, each a unique violation of one of the four INSERTs", () => {
    expect(sidecar.failed.length).toBeGreaterThan(0);
    const evidence = captureEvidence(oltp('oltp.wkl'), workload);
    expect(evidence.warnings).toEqual([]);
    expect(evidence.failures).toHaveLength(sidecar.failed.length);
    const inserts = new Set(examples.filter((e) => e.kind === 'insert').map((e) => e.fingerprint));
    for (const f of evidence.failures!) {
      expect(inserts.has(f.fingerprint), `${f.session}/${f.index}`).toBe(true);
      expect(f.sqlstate).toBe('23505');
    }
  });
});
