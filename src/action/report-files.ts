/**
 * The report as files a later step can upload or read: markdown (as in the comment: literals
 * masked, under GitHub's size limit), JSON (the input of `mode: comment`) and JUnit XML.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { GateReport } from '../verdict/report-types.js';
import { renderMarkdown, renderJunit, toJson } from '../report/index.js';
import { COMMENT_LIMIT, HEADER_ROOM } from './comment.js';
import type { ReportPaths } from './outputs.js';
import { writeReportFiles } from '../runtime/report-files.js';

/**
 * The markdown every place shows: summary, comment, report file.
 * @param report the gate's report
 * @param section a section of the action's own, put after the verdict (the baseline comparison)
 * @returns markdown short enough for a comment with its hidden header
 */
export function reportMarkdown(report: GateReport, section = ''): string {
  const markdown = renderMarkdown(report, { maxChars: COMMENT_LIMIT - HEADER_ROOM - section.length, maskValues: true });
  if (section === '') return markdown;
  // After the verdict and its reasons, before the first table.
  const at = markdown.indexOf('\n#### ');
  return at < 0 ? `${markdown}\n${section}` : `${markdown.slice(0, at + 1)}${section}\n${markdown.slice(at + 1)}`;
}

/**
 * Writes the three files.
 * @param report the gate's report
 * @param markdown its markdown (from {@link reportMarkdown})
 * @param dir the directory (created when missing)
 * @returns their paths
 */
export function writeGateReportFiles(report: GateReport, markdown: string, dir: string): ReportPaths {
  fs.mkdirSync(dir, { recursive: true });
  const paths: ReportPaths = {
    markdown: path.join(dir, 'pg-retest-report.md'),
    json: path.join(dir, 'pg-retest-report.json'),
    junit: path.join(dir, 'pg-retest-junit.xml'),
  };
  const askedAs = 'input report-dir';
  writeReportFiles(
    [
      { askedAs, path: paths.markdown, render: () => markdown },
      { askedAs, path: paths.json, render: toJson },
      { askedAs, path: paths.junit, render: renderJunit },
    ],
    report,
  );
  return paths;
}
