// The change under test from other CI systems' environments (src/gate/ci-change.ts): GitLab
// merge request pipelines and Jenkins change requests give the gate its base commit, as a GitHub
// pull_request event does.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { changeUnderTest } from '../src/gate/ci-change.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const shop = (...parts: string[]): string => path.join(root, 'examples', 'shop', ...parts);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-ci-change-'));

afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('changeUnderTest', () => {
  it('GitLab: the merge request diff base, its number and head', () => {
    const change = changeUnderTest({
      GITLAB_CI: 'true',
      CI_MERGE_REQUEST_DIFF_BASE_SHA: 'a'.repeat(40),
      CI_MERGE_REQUEST_IID: '17',
      CI_COMMIT_SHA: 'b'.repeat(40),
    });
    expect(change).toMatchObject({ system: 'gitlab', number: 17, baseRef: 'a'.repeat(40), headSha: 'b'.repeat(40) });
    expect(change!.describe).toMatch(/CI_MERGE_REQUEST_DIFF_BASE_SHA/);
  });

  it('Jenkins: the change target branch as fetched', () => {
    const change = changeUnderTest({
      JENKINS_URL: 'https://ci.example.com/',
      CHANGE_ID: '42',
      CHANGE_TARGET: 'main',
      GIT_COMMIT: 'c'.repeat(40),
    });
    expect(change).toMatchObject({ system: 'jenkins', number: 42, baseRef: 'origin/main', headSha: 'c'.repeat(40) });
  });

  it('nothing outside a change request: a branch pipeline, a laptop', () => {
    expect(changeUnderTest({ GITLAB_CI: 'true', CI_COMMIT_SHA: 'b'.repeat(40) })).toBeUndefined();
    expect(changeUnderTest({ JENKINS_URL: 'https://ci.example.com/', BRANCH_NAME: 'main' })).toBeUndefined();
    expect(changeUnderTest({})).toBeUndefined();
  });
});

function git(cwd: string, ...args: string[]): string {
  const run = spawnSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.com', '-c', 'commit.gpgsign=false', ...args], {
    cwd,
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`git ${args.join(' ')} failed: ${run.stderr}`);
  return run.stdout.trim();
}

describe('the gate in a GitLab merge request pipeline', () => {
  it('builds base from CI_MERGE_REQUEST_DIFF_BASE_SHA, without --base-ref', () => {
    // A repository whose first commit is the shop and whose second (the MR) renames a column.
    const dir = fs.mkdtempSync(path.join(tmp, 'repo-'));
    fs.mkdirSync(path.join(dir, 'db'));
    fs.cpSync(shop('migrations'), path.join(dir, 'db', 'migrations'), { recursive: true });
    fs.copyFileSync(shop('workload.wkl'), path.join(dir, 'db', 'workload.wkl'));
    git(dir, 'init', '--quiet', '--initial-branch=main');
    git(dir, 'add', '.');
    git(dir, 'commit', '--quiet', '-m', 'base');
    const base = git(dir, 'rev-parse', 'HEAD');
    const rename = fs.readdirSync(shop('variants', 'rename-column'))[0]!;
    fs.copyFileSync(shop('variants', 'rename-column', rename), path.join(dir, 'db', 'migrations', rename));
    git(dir, 'add', '.');
    git(dir, 'commit', '--quiet', '-m', 'mr');
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      CI: 'true',
      GITLAB_CI: 'true',
      CI_MERGE_REQUEST_DIFF_BASE_SHA: base,
      CI_MERGE_REQUEST_IID: '5',
    };
    for (const name of ['GITHUB_EVENT_NAME', 'GITHUB_EVENT_PATH', 'GITHUB_ACTIONS', 'JENKINS_URL']) delete env[name];
    const json = path.join(dir, 'report.json');
    const r = spawnSync(
      process.execPath,
      [
        path.join(root, 'dist', 'cli.js'),
        'gate',
        '--database-url',
        inject('pgUrl'),
        '--workload',
        'db/workload.wkl',
        '--migrations',
        'db/migrations/*.sql',
        '--rounds',
        '1',
        '--confirm-rounds',
        '0',
        '--speed',
        '0',
        '--min-coverage',
        '0%',
        '--json',
        json,
      ],
      { cwd: dir, env, encoding: 'utf8' },
    );
    // No seed: what matters is where base came from, and that head's renamed column is new errors.
    const report = JSON.parse(fs.readFileSync(json, 'utf8'));
    expect(report.environment.base.sha, r.stderr).toBe(base);
    expect(r.stderr).toMatch(/base: GitLab merge request !5: CI_MERGE_REQUEST_DIFF_BASE_SHA/);
    expect(r.status, r.stderr).toBe(1);
    expect(report.comparison.new_errors.map((e: { sqlstate: string }) => e.sqlstate)).toContain('42703');
  }, 240_000);
});
