// What users read, as files in the repository: for every stored report (test/fixtures/reports),
// the markdown the PR comment and the job summary show and the JUnit XML, compared with
// test/golden/. A change to a renderer then shows up as a diff of those files, which a review
// reads like any other; `npx vitest run test/golden-reports.test.ts -u` writes them anew
// (docs/testing.md, "Golden reports").
//
// The markdown comes from the action's own entry point in `mode: comment`, so the comment's body
// is what the REST stand-in received and the summary what the step wrote to its summary file.
// Both carry the same report, and so does the CLI's markdown: one snapshot holds it, and each
// place is checked to show exactly that. Fixtures carry fixed values (times, ports, paths), so
// the files are the same on every machine.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { run } from '../src/action/main.js';
import { parseReport, renderJunit, renderMarkdown } from '../src/report/index.js';
import { captureStdout, INPUT_DEFAULTS, setupStep, useFakeGitHub, workflowRunEvent } from './support/action-in-process.js';

const fake = useFakeGitHub();

const FIXTURES = fileURLToPath(new URL('./fixtures/reports/', import.meta.url));
const names = fs
  .readdirSync(FIXTURES)
  .filter((file) => file.endsWith('.json'))
  .map((file) => file.slice(0, -'.json'.length))
  .sort();

const SUMMARY = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'golden-summary-')), 'summary');

/** The PR the workflow_run event names, in the stand-in's repository. */
const PULL_REQUEST = { number: 5, head: { sha: 'c'.repeat(40) }, base: { repo: { url: 'https://api.github.com/repos/acme/shop' } } };

/**
 * Posts a stored report as the action does after a gate (`mode: comment`).
 * @param file the report's JSON
 * @returns the comment's body and the job summary
 */
async function postAsTheAction(file: string): Promise<{ comment: string; summary: string }> {
  setupStep(workflowRunEvent([PULL_REQUEST]), fake().url, { mode: 'comment', report: file });
  // The toolkit keeps the first summary path it is given for the whole process: one file for
  // every step here, emptied before each.
  fs.writeFileSync(SUMMARY, '');
  process.env.GITHUB_STEP_SUMMARY = SUMMARY;
  captureStdout();
  expect(await run(process.env)).toBe(0);
  expect(fake().comments).toHaveLength(1);
  return { comment: fake().comments[0]!.body, summary: fs.readFileSync(SUMMARY, 'utf8') };
}

/** The comment's two hidden lines: the marker that finds it again and the report's digest. */
function hiddenHeader(markdown: string): string {
  const digest = crypto.createHash('sha256').update(markdown).digest('hex');
  return `<!-- pg-retest-action:comment id=${INPUT_DEFAULTS['comment-id']} -->\n<!-- pg-retest-action:digest ${digest} -->\n`;
}

describe('golden reports', () => {
  for (const name of names) {
    it(`${name}: the markdown of the PR comment, the job summary and the CLI`, async () => {
      const file = path.join(FIXTURES, `${name}.json`);
      const { comment, summary } = await postAsTheAction(file);
      expect(comment.startsWith('<!-- pg-retest-action:comment ')).toBe(true);
      const markdown = comment.slice(comment.indexOf('\n', comment.indexOf('\n') + 1) + 1);
      await expect(markdown).toMatchFileSnapshot(`./golden/${name}.md`);
      expect(comment).toBe(hiddenHeader(markdown) + markdown);
      // The toolkit ends what it appends to the summary file with a line break of its own.
      expect(summary).toBe(markdown + os.EOL);
      // `gate --markdown` and the CLI's output: the same report (the action's size limit is
      // 336 characters above the CLI's; no stored report comes near either).
      expect(renderMarkdown(parseReport(fs.readFileSync(file, 'utf8'), name))).toBe(markdown);
    });

    it(`${name}: the JUnit XML`, async () => {
      const report = parseReport(fs.readFileSync(path.join(FIXTURES, `${name}.json`), 'utf8'), name);
      await expect(renderJunit(report)).toMatchFileSnapshot(`./golden/${name}.junit.xml`);
    });
  }

  it('every stored report has its golden files', () => {
    expect(names.length).toBeGreaterThanOrEqual(7);
    const golden = new Set(fs.readdirSync(fileURLToPath(new URL('./golden/', import.meta.url))));
    const expected = names.flatMap((name) => [`${name}.md`, `${name}.junit.xml`]);
    // A fixture removed or renamed leaves a golden file no test compares any more.
    expect([...golden].sort()).toEqual(expected.sort());
  });
});
