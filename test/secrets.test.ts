// Secrets and data values never reach what the gate prints, posts or stores: passwords in any
// encoding a connection string may carry them (or written with characters a URL must encode),
// connection strings echoed back in errors, the Docker server's password, and values in error
// messages that the PR comment shows. No secret is on a command line of a process a server runs
// in, and the cache of embedded binaries runs nothing someone else could have put there.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DockerProvisioner } from '../src/provision/docker.js';
import { cachedCopy, isRoot, lookupOsUser, UnsafeCacheError } from '../src/provision/pg-binaries.mjs';
import { conninfoToUrl } from '../src/pg-retest-config/conninfo.js';
import { maskUrl, maskUrlsIn, passwordForms, passwordOf, redact } from '../src/provision/url.js';
import { urlCredentialProblem } from '../src/options/postgres-url.js';
import { maskMessage } from '../src/format/mask.js';
import { decideVerdict } from '../src/verdict/decide.js';
import { runCli } from './support/cli.js';
import { randomPassword, startPostgres, type TestServer } from './support/postgres.js';
import { shop } from './support/shop-gate.js';

describe('passwords', () => {
  it('are masked however the connection string percent-encodes them', () => {
    const url = 'postgres://app:s3cr%21t@db.example:5432/app';
    expect(passwordForms(url)).toEqual(['s3cr!t', 's3cr%21t']);
    const said = redact(`connecting to ${url}; s3cr!t; s3cr%21t; s3cr%21%74; S3CR%21T stays`, passwordOf(url));
    expect(said).toBe('connecting to postgres://app:****@db.example:5432/app; ****; ****; ****; S3CR%21T stays');
  });

  it('in the query string, with a + for a space or a stray %, are masked as written', () => {
    expect(passwordForms('postgres://h/db?password=a+bcd')).toEqual(['a bcd', 'a+bcd']);
    expect(redact('a+bcd, a%20bcd, a bcd', passwordOf('postgres://h/db?password=a+bcd'))).toBe('****, ****, ****');
    expect(passwordForms('postgres://u:100%pure@h/db')).toEqual(['100%pure']);
    expect(redact('100%pure 100%25pure', '100%pure')).toBe('**** ****');
  });

  it('echoed back in an error about what was typed are masked', async () => {
    expect(maskUrlsIn("unexpected argument 'postgres://u:topsecret@h/db' and password=hunter22 x")).toBe(
      "unexpected argument 'postgres://u:****@h/db' and password=**** x",
    );
    const r = await runCli(['inspect', 'w.wkl', 'postgres://u:topsecret@h/db']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unexpected argument 'postgres:\/\/u:\*\*\*\*@h\/db'/);
    expect(r.stderr).not.toContain('topsecret');
  });
});

describe("the Docker server's password", () => {
  const saved = process.env.PATH;
  afterEach(() => {
    process.env.PATH = saved;
  });

  it('is in neither the command line nor the error when docker run fails', async () => {
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-docker-'));
    const argsFile = path.join(bin, 'args');
    // `docker info` answers; `docker run` records its arguments and fails without a word.
    fs.writeFileSync(
      path.join(bin, 'docker'),
      `#!/bin/sh\nif [ "$1" = info ]; then echo 27.0; exit 0; fi\necho "$@ / $POSTGRES_PASSWORD" > ${argsFile}\nexit 125\n`,
      { mode: 0o755 },
    );
    process.env.PATH = `${bin}:${saved}`;
    const error = await new DockerProvisioner().start({ major: 16 }).then(
      () => null,
      (e: Error) => e,
    );
    const [args, password] = fs.readFileSync(argsFile, 'utf8').trim().split(' / ');
    expect(password!.length).toBeGreaterThan(10);
    expect(args).toContain('--env POSTGRES_PASSWORD --label');
    expect(error?.message).toMatch(/^docker run postgres:16 failed: /);
    expect(error?.message).not.toContain(password);
  });
});

describe('data values in messages the PR comment shows', () => {
  it('a function raising its own message, a syntax error near a literal, a command with no SQLSTATE', () => {
    expect(maskMessage('customer ann@example.com not found', 'P0001')).toBe("… (a function's own message, masked: it may carry data)");
    expect(maskMessage('syntax error at or near "ann@example.com"', '42601')).toBe('syntax error at or near "…"');
    expect(maskMessage('ERROR:  invalid input syntax for type integer: "ann@example.com"', null)).toBe(
      'ERROR:  invalid input syntax for type integer: "…"',
    );
    expect(maskMessage('column "emial" does not exist', '42703')).toBe('column "emial" does not exist');
  });

  it("the PR's failing migration, in the verdict's reason", () => {
    const decided = decideVerdict({
      comparison: null,
      migrationFailure: {
        side: 'head',
        name: 'db/002.sql',
        line: 1,
        message: 'invalid input syntax for type integer: "ann@example.com"',
        sqlstate: '22P02',
      },
      thresholds: { p95_threshold: 0.2, min_delta_ms: 0.5, min_calls: 20, max_new_errors: 0, confidence: 0.95 },
    });
    expect(decided.reasons).toEqual(['the PR\'s migrations fail: db/002.sql, line 1: invalid input syntax for type integer: "…"']);
  });
});

