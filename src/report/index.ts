/**
 * The gate's reports, each a pure function of a {@link GateReport}: markdown (PR comment, job
 * summary, CLI), JSON (written and read back, validated) and JUnit XML. Layouts and the JSON
 * schema are described in docs/report-format.md.
 */
export type { GateReport } from '../verdict/report-types.js';
export { DEFAULT_MAX_CHARS, GITHUB_COMMENT_LIMIT, type MarkdownOptions, renderMarkdown } from './markdown.js';
export { gateReportSchema, parseReport, ReportFormatError, toJson } from './json.js';
export { type JunitOptions, renderJunit } from './junit.js';
export { maskMessage } from '../format/mask.js';
