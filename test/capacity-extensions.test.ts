// `capacity` with a schema that creates extensions (docs/extensions.md): the same `extensions` and
// `image` options as the gate, under the same rules, and a missing extension named with the server
// and how to get it (exit 3, never "fix the statement"). The runs stop before any sweep: at the
// option check, the server check, or head's migration; on the shared test server (PostgreSQL 15
// from Debian 12, which packages no pgvector for it: the extension a server lacks here).
import path from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { capacityCommand } from '../src/capacity/options.js';
import { InputError } from '../src/exit-codes.js';
import { parseOptions, tokenize } from '../src/options/argv.js';
import { runCli } from './support/shop-gate.js';

const fixture = (...parts: string[]) => path.join('test', 'fixtures', 'postgis', ...parts);
const required = ['--workload', 'w.wkl', '--migrations', 'db/*.sql'];
const RUN_TIMEOUT_MS = 120_000;

function parse(argv: string[]) {
  const { values } = tokenize('capacity', argv, capacityCommand.options);
  return parseOptions(capacityCommand, values);
}

function refusal(argv: string[]): string {
  try {
    parse(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(InputError);
    return (error as Error).message;
  }
  throw new Error(`accepted: ${argv.join(' ')}`);
}

describe('capacity: the extensions and image options', () => {
  it("read as the gate reads them, and refuse an image where no docker server starts, with the gate's words", () => {
    const config = parse([...required, '--extensions', 'PostGIS,pgvector', '--provision', 'docker', '--image', 'pgvector/pgvector:pg16']);
    expect(config).toMatchObject({ extensions: ['postgis', 'vector'], image: 'pgvector/pgvector:pg16' });
    expect(parse(required)).toMatchObject({ extensions: [], image: undefined });
    expect(refusal([...required, '--extensions', 'postgis;drop'])).toMatch(/--extensions: .*got 'postgis;drop'/);
    expect(refusal([...required, '--image', 'postgis/postgis:16-3.5', '--provision', 'local'])).toMatch(
      /--image: is the docker provisioner's: add --provision docker instead of local/,
    );
    expect(refusal([...required, '--image', 'postgis/postgis:16-3.5', '--database-url', 'postgres://u@h/db'])).toMatch(
      /--image: applies to a server the gate starts/,
    );
  });
});

describe('capacity on a server without the extension', () => {
  const capacity = (args: string[]) =>
    runCli(['capacity', '--database-url', inject('pgUrl'), '--workload', fixture('catalog.wkl'), '--connections', '1', ...args]);

  it.concurrent(
    'extensions lists one the database-url server lacks: exit 3 naming the server, before any schema is built',
    async () => {
      const run = await capacity(['--migrations', fixture('migrations', '001_*.sql'), '--extensions', 'pg_trgm,vector']);
      expect(run.code, run.stderr).toBe(3);
      expect(run.stderr).toMatch(/extensions: PostgreSQL \d+\.\d+ at .* lacks vector \(not in pg_available_extensions\)/);
      expect(run.stderr).not.toMatch(/building the base schema|migration/);
    },
    RUN_TIMEOUT_MS,
  );

  it.concurrent(
    "a migration creating it without the option: exit 3 naming the extension, the server and the fix, not the statement's fault",
    async () => {
      const run = await capacity(['--migrations', fixture('migrations', '001_*.sql'), fixture('pr', 'vector', '003_embeddings.sql')]);
      expect(run.code, run.stderr).toBe(3);
      expect(run.stderr).toMatch(
        /003_embeddings\.sql, line 3: .*the server lacks the extension vector, not a fault of the SQL \(PostgreSQL \d+\.\d+ at [^)]*\); install it on that server \(postgresql-\d+-pgvector on Debian\/Ubuntu\), or let the gate start one with extensions vector/,
      );
      expect(run.stderr).not.toContain('fix the statement');
    },
    RUN_TIMEOUT_MS,
  );
});
