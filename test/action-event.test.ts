// What the action takes from the event payload (PR number and commits, fork or not, the run a
// workflow_run is about) and what it gives as outputs, on the report fixtures.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { readEvent } from '../src/action/event.js';
import { outputsOf } from '../src/action/outputs.js';
import { parseReport } from '../src/report/index.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-event-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const fixture = (name: string) =>
  parseReport(fs.readFileSync(fileURLToPath(new URL(`./fixtures/reports/${name}.json`, import.meta.url)), 'utf8'));

function envFor(name: string, payload: unknown): NodeJS.ProcessEnv {
  const file = path.join(dir, `${name}-${Math.random()}.json`);
  fs.writeFileSync(file, typeof payload === 'string' ? payload : JSON.stringify(payload));
  return { GITHUB_REPOSITORY: 'acme/shop', GITHUB_EVENT_NAME: name, GITHUB_EVENT_PATH: file };
}

const pr = (headRepo: string) => ({
  pull_request: {
    number: 9,
    base: { sha: 'a'.repeat(40), repo: { full_name: 'acme/shop' } },
    head: { sha: 'b'.repeat(40), repo: { full_name: headRepo } },
  },
});

describe('readEvent', () => {
  it('a pull_request: number, commits, and whether it comes from a fork', () => {
    expect(readEvent(envFor('pull_request', pr('acme/shop'))).pullRequest).toEqual({
      number: 9,
      baseSha: 'a'.repeat(40),
      headSha: 'b'.repeat(40),
      fromFork: false,
    });
    expect(readEvent(envFor('pull_request', pr('someone/shop'))).pullRequest?.fromFork).toBe(true);
    // A head repository GitHub no longer knows (a deleted fork) is not taken for this one.
    const gone = pr('acme/shop');
    (gone.pull_request.head as { repo: unknown }).repo = null;
    expect(readEvent(envFor('pull_request_target', gone)).pullRequest?.fromFork).toBe(true);
  });

  it('a workflow_run: the head commit, branch and owner to find the PR by', () => {
    const event = readEvent(
      envFor('workflow_run', {
        workflow_run: { head_sha: 'c'.repeat(40), head_branch: 'fix', head_repository: { owner: { login: 'someone' } }, pull_requests: [] },
      }),
    );
    expect(event.workflowRun).toEqual({ headSha: 'c'.repeat(40), headBranch: 'fix', headOwner: 'someone', pullRequests: [] });
    expect(event.pullRequest).toBeUndefined();
  });

  it("a workflow_run's listed pull requests count only when they are into this repository", () => {
    const listed = (base: string | undefined) => ({
      number: 7,
      head: { sha: 'c'.repeat(40) },
      ...(base ? { base: { repo: { url: `https://api.github.com/repos/${base}` } } } : {}),
    });
    const event = readEvent(
      envFor('workflow_run', {
        workflow_run: {
          head_sha: 'c'.repeat(40),
          head_branch: 'fix',
          head_repository: { owner: { login: 'acme' } },
          pull_requests: [listed('someone/shop'), listed(undefined), { ...listed('Acme/Shop'), number: 8 }],
        },
      }),
    );
    // A fork's PR into its own parent shares this branch but not these numbers; an entry that
    // does not say its base is not trusted either (the open-PR lookup finds it instead).
    expect(event.workflowRun?.pullRequests).toEqual([{ number: 8, headSha: 'c'.repeat(40) }]);
  });

  it('a push: no pull request', () => {
    const event = readEvent(envFor('push', { ref: 'refs/heads/main' }));
    expect(event).toEqual({ name: 'push', repository: { owner: 'acme', repo: 'shop' } });
  });

  it('says what is wrong with a payload, in one line', () => {
    expect(() => readEvent(envFor('pull_request', { number: 9 }))).toThrow(
      /^the pull_request event payload \(GITHUB_EVENT_PATH\) has no pull_request with number, base.sha and head.sha$/,
    );
    expect(() => readEvent(envFor('pull_request', '{not json'))).toThrow(/^cannot read the event payload .*GITHUB_EVENT_PATH/);
    expect(() => readEvent({ GITHUB_EVENT_NAME: 'push' })).toThrow(/GITHUB_REPOSITORY is not set to owner\/repo/);
  });
});

describe('outputsOf', () => {
  it('a regression: p95 in ms, delta in percent, the regressed fingerprints', () => {
    expect(outputsOf(fixture('regression'), { markdown: 'r.md', json: 'r.json', junit: 'r.xml' }, 'https://x/1')).toEqual({
      result: 'regression',
      'report-path': 'r.md',
      'json-report-path': 'r.json',
      'junit-path': 'r.xml',
      'comment-url': 'https://x/1',
      'p95-base-ms': '1.42',
      'p95-head-ms': '1.98',
      'p95-delta-pct': '39.4',
      'new-errors': '0',
      'regressed-fingerprints': '5c2e9b1a7d3f4e60',
    });
  });

  it('an error without a comparison: the measured values are empty, never zero', () => {
    const outputs = outputsOf(fixture('error'), undefined, undefined);
    expect(outputs.result).toBe('error');
    for (const name of ['p95-base-ms', 'p95-head-ms', 'p95-delta-pct', 'new-errors', 'regressed-fingerprints', 'comment-url'])
      expect(outputs[name], name).toBe('');
  });
});
