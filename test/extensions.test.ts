// Extensions (docs/extensions.md): an extension the server lacks is the environment's fault
// (exit 3, never a regression), and `--extensions` makes them available on the servers the gate
// starts. The gate runs use a PostGIS schema (test/fixtures/postgis: a geometry column, a GiST
// index, radius and nearest-neighbour searches) with workloads captured from real traffic
// (scripts/capture-postgis-workload.mjs), on the machine's PostgreSQL 15 (Debian's), where the
// gate installs postgresql-15-postgis-3 itself when it is missing. Debian 12 has no pgvector
// package for PostgreSQL 15: that is the extension a server lacks here.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { InputError } from '../src/exit-codes.js';
import { gateCommand } from '../src/gate/options.js';
import { parseOptions, tokenize } from '../src/options/argv.js';
import { mergeValues, readConfigFile } from '../src/options/config-file.js';
import { readGateConfig } from '../src/action/inputs.js';
import { aptGetCommand, parsePolicy } from '../src/provision/apt.js';
import { dockerRunArgs } from '../src/provision/docker.js';
import { canonicalExtensionName, knownExtension, preloadsOf } from '../src/provision/extension-table.js';
import { checkDockerExtensions, ExtensionsUnavailableError, extensionsOfBinaries } from '../src/provision/extensions.js';
import { extensionClue, howToGetExtension } from '../src/provision/missing-extension.js';
import { localBinaries } from '../src/provision/pg-binaries.mjs';
import { withPreloads, withStatStatements } from '../src/provision/preload.js';
import { adminSql } from './support/admin-sql.js';
import { explain, GATE_TIMEOUT_MS, gate, root, useGateFixtures } from './support/gate-run.js';
import { LATENCY_RULE_OUT_OF_REACH } from './support/latency-rule.js';

useGateFixtures();

const fixture = (...parts: string[]) => path.join('test', 'fixtures', 'postgis', ...parts);
const locals = localBinaries(process.env.PG_RETEST_BINDIR);
const local15 = locals.find((b) => b.major === 15);
/** A major the embedded packages have and the machine does not. */
const embeddedOnly = [17, 16, 14, 13, 18].find((major) => !locals.some((b) => b.major === major))!;
const hasAptGet = fs.existsSync('/usr/bin/apt-get');

function parse(argv: string[]) {
  const { values } = tokenize('gate', argv, gateCommand.options);
  return parseOptions(gateCommand, values);
}

/** The message of the InputError that parsing these arguments throws. */
function refusal(argv: string[]): string {
  const error = (() => {
    try {
      parse(argv);
      return undefined;
    } catch (thrown) {
      return thrown;
    }
  })();
  expect(error, argv.join(' ')).toBeInstanceOf(InputError);
  return (error as Error).message;
}

const required = ['--workload', 'w.wkl', '--migrations', 'db/*.sql'];

describe('the extensions and image options', () => {
  it('read comma- and space-separated names, under the name CREATE EXTENSION takes, once each', () => {
    const config = parse([...required, '--extensions', 'PostGIS,pgvector', 'pg_trgm', '--extensions', 'vector', '--provision', 'local']);
    expect(config.servers.base).toEqual({ kind: 'local', major: undefined, settings: {}, extensions: ['postgis', 'vector', 'pg_trgm'] });
    const both = parse([...required, '--extensions', 'postgis', '--head-postgres-version', '16']);
    expect(both.servers.head).toMatchObject({ major: 16, extensions: ['postgis'] });
    const url = parse([...required, '--extensions', 'vector', '--database-url', 'postgres://u@h/db']);
    expect(url.servers.base).toEqual({ kind: 'database-url', url: 'postgres://u@h/db', extensions: ['vector'] });
  });

  it('refuse a name that is no extension name, and an image where no docker server starts', () => {
    expect(refusal([...required, '--extensions', 'postgis;drop'])).toMatch(/--extensions: .*got 'postgis;drop'/);
    expect(refusal([...required, '--image', 'postgis/postgis:16-3.5', '--provision', 'local'])).toMatch(
      /--image: is the docker provisioner's: add --provision docker instead of local/,
    );
    expect(refusal([...required, '--image', 'postgis/postgis:16-3.5'])).toMatch(
      /--image: is the docker provisioner's: add --provision docker;/,
    );
    expect(refusal([...required, '--image', 'postgis/postgis:16-3.5', '--database-url', 'postgres://u@h/db'])).toMatch(
      /--image: applies to a server the gate starts/,
    );
    const docker = parse([...required, '--provision', 'docker', '--image', 'postgis/postgis:16-3.5', '--extensions', 'postgis']);
    expect(docker.servers.base).toMatchObject({ kind: 'docker', image: 'postgis/postgis:16-3.5', extensions: ['postgis'] });
  });
});

