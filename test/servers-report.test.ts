// Head on a server of its own, without a server: which statements leave session state behind,
// which settings differ, what the verdict counts, and what the reports say (pure functions of
// their inputs; the runs against real servers are in gate-servers.test.ts).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { GateReport, ServersReport } from '../src/verdict/report-types.js';
import { diffSettings, serverDifferenceLine } from '../src/verdict/server-differences.js';
import { findSessionFeatures, likelyCause, sessionFeatureOf } from '../src/verdict/session-features.js';
import { decideVerdict } from '../src/verdict/decide.js';
import { parseReport, renderJunit, renderMarkdown, toJson } from '../src/report/index.js';

describe('session state in a workload', () => {
  it.each([
    ['SET search_path TO app, public', 'session-set'],
    ['set statement_timeout = 5000', 'session-set'],
    ['/* app */ SET SESSION work_mem = $1', 'session-set'],
    ['SET ROLE reporting', 'session-set'],
    ['RESET ALL', 'session-set'],
    ["SELECT set_config('app.tenant', $1, false)", 'session-set'],
    ['PREPARE q(int) AS SELECT 1', 'prepared-statement'],
    ['EXECUTE q(1)', 'prepared-statement'],
    ['DEALLOCATE q', 'prepared-statement'],
    ['LISTEN jobs', 'listen'],
    ['UNLISTEN *', 'listen'],
    ['SELECT pg_advisory_lock($1)', 'advisory-lock'],
    ['select pg_try_advisory_lock_shared(1, 2)', 'advisory-lock'],
    ['SELECT pg_advisory_unlock_all()', 'advisory-lock'],
    ['CREATE TEMP TABLE scratch (id int)', 'temporary-table'],
    ['create temporary table scratch as select 1', 'temporary-table'],
    ['DECLARE c CURSOR WITH HOLD FOR SELECT 1', 'cursor-with-hold'],
  ])('%s: %s', (sql, kind) => {
    expect(sessionFeatureOf(sql)).toBe(kind);
  });

  it.each([
    'SET LOCAL statement_timeout = 5000',
    'SET TRANSACTION ISOLATION LEVEL SERIALIZABLE',
    'SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY',
    'SET CONSTRAINTS ALL DEFERRED',
    'PREPARE TRANSACTION $1',
    "SELECT set_config('app.tenant', $1, true)",
    'SELECT pg_advisory_xact_lock($1)',
    'CREATE TEMP TABLE scratch (id int) ON COMMIT DROP',
    'DECLARE c CURSOR FOR SELECT 1',
    'NOTIFY jobs',
    'SELECT * FROM settings WHERE name = $1',
    '-- SET search_path TO app\nSELECT 1',
  ])('%s: none', (sql) => {
    expect(sessionFeatureOf(sql)).toBeNull();
  });

  it('lists them per fingerprint, and ties a new error to the statement that left the state', () => {
    const example = (fingerprint: string, normalized: string) => ({
      fingerprint,
      normalized,
      kind: 'other',
      writes: false,
      example: normalized,
      setup: [],
    });
    const features = findSessionFeatures([
      example('a', 'SELECT 1'),
      example('b', 'SET search_path TO $1'),
      example('c', 'EXECUTE q($1)'),
      example('d', 'PREPARE q AS SELECT $1'),
    ]);
    expect(features.map((f) => [f.fingerprint, f.feature, f.label])).toEqual([
      ['b', 'session-set', 'session SET'],
      ['c', 'prepared-statement', 'prepared statement by name'],
      ['d', 'prepared-statement', 'prepared statement by name'],
    ]);
    expect(likelyCause({ fingerprint: 'c', sqlstate: '26000' }, features)?.fingerprint).toBe('d');
    expect(likelyCause({ fingerprint: 'x', sqlstate: '42P01' }, features)?.fingerprint).toBe('b');
    expect(likelyCause({ fingerprint: 'x', sqlstate: '23505' }, features)).toBeUndefined();
  });
});

describe('settings that differ', () => {
  it('compares what both servers have, lists the rest per side, and leaves instance paths and ports out', () => {
    const base = new Map([
      ['work_mem', '4MB'],
      ['jit', 'on'],
      ['port', '5432'],
      ['data_directory', '/a'],
      ['old_setting', 'x'],
      ['server_version', '15.14'],
    ]);
    const head = new Map([
      ['work_mem', '64kB'],
      ['jit', 'on'],
      ['port', '6543'],
      ['data_directory', '/b'],
      ['new_setting', 'y'],
      ['server_version', '17.6'],
    ]);
    expect(diffSettings(base, head)).toEqual({
      settings: [{ name: 'work_mem', base: '4MB', head: '64kB' }],
      only_base: ['old_setting'],
      only_head: ['new_setting'],
    });
  });
});

