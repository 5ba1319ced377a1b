// The gate's options and plans, without a server: one schema for flags and config files,
// the replay order, and how head's schema is built from base's.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseOptions, tokenize } from '../src/options/argv.js';
import { mergeValues, readConfigFile } from '../src/options/config-file.js';
import { gateCommand } from '../src/gate/options.js';
import { InputError } from '../src/exit-codes.js';
import { planReplays } from '../src/gate/round-plan.js';
import { planHead } from '../src/templates/migration-plan.js';
import { type MigrationFile, resolveMigrationFiles } from '../src/templates/sql-files.js';

function parse(argv: string[]) {
  const { values } = tokenize('gate', argv, gateCommand.options);
  return parseOptions(gateCommand, values);
}

function parseError(argv: string[]): string {
  try {
    parse(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(InputError);
    return (error as Error).message;
  }
  throw new Error(`expected ${argv.join(' ')} to be rejected`);
}

describe('gate options', () => {
  it('gives the documented defaults', () => {
    const config = parse(['--workload', 'w.wkl', '--migrations', 'db/*.sql', '--base-ref', 'origin/main']);
    expect(config.servers).toEqual({ base: { kind: 'auto', major: undefined, settings: {} }, head: null });
    expect(config.rounds).toBe(3);
    expect(config.speed).toBe(1);
    expect(config.thresholds).toEqual({
      p95Threshold: 0.2,
      minDeltaMs: 0.5,
      serverThreshold: 0.2,
      serverMinDeltaMs: 0.05,
      minCalls: 20,
      maxNewErrors: 0,
      confidence: 0.95,
      minCoverage: 0.95,
      p95MaxMs: null,
      p99MaxMs: null,
      errorRateMax: null,
    });
    expect(config.schema).toEqual({ kind: 'files', head: ['db/*.sql'], base: undefined });
    expect(config.headFromScratch).toBe(false);
  });

  it('reads percentages, fractions, lists and server settings', () => {
    const config = parse([
      '--workload',
      'w.wkl',
      '--migrations',
      'a/*.sql',
      'b/*.sql',
      '--p95-threshold',
      '15%',
      '--min-delta-ms',
      '2',
      '--postgres-config',
      'shared_buffers=256MB',
      "work_mem='16 MB'",
      '--provision',
      'embedded',
      '--postgres-version',
      '16',
      '--head-from-scratch',
      '--seed-command',
      './seed.sh',
    ]);
    expect(config.schema).toEqual({ kind: 'files', head: ['a/*.sql', 'b/*.sql'], base: undefined });
    expect(config.thresholds.p95Threshold).toBeCloseTo(0.15);
    expect(config.thresholds.minDeltaMs).toBe(2);
    expect(config.servers).toEqual({
      base: { kind: 'embedded', major: 16, settings: { shared_buffers: '256MB', work_mem: '16 MB' } },
      head: null,
    });
    expect(config.headFromScratch).toBe(true);
    expect(config.seed).toEqual({ kind: 'command', command: './seed.sh' });
    expect(parse(['--workload', 'w', '--migrate-command', 'make migrate', '--p95-threshold', '0.3']).thresholds.p95Threshold).toBeCloseTo(
      0.3,
    );
  });

  it('names the option and what is allowed when a value is wrong', () => {
    expect(parseError(['--migrations', 'x.sql'])).toMatch(/option --workload: is required/);
    expect(parseError(['--workload', 'w'])).toMatch(/option --migrations: is required/);
    expect(parseError(['--workload', 'w', '--migrations', 'x', '--p95-threshold', 'lots'])).toMatch(
      /option --p95-threshold: expected a percentage.*got 'lots'/,
    );
    expect(parseError(['--workload', 'w', '--migrations', 'x', '--rounds', '0'])).toMatch(
      /option --rounds: expected a whole number of rounds from 1 to 20/,
    );
    expect(parseError(['--workload', 'w', '--migrations', 'x', '--provision', 'kubernetes'])).toMatch(
      /option --provision: expected one of auto, local, embedded, docker/,
    );
    expect(parseError(['--workload', 'w', '--migrations', 'x', '--migrate-command', 'm'])).toMatch(
      /option --migrate-command: cannot be combined with --migrations/,
    );
    expect(parseError(['--workload', 'w', '--migrations', 'x', '--seed', 's.sql', '--seed-command', 's'])).toMatch(
      /option --seed-command: cannot be combined/,
    );
    expect(
      parseError(['--workload', 'w', '--migrations', 'x', '--database-url', 'postgres://u:secretpw@h/db', '--postgres-version', '15']),
    ).toMatch(/option --postgres-version: applies to a server the gate starts/);
    expect(parseError(['--workload', 'w', '--migrations', 'x', '--database-url', 'http://u:secretpw@h/db'])).not.toMatch(/secretpw/);
    expect(parseError(['--workload', 'w', '--migrations', 'x', '--postgres-config', 'shared_buffers'])).toMatch(
      /expected name=value pairs/,
    );
    expect(parseError(['--workload', 'w', '--migrate-command', 'm', '--base-migrations', 'x'])).toMatch(
      /option --base-migrations: applies to SQL migration files/,
    );
  });
});

describe('servers of the two sides', () => {
  const base = ['--workload', 'w', '--migrations', 'x'];
  const servers = (...argv: string[]) => parse([...base, ...argv]).servers;
  const url = 'postgres://app:s3cretpw@db:5432/app';
  const pooler = 'postgres://app:s3cretpw@pooler:6432/app';

  it('starts a second server for head when a head option asks for one, with the shared settings under its own', () => {
    expect(servers('--postgres-version', '15', '--head-postgres-version', '17')).toEqual({
      base: { kind: 'auto', major: 15, settings: {} },
      head: { kind: 'auto', major: 17, settings: {} },
    });
    expect(
      servers('--provision', 'local', '--postgres-config', 'work_mem=4MB', 'jit=off', '--head-postgres-config', 'work_mem=64kB'),
    ).toEqual({
      base: { kind: 'local', major: undefined, settings: { work_mem: '4MB', jit: 'off' } },
      head: { kind: 'local', major: undefined, settings: { work_mem: '64kB', jit: 'off' } },
    });
  });

  it('takes URLs for either side; --database-url is both sides, or head when base has its own', () => {
    expect(servers('--database-url', url, '--head-database-url', pooler)).toEqual({
      base: { kind: 'database-url', url },
      head: { kind: 'database-url', url: pooler },
    });
    expect(servers('--base-database-url', url, '--database-url', pooler)).toEqual({
      base: { kind: 'database-url', url },
      head: { kind: 'database-url', url: pooler },
    });
    expect(servers('--base-database-url', url, '--head-postgres-version', '17', '--postgres-config', 'work_mem=8MB')).toEqual({
      base: { kind: 'database-url', url },
      head: { kind: 'auto', major: 17, settings: { work_mem: '8MB' } },
    });
    expect(servers('--head-database-url', pooler)).toEqual({
      base: { kind: 'auto', major: undefined, settings: {} },
      head: { kind: 'database-url', url: pooler },
    });
  });

  it('gives base settings of its own (a settings file before the PR), so that one the PR removes is gone on head', () => {
    expect(
      servers(
        '--postgres-config',
        'jit=off',
        '--base-postgres-config',
        'work_mem=64MB',
        'random_page_cost=1.1',
        '--head-postgres-config',
        'random_page_cost=1.1',
      ),
    ).toEqual({
      base: { kind: 'auto', major: undefined, settings: { jit: 'off', work_mem: '64MB', random_page_cost: '1.1' } },
      head: { kind: 'auto', major: undefined, settings: { jit: 'off', random_page_cost: '1.1' } },
    });
    expect(servers('--base-postgres-config', 'work_mem=64MB')).toEqual({
      base: { kind: 'auto', major: undefined, settings: { work_mem: '64MB' } },
      head: { kind: 'auto', major: undefined, settings: {} },
    });
  });

  it('refuses combinations that leave an option without effect, in one line naming it', () => {
    expect(parseError([...base, '--head-database-url', pooler, '--head-postgres-version', '17'])).toMatch(
      /^option --head-postgres-version: applies to a head server the gate starts; it cannot be combined with --head-database-url;/,
    );
    expect(parseError([...base, '--database-url', url, '--head-postgres-config', 'work_mem=1MB'])).toMatch(
      /^option --head-postgres-config: .*--database-url is head's server too; give base's server as --base-database-url instead;/,
    );
    expect(parseError([...base, '--database-url', url, '--base-database-url', url, '--head-database-url', pooler])).toMatch(
      /^option --database-url: is not used/,
    );
    expect(parseError([...base, '--base-database-url', url, '--base-postgres-config', 'work_mem=1MB'])).toMatch(
      /^option --base-postgres-config: applies to a base server the gate starts/,
    );
    expect(parseError([...base, '--base-database-url', url, '--head-database-url', pooler, '--postgres-version', '16'])).toMatch(
      /^option --postgres-version: applies to a server the gate starts/,
    );
    expect(parseError([...base, '--head-database-url', 'http://app:s3cretpw@pooler/app'])).toMatch(
      /^option --head-database-url: expected a URL such as postgres:/,
    );
    expect(parseError([...base, '--head-database-url', 'http://app:s3cretpw@pooler/app'])).not.toMatch(/s3cretpw/);
  });
});

describe('config file', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-config-'));
  const write = (name: string, text: string) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, text);
    return file;
  };

  it('gives the same config as flags, and flags win', () => {
    const file = write(
      'ok.yml',
      [
        'workload: w.wkl',
        'migrations: [db/a/*.sql, db/b/*.sql]',
        'p95-threshold: 25%',
        'min-calls: 50',
        'head-from-scratch: true',
        'postgres-config: { shared_buffers: 128MB, work_mem: 8MB }',
        'rounds: 5',
      ].join('\n'),
    );
    const { values } = tokenize('gate', ['--config', file, '--rounds', '2'], gateCommand.options);
    const config = parseOptions(gateCommand, mergeValues(readConfigFile(file, gateCommand.options), values));
    expect(config.schema).toEqual({ kind: 'files', head: ['db/a/*.sql', 'db/b/*.sql'], base: undefined });
    expect(config.thresholds.p95Threshold).toBeCloseTo(0.25);
    expect(config.thresholds.minCalls).toBe(50);
    expect(config.headFromScratch).toBe(true);
    expect(config.servers.base).toEqual({ kind: 'auto', major: undefined, settings: { shared_buffers: '128MB', work_mem: '8MB' } });
    expect(config.rounds).toBe(2);
  });

  it('rejects unknown keys, wrong shapes and broken YAML with the file named', () => {
    expect(() => readConfigFile(write('unknown.yml', 'workload: w\np95-treshold: 10%\n'), gateCommand.options)).toThrow(
      /unknown option 'p95-treshold'/,
    );
    expect(() => readConfigFile(write('shape.yml', 'workload: [a, b]\n'), gateCommand.options)).toThrow(
      /option 'workload' expects a single value, got a list/,
    );
    expect(() => readConfigFile(write('broken.yml', 'workload: [a\n'), gateCommand.options)).toThrow(/broken\.yml: not valid YAML/);
    expect(() => readConfigFile(write('list.yml', '- a\n- b\n'), gateCommand.options)).toThrow(/expected a mapping/);
    expect(() => readConfigFile(path.join(dir, 'missing.yml'), gateCommand.options)).toThrow(
      /option --config: cannot read .*missing\.yml \(ENOENT\)/,
    );
  });
});