describe('the extensions option in a config file and as an action input', () => {
  it('takes a YAML list, and a comma-separated input', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-ext-'));
    try {
      const file = path.join(dir, 'gate.yml');
      fs.writeFileSync(
        file,
        'workload: w.wkl\nmigrations: db/*.sql\nextensions: [postgis, pgvector]\nprovision: docker\nimage: pgvector/pgvector:pg16\n',
      );
      const config = parseOptions(gateCommand, mergeValues(readConfigFile(file, gateCommand.options), {}));
      expect(config.servers.base).toMatchObject({ kind: 'docker', extensions: ['postgis', 'vector'], image: 'pgvector/pgvector:pg16' });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    const inputs: Record<string, string> = { workload: 'w.wkl', migrations: 'db/*.sql', extensions: 'postgis, vector\npg_trgm' };
    const fromInputs = readGateConfig((name) => inputs[name] ?? '');
    expect(fromInputs.servers.base).toMatchObject({ extensions: ['postgis', 'vector', 'pg_trgm'] });
    expect(() => readGateConfig((name) => ({ ...inputs, extensions: 'post gis!' })[name] ?? '')).toThrow(
      /^input `extensions`: .*got 'gis!'/,
    );
  });
});

describe('the table of extensions', () => {
  it('names the Debian/Ubuntu package of each major, its image and its preload library', () => {
    expect(knownExtension('postgis')!.aptPackage(16)).toBe('postgresql-16-postgis-3');
    expect(knownExtension('postgis_topology')!.name).toBe('postgis');
    expect(knownExtension('pgvector')!.aptPackage(15)).toBe('postgresql-15-pgvector');
    expect(knownExtension('vector')!.dockerImage!(17)).toBe('pgvector/pgvector:pg17');
    expect(knownExtension('timescaledb')!.aptPackage(16)).toBe('timescaledb-2-postgresql-16');
    expect(knownExtension('pg_partman')!.aptPackage(15)).toBe('postgresql-15-partman');
    expect(knownExtension('pg_trgm')).toBeUndefined();
    expect(canonicalExtensionName('pgvector')).toBe('vector');
    expect(preloadsOf(['postgis', 'timescaledb', 'pgaudit', 'pg_cron'])).toEqual(['timescaledb', 'pgaudit', 'pg_cron']);
  });

  it('adds preload libraries after the ones already asked for, pg_stat_statements included', () => {
    const settings = withPreloads(withStatStatements({ shared_preload_libraries: 'auto_explain' }), preloadsOf(['timescaledb']));
    expect(settings.shared_preload_libraries).toBe('auto_explain,pg_stat_statements,timescaledb');
    expect(withPreloads({ work_mem: '4MB' }, [])).toEqual({ work_mem: '4MB' });
  });
});

