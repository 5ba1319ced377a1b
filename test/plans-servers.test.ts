// pg_stat_statements on servers the gate starts (docs/plans.md): the binaries the gate uses
// (the machine's PostgreSQL, the npm embedded packages 13–18) have the module, a server started
// with it preloaded comes up, and the gate finds it usable on 14+ (13's EXPLAIN shows no query
// identifier, so it falls back there); binaries without the module start without it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { explainStatement } from '../src/plans/explain.js';
import { findStatStatements } from '../src/plans/stat-statements.js';
import { findEmbeddedBinaries, findLocalBinaries, SUPPORTED_MAJORS } from '../src/provision/binaries.js';
import { startCluster } from '../src/provision/cluster.js';
import { serverOsUser } from '../src/provision/os-user.js';
import { availablePreloads, withStatStatements } from '../src/provision/preload.js';
import { localBinaries } from '../src/provision/pg-binaries.mjs';

const preload = withStatStatements({});

describe('pg_stat_statements on started servers', () => {
  it('every embedded major and the local installation have the module', async () => {
    const user = await serverOsUser();
    const bindirs = [...localBinaries(process.env.PG_RETEST_BINDIR).map((b) => b.bindir)];
    for (const major of SUPPORTED_MAJORS) bindirs.push((await findEmbeddedBinaries(major, user)).bindir);
    for (const bindir of bindirs) expect(availablePreloads(bindir, preload), bindir).toEqual({ settings: preload, dropped: [] });
  });

  it('binaries without the module keep the other libraries and drop it', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-preload-'));
    try {
      fs.mkdirSync(path.join(root, 'bin'));
      fs.mkdirSync(path.join(root, 'lib', 'postgresql'), { recursive: true });
      fs.writeFileSync(path.join(root, 'lib', 'postgresql', 'auto_explain.so'), '');
      const wanted = withStatStatements({ shared_preload_libraries: 'auto_explain', work_mem: '8MB' });
      expect(wanted.shared_preload_libraries).toBe('auto_explain,pg_stat_statements');
      expect(availablePreloads(path.join(root, 'bin'), wanted)).toEqual({
        settings: { shared_preload_libraries: 'auto_explain', work_mem: '8MB' },
        dropped: ['pg_stat_statements'],
      });
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it.each([13, 18])(
    'embedded %i starts with it preloaded; the gate uses it from 14 on; $n statements plan generically from 16 on',
    async (major) => {
      const bins = await findEmbeddedBinaries(major, await serverOsUser());
      const server = await startCluster(bins, 'embedded', { settings: preload });
      try {
        const status = await findStatStatements(server.url, major, 'pgr_test_stats');
        if (major >= 14) expect(status).toMatchObject({ available: true, createdDatabase: 'pgr_test_stats' });
        else
          expect(status).toEqual({ available: false, reason: expect.stringMatching(/PostgreSQL 13 does not show the query identifier/) });
        // A statement captured with a bind parameter: planned generically on 16+, an error before.
        const client = new pg.Client(server.url);
        await client.connect();
        try {
          const sql = 'SELECT relname FROM pg_class WHERE oid = $1';
          if (major >= 16) {
            const parsed = await explainStatement(client, sql, { analyze: false, major });
            expect(parsed.plan['Relation Name']).toBe('pg_class');
            expect(parsed.queryId).toMatch(/^-?\d+$/);
          } else {
            await expect(explainStatement(client, sql, { analyze: false, major })).rejects.toMatchObject({ sqlstate: '42P02' });
          }
        } finally {
          await client.end();
        }
      } finally {
        await server.stop();
      }
    },
    120_000,
  );

  it('the local installation starts with it preloaded and the gate uses it', async () => {
    const local = localBinaries(process.env.PG_RETEST_BINDIR)[0];
    if (!local) return;
    const bins = await findLocalBinaries(local.major);
    const server = await startCluster(bins, 'local', { settings: preload });
    try {
      expect(await findStatStatements(server.url, bins.major, 'pgr_test_stats')).toMatchObject({ available: local.major >= 14 });
    } finally {
      await server.stop();
    }
  }, 120_000);
});