describe('replay order', () => {
  it('alternates the side that goes first and adds one noise replay in round 1', () => {
    const order = planReplays(3).map((r) => `${r.round}:${r.side}`);
    expect(order).toEqual(['1:base', '1:head', '1:noise', '2:head', '2:base', '3:base', '3:head']);
    expect(planReplays(1).map((r) => r.side)).toEqual(['base', 'head', 'noise']);
  });
});

describe('head plan', () => {
  const file = (name: string, digest = name): MigrationFile => ({ name, path: `/x/${name}`, display: name, digest });

  it('copies base and applies only the files new in head', () => {
    const plan = planHead(
      [file('001.sql'), file('002.sql')],
      [file('001.sql'), file('002.sql'), file('003.sql'), file('000_late.sql')],
      false,
    );
    expect(plan).toEqual({ mode: 'copy', newFiles: [file('003.sql'), file('000_late.sql')] });
  });

  it('builds head from scratch when base files changed, or when asked', () => {
    expect(planHead([file('001.sql')], [file('001.sql', 'other')], false)).toMatchObject({
      mode: 'scratch',
      reason: expect.stringMatching(/edited in place: 001\.sql/),
    });
    expect(planHead([file('001.sql'), file('002.sql')], [file('001.sql')], false)).toMatchObject({
      mode: 'scratch',
      reason: expect.stringMatching(/removed: 002\.sql/),
    });
    expect(planHead([file('001.sql')], [file('001.sql')], true)).toMatchObject({
      mode: 'scratch',
      reason: 'head-from-scratch was requested',
    });
  });

  it('resolves globs in name order and refuses ambiguous names and empty globs', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-files-'));
    for (const [sub, name] of [
      ['a', '002_b.sql'],
      ['b', '001_a.sql'],
      ['b', '010_c.sql'],
    ] as const) {
      fs.mkdirSync(path.join(dir, sub), { recursive: true });
      fs.writeFileSync(path.join(dir, sub, name), `-- ${name}\n`);
    }
    const files = await resolveMigrationFiles(['a/*.sql', 'b/*.sql'], dir, 'migrations', true);
    expect(files.map((f) => f.display)).toEqual(['b/001_a.sql', 'a/002_b.sql', 'b/010_c.sql']);
    await expect(resolveMigrationFiles(['c/*.sql'], dir, 'migrations', true)).rejects.toThrow(
      /option --migrations: 'c\/\*\.sql' matches no file/,
    );
    expect(await resolveMigrationFiles(['c/*.sql'], dir, 'migrations', false)).toEqual([]);
    fs.writeFileSync(path.join(dir, 'a', '001_a.sql'), 'select 1;\n');
    await expect(resolveMigrationFiles(['a/*.sql', 'b/*.sql'], dir, 'migrations', true)).rejects.toThrow(
      /two migration files are named 001_a\.sql/,
    );
  });

  it('takes a directory, relative or absolute, as its own .sql files; one without any is refused by name', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-files-'));
    fs.mkdirSync(path.join(dir, 'db', 'migrations', 'old'), { recursive: true });
    fs.mkdirSync(path.join(dir, 'empty'));
    for (const name of ['002_b.sql', '001_a.sql', 'README.md', 'old/000_x.sql']) {
      fs.writeFileSync(path.join(dir, 'db', 'migrations', name), `-- ${name}\n`);
    }
    for (const given of ['db/migrations', 'db/migrations/', path.join(dir, 'db', 'migrations')]) {
      const files = await resolveMigrationFiles([given], dir, 'migrations', true);
      expect(
        files.map((f) => f.display),
        given,
      ).toEqual(['db/migrations/001_a.sql', 'db/migrations/002_b.sql']);
    }
    await expect(resolveMigrationFiles(['empty'], dir, 'migrations', true)).rejects.toThrow(
      /option --migrations: directory 'empty' has no \.sql file \(relative to/,
    );
  });
});
