/**
 * The options naming the files a report is written to, besides stdout: one definition for every
 * command that ends with a report (`compare`, `aggregate`, `capacity`).
 */
import { filePath } from './values.js';

/** An option taking the file one report is written to. */
function reportFile(help: string, report: string) {
  return { shape: 'value', placeholder: 'FILE', help, schema: filePath(report).optional() } as const;
}

export const markdownFileOption = reportFile('also write the markdown report to FILE (it is always printed)', 'the markdown report');
export const jsonFileOption = reportFile('write the JSON report to FILE', 'the JSON report');

/** The report-file options of the commands that end with the gate's report and take no config file (`compare`, `aggregate`). */
export const reportFileOptions = {
  markdown: markdownFileOption,
  json: jsonFileOption,
  junit: reportFile('write JUnit XML to FILE', 'the JUnit XML report'),
} as const;
