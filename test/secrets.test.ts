// Secrets and data values never reach what the gate prints, posts or stores: passwords in any
// encoding a connection string may carry them, connection strings echoed back in errors, the
// Docker server's password, and values in error messages that the PR comment shows.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DockerProvisioner } from '../src/provision/docker.js';
import { maskUrlsIn, passwordForms, passwordOf, redact } from '../src/provision/url.js';
import { maskMessage } from '../src/report/mask.js';
import { decideVerdict } from '../src/gate/verdict.js';
import { runCli } from './support/cli.js';

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
    expect(maskUrlsIn("unexpected argument 'postgres://u:topsecret@h/db' and password=hunter22 x")).toBe("unexpected argument 'postgres://u:****@h/db' and password=**** x");
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
    fs.writeFileSync(path.join(bin, 'docker'), `#!/bin/sh\nif [ "$1" = info ]; then echo 27.0; exit 0; fi\necho "$@ / $POSTGRES_PASSWORD" > ${argsFile}\nexit 125\n`, { mode: 0o755 });
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
    expect(maskMessage('ERROR:  invalid input syntax for type integer: "ann@example.com"', null)).toBe('ERROR:  invalid input syntax for type integer: "…"');
    expect(maskMessage('column "emial" does not exist', '42703')).toBe('column "emial" does not exist');
  });

  it("the PR's failing migration, in the verdict's reason", () => {
    const decided = decideVerdict({
      comparison: null,
      migrationFailure: { side: 'head', name: 'db/002.sql', line: 1, message: 'invalid input syntax for type integer: "ann@example.com"', sqlstate: '22P02' },
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
