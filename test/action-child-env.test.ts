// What a PR's migrate command can reach when the action runs it, as GitHub runs the action: the
// action bundled from the sources (scripts/package.mjs --js-only, as dist/index.js is built) in
// a node process of its own with a runner's environment (INPUT_*, the runner's tokens, the token
// under other names too), on a pull_request whose head adds a file. The migrate command looks
// for the tokens in its own environment and in its parent's `/proc/<pid>/environ` (which Node
// cannot change: the action's initial environment), prints what it found there base64-encoded,
// and fails on head, so the run ends as a regression ("the PR's migrations fail") with that
// output in the reason. GitHub's REST API is the stand-in, answering the comment with rate limits.
import { fileDigest, formatManifest } from '../src/engine-manifest.mjs';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RUNNER_CREDENTIALS } from '../src/action/child-env.js';
import { adminSql, passwordRole } from './support/admin-sql.js';
import { explain, runStep, type StepRun } from './support/action-process.js';
import { git } from './support/gate-run.js';
import { type FakeGitHub, SECONDARY_LIMIT_MESSAGE, startFakeGitHub } from './support/github-api.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const ENGINE = 'engine.linux-x64-gnu.node';

const REPOSITORY = 'acme/shop';
const RUN_TIMEOUT_MS = 180_000;

const token = `ghs_${randomBytes(18).toString('hex')}`;
const runtimeToken = `rt-${randomBytes(24).toString('base64url')}`;
const oidcToken = `oidc-${randomBytes(24).toString('base64url')}`;
const password = `Pw-${randomBytes(9).toString('base64url')}`;
/** The characters of the token's base64 that the token alone decides: what must appear nowhere. */
const tokenBase64 = Buffer.from(token).toString('base64').slice(0, 40);

let tmp: string;
let bundle: string;
let repo: string;
let dumps: string;
let baseSha: string;
let headSha: string;
let role: string;
let databaseUrl: string;
let github: FakeGitHub;

// What a PR's migration script could do: $1 is the action's pid (the `sh -c` that runs the
// command is its child), $2 where to leave what it saw.
const MIGRATE_SH = `#!/bin/sh
side=base
[ -f db/head-only ] && side=head
tr '\\0' '\\n' < /proc/self/environ > "$2/$side.env"
found=$(tr '\\0' '\\n' < "/proc/$1/environ" | sed -n 's/^INPUT_GITHUB-TOKEN=//p')
echo "token from the action's environ: $(printf %s "$found" | base64 -w0)"
echo "with echo's newline: $(echo "$found" | base64 -w0)"
[ "$side" = head ] || exit 0
echo "leaving it in the reason: $(printf %s "$found" | base64 -w0)"
exit 1
`;

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'action-child-env-'));
  fs.chmodSync(tmp, 0o755);
  // The action as dist/index.js is built, with the engine beside it where the loader looks.
  const out = path.join(tmp, 'bundle');
  const packaged = spawnSync(process.execPath, [path.join(root, 'scripts', 'package.mjs'), '--js-only', '--out', out], {
    cwd: root,
    encoding: 'utf8',
  });
  if (packaged.status !== 0) throw new Error(`scripts/package.mjs --js-only failed: ${packaged.stderr}`);
  bundle = path.join(out, 'index.js');
  const engine = [path.join(root, 'build', ENGINE), path.join(root, 'dist', ENGINE)].find((file) => fs.existsSync(file));
  if (!engine) throw new Error(`no ${ENGINE} in build/ or dist/: run npm run build:native`);
  fs.copyFileSync(engine, path.join(out, ENGINE));
  // The action loads only an engine its manifest lists: this bundle's lists the one it was given.
  fs.writeFileSync(
    path.join(out, 'engines.sha256'),
    formatManifest({ sourceHash: 'test', engines: [{ file: ENGINE, sha256: fileDigest(path.join(out, ENGINE)) }] }),
  );

  repo = path.join(tmp, 'repo');
  dumps = path.join(tmp, 'dumps');
  fs.mkdirSync(path.join(repo, 'db'), { recursive: true });
  fs.mkdirSync(dumps);
  fs.copyFileSync(path.join(root, 'examples', 'shop', 'workload.wkl'), path.join(repo, 'db', 'workload.wkl'));
  fs.writeFileSync(path.join(repo, 'migrate.sh'), MIGRATE_SH, { mode: 0o755 });
  git(repo, 'init', '--quiet', '--initial-branch=main');
  git(repo, 'add', '.');
  git(repo, 'commit', '--quiet', '-m', 'base');
  baseSha = git(repo, 'rev-parse', 'HEAD');
  fs.writeFileSync(path.join(repo, 'db', 'head-only'), '');
  git(repo, 'add', '.');
  git(repo, 'commit', '--quiet', '-m', 'pr');
  headSha = git(repo, 'rev-parse', 'HEAD');

  ({ role, url: databaseUrl } = await passwordRole('pgr_childenv', 'CREATEDB', password));
  github = await startFakeGitHub(REPOSITORY);
}, 60_000);

