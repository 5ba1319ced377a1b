/** The files the gate's report (`gate`, `compare`) can be written to, besides stdout. */
import type { GateReport } from '../verdict/report-types.js';
import { toJson } from '../report/json.js';
import { renderJunit } from '../report/junit.js';
import { renderMarkdown } from '../report/markdown.js';
import type { ReportFile } from '../runtime/report-files.js';

export { reportFileOptions } from '../options/report-file-options.js';

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