describe('docker', () => {
  it('runs the image with the preload libraries as the server options, the password by name only', () => {
    const settings = withPreloads(withStatStatements({ autovacuum: 'off' }), preloadsOf(['timescaledb']));
    const args = dockerRunArgs('timescale/timescaledb:latest-pg16', settings);
    // The image right before the server's own options; the password's name only, its value in the environment.
    expect(args.indexOf('timescale/timescaledb:latest-pg16')).toBe(args.length - 5);
    expect(args.join(' ')).toContain('--rm --publish 127.0.0.1::5432 --env POSTGRES_PASSWORD ');
    expect(args.slice(-4)).toEqual(['-c', 'autovacuum=off', '-c', 'shared_preload_libraries=pg_stat_statements,timescaledb']);
  });

  it('refuses, before pulling anything, an extension the official image lacks', () => {
    expect(() => checkDockerExtensions(undefined, 16, ['postgis', 'pg_trgm'])).toThrow(
      /the image postgres:16 has the contrib extensions only, not postgis; give image postgis\/postgis:16-3\.5/,
    );
    expect(() => checkDockerExtensions('postgres:16', 16, ['vector'])).toThrow(ExtensionsUnavailableError);
    expect(() => checkDockerExtensions('postgis/postgis:16-3.5', 16, ['postgis'])).not.toThrow();
    expect(() => checkDockerExtensions(undefined, 16, ['pg_trgm', 'citext'])).not.toThrow();
  });
});