afterAll(async () => {
  await github?.close();
  if (role) await adminSql(`DROP ROLE IF EXISTS ${role}`).catch(() => {});
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

/** One main step on the pull request, with the runner's tokens and a workflow's `env:` around it. */
function step(): Promise<StepRun> {
  const repoJson = { full_name: REPOSITORY };
  return runStep({
    script: bundle,
    workspace: repo,
    repository: REPOSITORY,
    apiUrl: github.url,
    event: {
      name: 'pull_request',
      payload: { number: 42, pull_request: { number: 42, base: { sha: baseSha, repo: repoJson }, head: { sha: headSha, repo: repoJson } } },
    },
    dir: fs.mkdtempSync(path.join(tmp, 'step-')),
    inputs: {
      'github-token': token,
      'allow-untrusted-pr-code': 'false',
      workload: 'db/workload.wkl',
      'migrate-command': `sh ./migrate.sh "$PPID" ${dumps}`,
      'database-url': databaseUrl,
    },
    env: {
      ACTIONS_RUNTIME_TOKEN: runtimeToken,
      ACTIONS_RUNTIME_URL: 'https://pipelines.example/',
      ACTIONS_RESULTS_URL: 'https://results.example/',
      ACTIONS_CACHE_URL: 'https://cache.example/',
      ACTIONS_ID_TOKEN_REQUEST_TOKEN: oidcToken,
      ACTIONS_ID_TOKEN_REQUEST_URL: 'https://oidc.example/',
      GITHUB_TOKEN: token,
      GH_TOKEN: token,
      MY_SETTING: 'kept',
    },
  });
}

/** Neither the token nor its base64 anywhere the run writes, but in the runner's mask commands. */
function expectNoToken(run: StepRun, extra: [string, string][] = []): void {
  const log = `${run.stdout}\n${run.stderr}`
    .split('\n')
    .filter((line) => !line.startsWith('::add-mask::'))
    .join('\n');
  for (const [what, text] of [['log', log], ['summary', run.summary], ['outputs', JSON.stringify(run.outputs)], ...extra] as const) {
    for (const secret of [token, tokenBase64, runtimeToken, oidcToken, password])
      expect(text, `${what} has a secret`).not.toContain(secret);
  }
}

describe("a PR's migrate command looking for the token", () => {
  let first: StepRun;

  it(
    'finds none of the credentials in its own environment',
    async () => {
      // The comment is refused for a rate limit every time: reported as such, the verdict stands.
      github.rateLimit = { times: 100, status: 429, headers: { 'retry-after': '0' }, message: 'API rate limit exceeded', method: 'POST' };
      first = await step();
      expect(first.code, explain(first)).toBe(1);
      for (const side of ['base', 'head']) {
        const env = fs.readFileSync(path.join(dumps, `${side}.env`), 'utf8');
        const names = env.split('\n').map((line) => line.split('=')[0]!);
        expect(
          names.filter((name) => name.startsWith('INPUT_')),
          side,
        ).toEqual([]);
        expect(
          names.filter(
            (name) => (RUNNER_CREDENTIALS as readonly string[]).includes(name) || name === 'GITHUB_TOKEN' || name === 'GH_TOKEN',
          ),
          side,
        ).toEqual([]);
        for (const secret of [token, runtimeToken, oidcToken]) expect(env, side).not.toContain(secret);
        // What a command is meant to have: its database, and the workflow's own variables.
        expect(env).toMatch(/^DATABASE_URL=postgres:/m);
        expect(env).toMatch(/^MY_SETTING=kept$/m);
      }
    },
    RUN_TIMEOUT_MS,
  );

  it("but reads the token from the action's /proc/<pid>/environ, which Node cannot change: its base64 is masked in the log, the summary and the report files", () => {
    // The command did find it (the lines are there, masked): the limitation the docs state. What
    // is left after the mask is the last character or two, which the token's bytes do not decide
    // alone, and the padding.
    expect(first.stdout).toMatch(/^ {2}\| token from the action's environ: \*\*\*\*[A-Za-z0-9+/]?=*$/m);
    expect(first.stdout).toMatch(/^ {2}\| with echo's newline: \*\*\*\*[A-Za-z0-9+/]{0,2}=*$/m);
    expect(first.summary).toContain('pg-retest: regression');
    expect(first.summary).toMatch(/leaving it in the reason: \\\*\\\*\\\*\\\*/);
    const json = fs.readFileSync(first.outputs['json-report-path']!, 'utf8');
    expect(json).toContain('leaving it in the reason: ****');
    expectNoToken(first, [['json report', json]]);
  });

  it('the comment refused for a rate limit on every try is a warning saying so; the step exits with the verdict (1), not 3', () => {
    expect(first.stdout).toMatch(
      /^::warning::cannot write the PR comment now \(POST \/repos\/acme\/shop\/issues\/42\/comments answered 429: API rate limit exceeded \(rate limit: still after 3 tries over 0 s\)\): GitHub's rate limit/m,
    );
    expect(github.calls.filter((c) => c.method === 'POST')).toHaveLength(3);
    expect(first.outputs.result).toBe('regression');
  });

  it(
    'a secondary rate limit that passes: the comment is written after the wait GitHub asked for, without the token',
    async () => {
      github.calls.length = 0;
      github.rateLimit = { times: 1, status: 403, headers: { 'retry-after': '1' }, message: SECONDARY_LIMIT_MESSAGE, method: 'POST' };
      const second = await step();
      expect(second.code, explain(second)).toBe(1);
      expect(github.calls.filter((c) => c.method === 'POST')).toHaveLength(2);
      expect(second.stdout).toMatch(/^PR comment created: /m);
      expect(github.comments).toHaveLength(1);
      const body = github.comments[0]!.body;
      expect(body).toContain('leaving it in the reason: \\*\\*\\*\\*');
      expectNoToken(second, [['comment', body]]);
    },
    RUN_TIMEOUT_MS,
  );
});
