/**
 * Who wrote a report: the name and version that every JSON report and `--version` carry.
 *
 * The version is package.json's, copied here by scripts/write-version.mjs (which `npm version`
 * runs) rather than imported: an import put all of package.json into the action's bundle, so that
 * any edit to it (a script, a dependency) changed dist/ and needed a repackage.
 * test/tool-version.test.ts keeps the two equal.
 */
export const TOOL_VERSION = '0.1.0';

/** The `tool` object of a JSON report. */
export function toolInfo(): { name: 'pg-retest-action'; version: string } {
  return { name: 'pg-retest-action', version: TOOL_VERSION };
}