describe('what servers say of a missing extension', () => {
  it('reads the extension from PostgreSQL 13 to 18, and a type or function only as a clue', () => {
    // As PostgreSQL 15.18 and 18.4 say it (0A000), and 13 (58P01), on servers without the package.
    expect(extensionClue('extension "vector" is not available', '0A000')).toEqual({ name: 'vector', certain: true });
    expect(
      extensionClue(
        'could not open extension control file "/x/share/postgresql/extension/postgis.control": No such file or directory',
        '58P01',
      ),
    ).toEqual({ name: 'postgis', certain: true });
    expect(extensionClue('could not access file "$libdir/postgis-3": No such file or directory', '58P01')).toEqual({
      name: 'postgis',
      certain: true,
    });
    expect(extensionClue('type "geometry" does not exist', '42704')).toEqual({ name: 'postgis', certain: false });
    expect(extensionClue('function st_dwithin(integer, integer, integer) does not exist', '42883')).toEqual({
      name: 'postgis',
      certain: false,
    });
    expect(extensionClue('type "money2" does not exist', '42704')).toBeUndefined();
    expect(extensionClue('relation "places" does not exist', '42P01')).toBeUndefined();
  });

  it('says how to get it for the kind of server', () => {
    expect(howToGetExtension('vector', 'PostgreSQL 15.18 (local, /usr/lib/postgresql/15/bin) on 127.0.0.1:5432')).toBe(
      'list it in the extensions option (extensions: vector; the gate installs postgresql-15-pgvector on Debian/Ubuntu), ' +
        'or use provision docker with image pgvector/pgvector:pg15',
    );
    expect(howToGetExtension('postgis', 'PostgreSQL 18.4 (embedded, /x/bin) on 127.0.0.1:5432')).toMatch(
      /^the embedded server has contrib extensions only: use provision local with extensions postgis/,
    );
    expect(howToGetExtension('vector', 'PostgreSQL 16.4 at db.example.com:5432/app')).toMatch(
      /^install it on that server \(postgresql-16-pgvector/,
    );
  });
});

describe('apt', () => {
  it('reads apt-cache policy, and goes through sudo -n when not root', () => {
    expect(parsePolicy('postgresql-15-postgis-3:\n  Installed: (none)\n  Candidate: 3.3.2+dfsg-1+b1\n')).toEqual({
      known: true,
      installed: false,
    });
    expect(parsePolicy('')).toEqual({ known: false, installed: false });
    expect(aptGetCommand(['install', '-y', 'p'], false)).toEqual({
      file: 'sudo',
      args: ['-n', 'apt-get', '-o', 'DPkg::Lock::Timeout=300', 'install', '-y', 'p'],
    });
    expect(aptGetCommand(['update'], true).file).toBe('apt-get');
  });
});

const NO_LATENCY = ['--rounds', '1', '--confirm-rounds', '0', ...LATENCY_RULE_OUT_OF_REACH];

/** A gate on the PostGIS fixture: base's migrations and head's as given, on the machine's PostgreSQL 15. */
function postgisGate(workload: string, base: string[], head: string[], extra: string[]) {
  return gate(
    [
      'gate',
      '--workload',
      fixture(workload),
      '--seed',
      fixture('seed.sql'),
      '--base-migrations',
      ...base,
      '--migrations',
      ...head,
      '--postgres-version',
      '15',
      ...NO_LATENCY,
      ...extra,
    ],
    root,
  );
}

const BASE = [fixture('migrations', '*.sql')];

/** A gate of the catalog workload on the schema without PostGIS (base and head alike). */
function plainSchemaGate(extra: string[]) {
  const plain = fixture('migrations', '001_*.sql');
  return gate(
    ['gate', '--workload', fixture('catalog.wkl'), '--base-migrations', plain, '--migrations', plain, ...NO_LATENCY, ...extra],
    root,
  );
}

describe.skipIf(!local15 || !hasAptGet)(
  local15 && hasAptGet ? 'a PostGIS schema on the local PostgreSQL 15' : 'a PostGIS schema (skipped: needs PostgreSQL 15 and apt-get)',
  () => {
    it(
      'extensions: postgis installs the package when missing, and the A/A run passes',
      async () => {
        const run = await postgisGate('map.wkl', BASE, BASE, ['--provision', 'local', '--extensions', 'postgis']);
        expect(run.code, explain(run)).toBe(0);
        expect(run.report!.verdict).toBe('pass');
        expect(run.report!.environment.server).toMatch(/^PostgreSQL 15\.\d+ \(local, /);
        expect(extensionsOfBinaries(local15!).has('postgis')).toBe(true);
        expect(run.report!.comparison!.fingerprints.map((f) => f.normalized).join('\n')).toMatch(/ST_DWithin/);
      },
      GATE_TIMEOUT_MS,
    );

    it.concurrent(
      'a PR dropping the GiST index fails, naming the radius and the nearest-neighbour queries',
      async () => {
        // Caught by the plan rule (an index scan became a sequential scan of 50,000 rows), not by a
        // latency ratio: the latency rule is out of reach.
        const run = await postgisGate(
          'map.wkl',
          BASE,
          [...BASE, fixture('pr', 'drop-gist', '*.sql')],
          ['--provision', 'local', '--extensions', 'postgis', '--fail-on-plan-change', 'seq-scan'],
        );
        expect(run.code, explain(run)).toBe(1);
        expect(run.report!.verdict).toBe('regression');
        const failed = run.report!.plans!.fingerprints.filter((f) => f.assessment === 'regression');
        expect(failed.map((f) => f.normalized).sort()).toEqual([
          expect.stringMatching(/ORDER BY geom <-> ST_SetSRID/),
          expect.stringMatching(/WHERE ST_DWithin\(geom/),
        ]);
        expect(failed.every((f) => /^places: Index Scan using places_geom_gist → Seq Scan/.test(f.change ?? ''))).toBe(true);
        // The verdict's reasons (the PR comment's lines) name each query.
        expect(run.report!.reasons).toHaveLength(2);
        expect(run.report!.reasons).toEqual(
          expect.arrayContaining([
            expect.stringMatching(/^`SELECT id, name, kind FROM places WHERE ST_DWithin\(.*sequential scan on places \(50,000 rows\)/),
            expect.stringMatching(/^`SELECT id, name, ST_Distance\(.*sequential scan on places \(50,000 rows\)/),
          ]),
        );
      },
      GATE_TIMEOUT_MS,
    );

    it.concurrent(
      'a PR adding PostGIS in a migration passes when extensions lists it',
      async () => {
        // The work rule off: the PR's geometry column widens the rows, and a read of three pages
        // per call takes four (test/work.test.ts is the rule's subject; this one is the extension's).
        const run = await postgisGate('catalog.wkl', [fixture('migrations', '001_*.sql')], BASE, [
          '--extensions',
          'postgis',
          '--work-threshold',
          'off',
        ]);
        expect(run.code, explain(run)).toBe(0);
        expect(run.report!.verdict).toBe('pass');
        expect(run.report!.migrations.filter((m) => m.side === 'head').map((m) => [m.name, m.ok])).toEqual([
          ['test/fixtures/postgis/migrations/002_postgis.sql', true],
        ]);
      },
      GATE_TIMEOUT_MS,
    );

    it.concurrent(
      'a PR adding pgvector, which the server lacks, is exit 3 naming it, the server and the way to get it, not a regression',
      async () => {
        const run = await postgisGate(
          'map.wkl',
          BASE,
          [...BASE, fixture('pr', 'vector', '*.sql')],
          ['--provision', 'local', '--extensions', 'postgis'],
        );
        expect(run.code, explain(run)).toBe(3);
        expect(run.report!.verdict).toBe('error');
        const message = run.report!.error!.message;
        expect(message).toMatch(/^head migration test\/fixtures\/postgis\/pr\/vector\/003_embeddings\.sql, line 3: /);
        expect(message).toMatch(
          /the server lacks the extension vector, not a fault of the SQL \(PostgreSQL 15\.\d+ \(local, \S+\/bin\) on /,
        );
        expect(message).toContain('extensions: vector; the gate installs postgresql-15-pgvector');
        expect(run.report!.migration_failure).toBeNull();
      },
      GATE_TIMEOUT_MS,
    );

    it.concurrent(
      'the same extension in the base schema is exit 3 too, without "fix the statement"',
      async () => {
        const withVector = [...BASE, fixture('pr', 'vector', '*.sql')];
        const run = await postgisGate('map.wkl', withVector, withVector, ['--provision', 'local', '--extensions', 'postgis']);
        expect(run.code, explain(run)).toBe(3);
        expect(run.report!.error!.message).toMatch(
          /^base migration .*003_embeddings\.sql, line 3: .*the server lacks the extension vector/,
        );
        expect(run.stderr).not.toContain('fix the statement');
      },
      GATE_TIMEOUT_MS,
    );

    it.concurrent(
      'extensions: vector is exit 2 naming the package Debian lacks for PostgreSQL 15, before any migration',
      async () => {
        const run = await postgisGate('map.wkl', BASE, BASE, ['--provision', 'local', '--extensions', 'postgis,vector']);
        expect(run.code, explain(run)).toBe(2);
        expect(run.report!.error!.message).toMatch(
          /^extensions: this machine's package sources have no package for PostgreSQL 15 .*: postgresql-15-pgvector \(extension vector;/,
        );
        expect(run.stderr).not.toContain('building the base schema');
      },
      GATE_TIMEOUT_MS,
    );

    it.concurrent(
      'an unknown extension is exit 2 naming it',
      async () => {
        const run = await postgisGate('map.wkl', BASE, BASE, ['--provision', 'local', '--extensions', 'postgis_nonesuch']);
        expect(run.code, explain(run)).toBe(2);
        expect(run.report!.error!.message).toMatch(/^extensions: unknown extension 'postgis_nonesuch': not one the gate can install/);
      },
      GATE_TIMEOUT_MS,
    );

    it.concurrent(
      'auto skips the kinds that cannot have the extension and says why each was skipped',
      async () => {
        const run = await postgisGate('map.wkl', BASE, BASE, ['--extensions', 'vector']);
        expect(run.code, explain(run)).toBe(2);
        const message = run.report!.error!.message;
        expect(message).toMatch(
          /^provision auto: no way to start PostgreSQL 15 with the extensions vector here \(local: no package postgresql-15-pgvector/,
        );
        expect(message).toContain('embedded: contrib extensions only, not vector');
        expect(message).toContain('docker: postgres:15 has contrib extensions only: give image pgvector/pgvector:pg15');
      },
      GATE_TIMEOUT_MS,
    );
  },
);

describe('servers without the package', () => {
  it.concurrent(
    'embedded refuses PostGIS up front (exit 2); without extensions, a PR adding PostGIS there is exit 3, not 1',
    async () => {
      const refused = await postgisGate('catalog.wkl', [fixture('migrations', '001_*.sql')], BASE, [
        '--provision',
        'embedded',
        '--extensions',
        'postgis',
      ]);
      expect(refused.code, explain(refused)).toBe(2);
      expect(refused.report!.error!.message).toMatch(
        /^extensions: the embedded server \(PostgreSQL 15\.\d+ \(embedded, .*\)\) has the contrib extensions only, not postgis/,
      );

      const run = await postgisGate('catalog.wkl', [fixture('migrations', '001_*.sql')], BASE, ['--provision', 'embedded']);
      expect(run.code, explain(run)).toBe(3);
      expect(run.report!.error!.message).toMatch(/^head migration .*002_postgis\.sql, line 3: .*the server lacks the extension postgis/);
      expect(run.report!.error!.message).toContain('the embedded server has contrib extensions only');
    },
    GATE_TIMEOUT_MS,
  );

  it.concurrent(
    "auto's choice and what it skipped go in the report's server line when extensions were asked for",
    async () => {
      // A major the machine has no binaries of: auto skips local and takes embedded, which has
      // the contrib extension asked for.
      const run = await plainSchemaGate(['--postgres-version', String(embeddedOnly), '--extensions', 'pg_trgm']);
      expect(run.code, explain(run)).toBe(0);
      expect(run.report!.environment.server).toMatch(
        new RegExp(
          `^PostgreSQL ${embeddedOnly}\\.\\d+ \\(embedded, .*\\) on 127\\.0\\.0\\.1:\\d+; ` +
            `provision auto: using embedded \\(skipped local: no PostgreSQL ${embeddedOnly} binaries on this machine`,
        ),
      );
    },
    GATE_TIMEOUT_MS,
  );

  it.concurrent(
    'a database-url server is checked: exit 3 for an extension it lacks, contrib ones pass the check',
    async () => {
      const run = await plainSchemaGate(['--database-url', inject('pgUrl'), '--extensions', 'pg_trgm,vector']);
      expect(run.code, explain(run)).toBe(3);
      expect(run.report!.error!.message).toMatch(/^extensions: PostgreSQL \d+\.\d+ at .* lacks vector \(not in pg_available_extensions\)/);
    },
    GATE_TIMEOUT_MS,
  );

  it.concurrent(
    "replay's setup files: a missing extension is the server's, not the statement's to fix (exit 3)",
    async () => {
      const name = `t_ext_${randomBytes(4).toString('hex')}`;
      await adminSql(`CREATE DATABASE ${name}`);
      try {
        const url = new URL(inject('pgUrl'));
        url.pathname = `/${name}`;
        const run = await gate([
          'replay',
          '--database-url',
          url.toString(),
          '--workload',
          fixture('catalog.wkl'),
          '--allow-writes',
          '--setup',
          fixture('pr', 'vector', '003_embeddings.sql'),
        ]);
        expect(run.code, explain(run)).toBe(3);
        expect(run.stderr).toMatch(
          /setup file .*003_embeddings\.sql, line 3: extension "vector" is not available .*; the server lacks the extension vector: install its package there/,
        );
        expect(run.stderr).not.toContain('fix the statement');
      } finally {
        await adminSql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      }
    },
    GATE_TIMEOUT_MS,
  );
});
