/** The files the gate's report (`gate`, `compare`) can be written to, besides stdout. */
import type { GateReport } from '../verdict/report-types.js';
import { toJson } from '../report/json.js';
import { renderJunit } from '../report/junit.js';
import { renderMarkdown } from '../report/markdown.js';
import type { ReportFile } from '../runtime/report-files.js';
import { filePath } from '../options/values.js';

/** The report-file options of the commands that end with the gate's report and take no config file (`compare`, `aggregate`). */
export const reportFileOptions = {
  markdown: {
    shape: 'value',
    placeholder: 'FILE',
    help: 'also write the markdown report to FILE (it is always printed)',
    schema: filePath('the markdown report').optional(),
  },
  json: { shape: 'value', placeholder: 'FILE', help: 'write the JSON report to FILE', schema: filePath('the JSON report').optional() },
  junit: { shape: 'value', placeholder: 'FILE', help: 'write JUnit XML to FILE', schema: filePath('the JUnit XML report').optional() },
} as const;

/** The files asked for by option name. */
export interface GateReportOutputs {
  markdown?: string;
  json?: string;
  junit?: string;
}

/**
 * The markdown (as printed), the JSON report and JUnit XML, where asked for.
 * @param outputs the files asked for
 * @returns one entry per file, those not asked for included
 */
export function gateReportFiles(outputs: GateReportOutputs): ReportFile<GateReport>[] {
  return [
    { askedAs: 'option --markdown', path: outputs.markdown, render: (report) => renderMarkdown(report) },
    { askedAs: 'option --json', path: outputs.json, render: toJson },
    { askedAs: 'option --junit', path: outputs.junit, render: renderJunit },
  ];
}