function side(over: Partial<ServersReport['base']> = {}): ServersReport['base'] {
  return {
    version: '15.14',
    kind: 'local',
    description: 'PostgreSQL 15.14 (local) on 127.0.0.1:5432',
    url: null,
    postgres_config: {},
    keeps_sessions: true,
    sessions_note: 'a server the gate started',
    ...over,
  };
}

function servers(over: Partial<ServersReport> = {}): ServersReport {
  return {
    base: side(),
    head: side(),
    settings: [],
    only_base: [],
    only_head: [],
    settings_error: null,
    session_features: [],
    sessions_lost_on_head: false,
    ...over,
  };
}

const pooled = servers({
  head: side({
    kind: 'database-url',
    url: 'postgres://app:****@pooler:6432/app',
    description: 'PostgreSQL 15.14 at pooler:6432/app as app',
    keeps_sessions: false,
    sessions_note: 'gave another client the server connection (process 42) of a client between its transactions (transaction pooling)',
  }),
  session_features: findSessionFeatures([
    {
      fingerprint: '1111222233334444',
      normalized: 'SET search_path TO $1',
      kind: 'other',
      writes: false,
      example: 'SET search_path TO app',
      setup: [],
    },
  ]),
  sessions_lost_on_head: true,
});

describe('the headline', () => {
  it('says what differs in one line', () => {
    expect(serverDifferenceLine(servers())).toBe('same version and settings');
    expect(
      serverDifferenceLine(
        servers({
          head: side({ version: '17.6' }),
          settings: ['a', 'b', 'c', 'd', 'e'].map((name) => ({ name, base: '1', head: '2' })),
          only_head: ['x', 'y'],
        }),
      ),
    ).toBe('PostgreSQL 15.14 → 17.6; a 1 → 2, b 1 → 2, c 1 → 2, d 1 → 2 and 1 more setting; 2 settings on one side only');
    expect(serverDifferenceLine(pooled)).toBe(
      "head through postgres://app:****@pooler:6432/app; head's server does not keep a client on one server connection",
    );
  });
});

const fixture = (name: string): GateReport =>
  parseReport(readFileSync(new URL(`./fixtures/reports/${name}.json`, import.meta.url), 'utf8'), name);

/** The pass fixture with head behind a transaction pooler and a session SET in the workload. */
function pooledReport(): GateReport {
  const report = structuredClone(fixture('pass'));
  report.servers = structuredClone(pooled);
  const decided = decideVerdict({
    comparison: report.comparison,
    migrationFailure: null,
    thresholds: report.thresholds,
    servers: report.servers,
  });
  return { ...report, ...decided };
}

describe('the verdict and the reports', () => {
  it('counts session state head does not keep as new errors, each named with what breaks it', () => {
    const report = pooledReport();
    expect(report.verdict).toBe('regression');
    expect(report.headline).toBe(
      "regression: 1 new error (head's server: head through postgres://app:****@pooler:6432/app; head's server does not keep a client on one server connection)",
    );
    expect(report.reasons).toEqual([
      "1 new error (allowed: 0), 1 statement group depending on session state that head's server does not keep",
      "session SET in `SET search_path TO $1` (1111222233334444): head's server does not keep a client on one server connection (a transaction pooler), and the setting stays on the server connection that ran it: the session's later transactions may run without it, and other clients with it",
    ]);
  });

  it('does not count it when base does not keep sessions either, or when it is allowed', () => {
    const base = fixture('pass');
    const both = structuredClone(pooled);
    both.base.keeps_sessions = false;
    both.sessions_lost_on_head = false;
    expect(decideVerdict({ comparison: base.comparison, migrationFailure: null, thresholds: base.thresholds, servers: both }).verdict).toBe(
      'pass',
    );
    const allowed = decideVerdict({
      comparison: base.comparison,
      migrationFailure: null,
      thresholds: { ...base.thresholds, max_new_errors: 1 },
      servers: pooled,
    });
    expect(allowed.verdict).toBe('pass');
    expect(allowed.headline).toMatch(/, 1 new error \(allowed: 1\) \(head's server: /);
  });

  it('renders the servers in markdown, JUnit and JSON', () => {
    const report = pooledReport();
    const md = renderMarkdown(report);
    expect(md).toContain('### ❌ pg-retest: regression — 1 new error');
    expect(md).toContain('| session SET | `SET search_path TO $1` | the setting stays on the server connection that ran it:');
    // The URL and the '@' after the mask get a word joiner: GitHub would link the one and read
    // '*@pooler' as a mention (test/report-markdown-text.test.ts).
    expect(md).toContain('| head server | database-url: postgres:\u2060//app:\\*\\*\\*\\*@\u2060pooler:6432/app |');
    expect(md).toContain('| sessions | base kept; head not kept: gave another client the server connection (process 42)');
    expect(md).not.toContain('| settings |');
    const junit = renderJunit(report);
    expect(junit).toContain(
      `<failure message="1 new error" type="new-errors">session SET, which head's server does not keep (the setting stays`,
    );
    expect(parseReport(toJson(report)).servers).toEqual(report.servers);
  });
});