describe("the action's masker: a secret in the encodings a command would use to slip it past", () => {
  const secret = 'ghs_Zq81xVbTn0Kp2LmW';
  /** Each form, and how many of its characters come before the secret's own bits. */
  const forms = [
    ['base64', Buffer.from(secret).toString('base64'), 0],
    ["base64 of echo's line", Buffer.from(`${secret}\n`).toString('base64'), 0],
    ['base64 inside a basic-auth header', Buffer.from(`x-access-token:${secret}`).toString('base64'), 20],
    ['base64 one byte in', Buffer.from(`a${secret}`).toString('base64'), 1],
    ['base64url two bytes in', Buffer.from(`ab${secret}?`).toString('base64url'), 2],
    ['hex', Buffer.from(secret).toString('hex'), 0],
    ['HEX', Buffer.from(secret).toString('hex').toUpperCase(), 0],
  ] as const;

  it.each(forms)('%s', async (_, encoded, lead) => {
    const { addSecret, scrub } = await import('../src/action/logger.js');
    addSecret(secret);
    const said = scrub(`found: ${encoded}.`);
    expect(said).toContain('****');
    // Ten characters well inside what the secret's bytes decide are gone.
    expect(said).not.toContain(encoded.slice(lead + 3, lead + 13));
    expect(said.startsWith(`found: ${encoded.slice(0, lead)}`)).toBe(true);
  });

  it('a secret too short for its encodings to be told from other text gets none', async () => {
    const { encodedForms } = await import('../src/action/secret-forms.js');
    expect(encodedForms('pw123')).toEqual([]);
    expect(encodedForms(secret).every((form) => form.length >= 8)).toBe(true);
  });
});

/** Every 3-character piece of `secret` that `text` holds: a tail shown is a leak too. */
function leaked(text: string, secret: string): string[] {
  const pieces = new Set<string>();
  for (let i = 0; i + 3 <= secret.length; i++) if (text.includes(secret.slice(i, i + 3))) pieces.add(secret.slice(i, i + 3));
  return [...pieces];
}

