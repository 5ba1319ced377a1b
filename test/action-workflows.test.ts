// Every workflow of the project (.github/workflows) and every example (examples/workflows,
// examples/capture) passes actionlint, which also checks `uses: ./` steps against action.yml's inputs; the
// examples pin GitHub's actions by commit and keep the token out of .git/config. actionlint
// is built from the Go module proxy into target/tools/ when missing (Go is on the machine).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = fileURLToPath(new URL('..', import.meta.url));
const ACTIONLINT_VERSION = 'v1.7.12';
const tools = path.join(root, 'target', 'tools', `actionlint-${ACTIONLINT_VERSION}`);
const actionlint = path.join(tools, 'actionlint');

const workflows = ['.github/workflows', 'examples/workflows', 'examples/capture'].flatMap((dir) =>
  fs
    .readdirSync(path.join(root, dir))
    .filter((f) => f.endsWith('.yml'))
    .map((f) => `${dir}/${f}`),
);

beforeAll(() => {
  if (fs.existsSync(actionlint)) return;
  const install = spawnSync('go', ['install', `github.com/rhysd/actionlint/cmd/actionlint@${ACTIONLINT_VERSION}`], {
    cwd: root,
    env: { ...process.env, GOBIN: tools, GOFLAGS: '-mod=mod' },
    encoding: 'utf8',
  });
  if (install.status !== 0)
    throw new Error(`go install actionlint ${ACTIONLINT_VERSION} failed: ${install.error?.message ?? install.stderr}`);
}, 600_000);

describe('workflows', () => {
  it('are the ones the issue asks for', () => {
    expect(workflows).toEqual(
      expect.arrayContaining([
        '.github/workflows/ci.yml',
        '.github/workflows/check-dist.yml',
        '.github/workflows/self-test.yml',
        '.github/workflows/release.yml',
        'examples/workflows/basic.yml',
        'examples/workflows/services-postgres.yml',
        'examples/workflows/postgres-matrix.yml',
        'examples/workflows/fork-safe-gate.yml',
        'examples/workflows/fork-safe-comment.yml',
        'examples/workflows/monorepo.yml',
        'examples/workflows/capacity.yml',
        'examples/workflows/postgres-upgrade.yml',
        'examples/workflows/settings.yml',
        'examples/workflows/postgis.yml',
        'examples/workflows/sharded.yml',
        'examples/capture/capture-workload.yml',
      ]),
    );
  });

  it.each(workflows)('%s passes actionlint', (file) => {
    // -shellcheck= and -pyflakes=: the result must not depend on what else is installed.
    const run = spawnSync(actionlint, ['-no-color', '-shellcheck=', '-pyflakes=', file], { cwd: root, encoding: 'utf8' });
    expect(run.stdout + run.stderr, file).toBe('');
    expect(run.status).toBe(0);
  });

  it.each(workflows.filter((file) => file.startsWith('examples/')))(
    "%s keeps the token out of .git/config and pins GitHub's actions by commit",
    (file) => {
      const jobs = Object.values(
        (
          parse(fs.readFileSync(path.join(root, file), 'utf8')) as {
            jobs: Record<string, { steps: { uses?: string; with?: Record<string, unknown> }[] }>;
          }
        ).jobs,
      );
      for (const step of jobs.flatMap((job) => job.steps)) {
        if (!step.uses?.startsWith('actions/')) continue;
        // A tag can be moved to other code; a commit cannot.
        expect(step.uses, file).toMatch(/^actions\/[a-z-]+@[0-9a-f]{40}$/);
        if (step.uses.startsWith('actions/checkout@')) expect(step.with?.['persist-credentials'], `${file}: ${step.uses}`).toBe(false);
      }
    },
  );

  it('actionlint does catch a wrong input of the action', () => {
    const bad = path.join(root, 'target', 'tools', 'bad-workflow.yml');
    fs.writeFileSync(
      bad,
      'on: pull_request\njobs:\n  x:\n    runs-on: ubuntu-24.04\n    steps:\n      - uses: actions/checkout@v4\n      - uses: ./\n        with:\n          workload: w.wkl\n          p95-treshold: 20%\n',
    );
    const run = spawnSync(actionlint, ['-no-color', '-shellcheck=', '-pyflakes=', bad], { cwd: root, encoding: 'utf8' });
    expect(run.stdout).toMatch(/p95-treshold/);
    expect(run.status).not.toBe(0);
  });
});
