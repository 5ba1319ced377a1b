/**
 * The gate's and compare's outputs: the markdown report on stdout (and in a file on request),
 * the JSON report and JUnit XML where asked.
 */
import fs from 'node:fs';
import path from 'node:path';
import { InputError } from '../exit-codes.js';
import type { GateReport } from '../verdict/report-types.js';
import { toJson } from '../report/json.js';
import { renderJunit } from '../report/junit.js';
import { renderMarkdown } from '../report/markdown.js';
import type { Io } from '../runtime/io.js';

export interface ReportOutputs {
  markdown?: string;
  json?: string;
  junit?: string;
}

/**
 * Fails early (exit 2) when a report could not be written at the end of a long run.
 * @param outputs the files asked for
 */
export function checkOutputDirs(outputs: ReportOutputs): void {
  for (const [option, file] of Object.entries(outputs)) {
    if (file === undefined) continue;
    const dir = path.dirname(path.resolve(file));
    if (!fs.existsSync(dir)) throw new InputError(`option --${option}: directory ${dir} does not exist; create it first`);
  }
}

/**
 * Prints the markdown and writes the files.
 * @param report the report
 * @param outputs the files asked for
 * @param io stdout for the markdown
 */
export function writeReports(report: GateReport, outputs: ReportOutputs, io: Io): void {
  const markdown = renderMarkdown(report);
  io.stdout.write(markdown.endsWith('\n') ? markdown : `${markdown}\n`);
  const files: [keyof ReportOutputs, () => string][] = [
    ['markdown', () => markdown],
    ['json', () => toJson(report)],
    ['junit', () => renderJunit(report)],
  ];
  for (const [option, render] of files) {
    const file = outputs[option];
    if (file === undefined) continue;
    try {
      fs.writeFileSync(file, render());
    } catch (error) {
      throw new InputError(`option --${option}: cannot write ${file}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}
