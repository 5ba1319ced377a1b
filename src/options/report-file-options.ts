/**
 * The options naming the files a report is written to, besides stdout: one definition for every
 * command that ends with a report (`compare`, `aggregate`, `capacity`).
 */
import { filePath } from './values.js';

export const markdownFileOption = {
  shape: 'value',
  placeholder: 'FILE',
  help: 'also write the markdown report to FILE (it is always printed)',
  schema: filePath('the markdown report').optional(),
} as const;

export const jsonFileOption = {
  shape: 'value',
  placeholder: 'FILE',
  help: 'write the JSON report to FILE',
  schema: filePath('the JSON report').optional(),
} as const;

/** The report-file options of the commands that end with the gate's report and take no config file (`compare`, `aggregate`). */
export const reportFileOptions = {
  markdown: markdownFileOption,
  json: jsonFileOption,
  junit: { shape: 'value', placeholder: 'FILE', help: 'write JUnit XML to FILE', schema: filePath('the JUnit XML report').optional() },
} as const;
