// Lists the functions of src/ longer than a limit (120 lines by default), longest first: a long
// function hides its steps (docs/design.md, "Layout"). test/function-length.test.ts keeps src/
// under the limit.
//
//   node scripts/long-functions.mjs [DIR] [LINES]
//
// Reads the sources with swc (TypeScript 7 has no compiler API to parse with). A function's
// length runs from its first line to its last, its comment above not counted; a function inside
// another counts in both.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseSync } from '@swc/core';

const FUNCTION_NODES = new Set([
  'FunctionDeclaration',
  'FunctionExpression',
  'ArrowFunctionExpression',
  'ClassMethod',
  'PrivateMethod',
  'Constructor',
]);

/** The source files below `dir`, declarations left out. */
function sourceFiles(dir) {
  return fs
    .readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.(ts|mjs)$/.test(entry.name) && !/\.d\.m?ts$/.test(entry.name))
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort();
}

/** The name a function goes by: its own, its method's, or the variable or property it is assigned to. */
function nameOf(node, around) {
  return node.identifier?.value ?? node.key?.value ?? around ?? '(anonymous)';
}

/**
 * The functions of one file with their first line and length.
 * @param file a .ts or .mjs file
 * @returns one entry per function
 */
function functionsOf(file) {
  // A leading ';' pins the module's span to the file's first byte: swc's spans are offsets
  // across every file parsed so far. A '#!' line becomes a comment of the same length.
  const text = `;${fs.readFileSync(file, 'utf8').replace(/^#!/, '//')}`;
  const module = parseSync(text, { syntax: file.endsWith('.ts') ? 'typescript' : 'ecmascript', target: 'es2022' });
  const bytes = Buffer.from(text);
  const lineStarts = [0];
  for (let i = 0; i < bytes.length; i++) if (bytes[i] === 0x0a) lineStarts.push(i + 1);
  const lineOf = (position) => {
    const offset = position - module.span.start;
    let low = 0;
    let high = lineStarts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (lineStarts[middle] <= offset) low = middle;
      else high = middle - 1;
    }
    return low + 1;
  };
  const found = [];
  const visit = (node, around) => {
    if (Array.isArray(node)) {
      for (const child of node) visit(child, around);
      return;
    }
    if (!node || typeof node !== 'object') return;
    let name = around;
    if (FUNCTION_NODES.has(node.type)) {
      name = nameOf(node, around);
      const start = lineOf(node.span.start);
      found.push({ file, name, start, lines: lineOf(node.span.end - 1) - start + 1 });
    }
    for (const [key, child] of Object.entries(node)) {
      if (key === 'span') continue;
      const named = (node.type === 'VariableDeclarator' && key === 'init') || (node.type === 'KeyValueProperty' && key === 'value');
      visit(child, named ? (node.id?.value ?? node.key?.value ?? name) : name);
    }
  };
  visit(module.body, undefined);
  return found;
}

/**
 * The functions below `dir` longer than `limit` lines, longest first.
 * @param dir a directory
 * @param limit the most lines a function may have
 * @returns file, name, first line and length of each
 */
export function longFunctions(dir, limit = 120) {
  return sourceFiles(dir)
    .flatMap(functionsOf)
    .filter((f) => f.lines > limit)
    .sort((a, b) => b.lines - a.lines);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2] ?? 'src';
  const limit = Number(process.argv[3] ?? 120);
  const long = longFunctions(dir, limit);
  for (const f of long) console.log(`${String(f.lines).padStart(5)}  ${f.file}:${f.start}  ${f.name}`);
  console.log(`${long.length} function(s) over ${limit} lines in ${dir}`);
}
