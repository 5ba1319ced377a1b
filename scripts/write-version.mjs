// Copies package.json's version into src/tool.ts (`TOOL_VERSION`), which the sources import instead
// of package.json (see there why). `npm version` runs it and stages the file; `--check` only says
// whether the two differ (exit 1), for test/tool-version.test.ts.
//
//   node scripts/write-version.mjs [--check]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const toolFile = path.join(root, 'src', 'tool.ts');
const LINE = /^export const TOOL_VERSION = '([^']*)';$/m;

const { version } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const source = fs.readFileSync(toolFile, 'utf8');
const current = LINE.exec(source);
if (!current) {
  console.error(`write-version: src/tool.ts has no line \`export const TOOL_VERSION = '…';\` to update`);
  process.exit(2);
}
if (current[1] === version) process.exit(0);
if (process.argv.includes('--check')) {
  console.error(`write-version: src/tool.ts says ${current[1]}, package.json ${version}; run node scripts/write-version.mjs`);
  process.exit(1);
}
fs.writeFileSync(toolFile, source.replace(LINE, `export const TOOL_VERSION = '${version}';`));
console.log(`src/tool.ts: TOOL_VERSION ${current[1]} → ${version}`);