describe('a password with characters a URL must percent-encode', () => {
  // Each character that PostgreSQL's clients split a URL at differently: libpq ends the user info
  // at the first '@' before a '/', tokio-postgres (the engine) at the first '@', node-postgres at
  // the last; '/', '?' and '#' end the authority for the URL standard; libpq refuses a stray '%'.
  const password = 'Qx@Zk w/Jv?#%Ym';
  let server: TestServer;
  let tmp: string;
  beforeAll(async () => {
    server = await startPostgres({ password });
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-url-'));
  });
  afterAll(async () => {
    await server?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });
  const at = (written: string) => `postgres://postgres:${written}@127.0.0.1:${server.port}/postgres`;
  const gateArgs = (url: string) => [
    'gate',
    '--database-url',
    url,
    '--workload',
    shop('workload.wkl'),
    '--base-migrations',
    shop('migrations', '*.sql'),
    '--migrations',
    shop('migrations', '*.sql'),
  ];

  it('written as is, is refused before any connection, with the fix and no piece of it', async () => {
    for (const written of [password, 'Qx@Zk', 'Qx#Zk', 'Qx/Zk', 'Qx?Zk', 'Qx Zk', 'Qx%Zk']) {
      const r = await runCli(gateArgs(at(written)));
      // Before: accepted; node-postgres and the engine then read different passwords and hosts.
      expect(r.code, `${written}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(/^error: option --database-url: .* is not percent-encoded|starts no %XX escape/);
      expect(r.stderr).toContain("percent-encode the user name and password ('@' as %40");
      expect(leaked(r.stdout + r.stderr, written), written).toEqual([]);
    }
  });

  it('percent-encoded, connects; when wrong, no piece of it is in the error, the report or the summary', async () => {
    const right = await runCli(['cleanup', '--database-url', at(encodeURIComponent(password)), '--dry-run']);
    expect(right.code, right.stderr).toBe(0);
    const wrong = `${password}Xq9`;
    const [markdown, json] = [path.join(tmp, 'report.md'), path.join(tmp, 'report.json')];
    const r = await runCli([...gateArgs(at(encodeURIComponent(wrong))), '--markdown', markdown, '--json', json]);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toMatch(/check the user name and password in the URL/);
    const written = [r.stdout, r.stderr, ...[markdown, json].filter((f) => fs.existsSync(f)).map((f) => fs.readFileSync(f, 'utf8'))];
    for (const text of written) {
      expect(leaked(text, wrong)).toEqual([]);
      expect(leaked(text, encodeURIComponent(wrong))).toEqual([]);
    }
  });

  it('is masked whole wherever a URL is echoed, however it is written', () => {
    for (const written of ['Qx@Zk', 'Qx#Zk', 'Qx/Zk', 'Qx Zk', password]) {
      const url = `postgres://app:${written}@db.example:5432/app`;
      // Before: the part after the first '@' (or all of a password the URL standard refuses) was shown.
      expect(leaked(maskUrl(url), written), `maskUrl ${written}`).toEqual([]);
      expect(leaked(maskUrlsIn(`unexpected argument '${url}'`), written), `maskUrlsIn ${written}`).toEqual([]);
      expect(leaked(redact(`connecting to ${url}: ${written}`, passwordOf(url)), written), `redact ${written}`).toEqual([]);
    }
    expect(passwordForms('postgres://app:Qx@Zk@db/app')).toEqual(['Qx@Zk']);
    expect(passwordForms('postgres://app:Qx#Zk@db/app')).toEqual(['Qx#Zk']);
    // An '@' in the query string is not part of the password.
    expect(passwordForms('postgres://app:pw1@db/app?application_name=a@b')).toEqual(['pw1']);
  });
});

describe('a target of a pg-retest config with such a password', () => {
  it('as a URL, is refused the same way; as key=value pairs, becomes a URL that encodes it', () => {
    // Before: accepted, and the engine read another password and host than node-postgres.
    expect(() => conninfoToUrl('postgres://app:Qx@Zk@db/app')).toThrow(
      /^an '@' in the user name, the password or after the host is not percent-encoded.*percent-encode/,
    );
    const url = conninfoToUrl("host=db user=app password='Qx@Zk w/Jv?#%Ym' dbname=app");
    expect(passwordOf(url)).toBe('Qx@Zk w/Jv?#%Ym');
    expect(urlCredentialProblem(url)).toBeUndefined();
    // tokio-postgres would take everything up to this '@' for the user info.
    expect(urlCredentialProblem('postgres://db/app?application_name=me@host')).toMatch(
      /^a '\/', '\?' or '#' in the user name or password, or an '@' after the host, is not percent-encoded/,
    );
  });
});

/** The pids of every process below `root`, from /proc. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  const walk = (pid: number) => {
    for (const child of children.get(pid) ?? []) {
      found.push(child);
      walk(child);
    }
  };
  walk(root);
  return found;
}

const procText = (pid: number, file: string) => {
  try {
    return fs.readFileSync(`/proc/${pid}/${file}`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return ''; // gone meanwhile
  }
};

describe('a throwaway server and the processes it runs in', () => {
  it('have no password on their command lines, and the server none from the environment', async () => {
    const secrets = [`url-${randomPassword()}`, `pgpassword-${randomPassword()}`, `server-${randomPassword()}`];
    const saved = { DATABASE_URL: process.env.DATABASE_URL, PGPASSWORD: process.env.PGPASSWORD };
    process.env.DATABASE_URL = `postgres://app:${secrets[0]}@db.example/app`;
    process.env.PGPASSWORD = secrets[1];
    let server: TestServer;
    try {
      server = await startPostgres({ password: secrets[2] });
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
    try {
      const tree = descendants(process.pid);
      const postmaster = tree.find((pid) =>
        procText(pid, 'cmdline').startsWith(`${path.join(server.bindir, 'postgres')} -D ${server.dataDir}`),
      );
      expect(postmaster, 'the server among the processes this test started').toBeDefined();
      const supervisor = tree.find((pid) => /pg-supervisor\.(m?js)/.test(procText(pid, 'cmdline')));
      expect(supervisor).toBeDefined();
      for (const pid of tree) {
        // Before: the supervisor's command line held its whole config, the environment with it.
        for (const secret of secrets) expect(procText(pid, 'cmdline'), `process ${pid}`).not.toContain(secret);
      }
      // SQL a superuser runs on the server (a PR's migration) can read the server's environment.
      const environ = procText(postmaster!, 'environ');
      expect(environ).toContain('LC_ALL=C');
      for (const secret of secrets) expect(environ).not.toContain(secret);
    } finally {
      await server.stop();
    }
  });
});

describe('the cache of embedded binaries', () => {
  let base: string;
  let native: string;
  const env = () => ({ XDG_CACHE_HOME: base });

  beforeEach(() => {
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-cache-'));
    // A package as npm may unpack it under umask 002: group-writable.
    native = path.join(base, 'package', 'native');
    fs.mkdirSync(path.join(native, 'bin'), { recursive: true });
    fs.mkdirSync(path.join(native, 'lib'));
    fs.writeFileSync(path.join(native, 'bin', 'postgres'), '#!/bin/sh\necho "postgres (PostgreSQL) 17.10"\n');
    fs.chmodSync(path.join(native, 'bin', 'postgres'), 0o775);
    fs.writeFileSync(path.join(native, 'lib', 'libpq.so.5.17'), 'library');
    fs.symlinkSync('libpq.so.5.17', path.join(native, 'lib', 'libpq.so.5'));
  });
  afterEach(() => fs.rmSync(base, { recursive: true, force: true }));

  const mode = (file: string) => fs.lstatSync(file).mode & 0o777;

  it("is the user's own, and its copy writable by no one else", () => {
    const copy = cachedCopy(native, '17-17.10', undefined, env());
    expect(copy).toBe(path.join(base, 'pg-retest-action', '17-17.10'));
    expect(mode(path.join(base, 'pg-retest-action'))).toBe(0o700);
    expect(mode(path.join(copy, 'bin', 'postgres'))).toBe(0o755);
    expect(fs.readlinkSync(path.join(copy, 'lib', 'libpq.so.5'))).toBe('libpq.so.5.17');
    // Made once, then reused after the same checks.
    fs.writeFileSync(path.join(native, 'bin', 'postgres'), 'changed');
    expect(cachedCopy(native, '17-17.10', undefined, env())).toBe(copy);
    expect(fs.readFileSync(path.join(copy, 'bin', 'postgres'), 'utf8')).toContain('PostgreSQL');
  });

  it('refuses a planted postgres that group or others may write', () => {
    const planted = path.join(base, 'pg-retest-action', '17-17.10', 'bin');
    fs.mkdirSync(planted, { recursive: true, mode: 0o700 });
    fs.writeFileSync(path.join(planted, 'postgres'), '#!/bin/sh\necho planted\n');
    fs.chmodSync(path.join(planted, 'postgres'), 0o775);
    // Before: any existing bin/postgres there was used as is.
    expect(() => cachedCopy(native, '17-17.10', undefined, env())).toThrow(UnsafeCacheError);
    expect(() => cachedCopy(native, '17-17.10', undefined, env())).toThrow(
      `the embedded-binaries cache ${path.join(planted, 'postgres')} is writable by others (mode 0775): refusing to run what is in it; remove it`,
    );
  });

  it('refuses a cache directory anyone may write to', () => {
    fs.mkdirSync(path.join(base, 'pg-retest-action'));
    fs.chmodSync(path.join(base, 'pg-retest-action'), 0o777);
    expect(() => cachedCopy(native, '17-17.10', undefined, env())).toThrow(/pg-retest-action is writable by others \(mode 0777\)/);
  });

  it.runIf(isRoot())('refuses a cache directory another user owns (run as root)', () => {
    fs.mkdirSync(path.join(base, 'pg-retest-action'), { mode: 0o755 });
    fs.chownSync(path.join(base, 'pg-retest-action'), 65534, 65534);
    expect(() => cachedCopy(native, '17-17.10', undefined, env())).toThrow(/pg-retest-action belongs to uid 65534, not to this user/);
  });

  it.runIf(isRoot() && lookupOsUser('postgres') !== undefined)("is where the server's account can run it (run as root)", () => {
    const user = lookupOsUser('postgres')!;
    // Root's home is 0700: the server's account cannot reach a cache there.
    fs.chmodSync(base, 0o700);
    const key = `test-${randomPassword()}`;
    const copy = cachedCopy(native, key, user, env());
    try {
      expect(copy).toBe(path.join(os.tmpdir(), `pg-retest-action-${process.getuid!()}`, key));
      expect(mode(path.dirname(copy))).toBe(0o755);
      const out = execFileSync(path.join(copy, 'bin', 'postgres'), [], { uid: user.uid, gid: user.gid, encoding: 'utf8' });
      expect(out).toContain('(PostgreSQL) 17.10');
    } finally {
      fs.rmSync(copy, { recursive: true, force: true });
    }
  });
});
