// The README starts with the user and stays short, its commands are the ones that work (and the
// one CI runs), every page of docs/ is in the index, and the layouts (README, docs/design.md §7)
// name the folders the tree has: a renamed or added folder fails here until they say so.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');
const readme = read('README.md');
const lines = readme.split('\n');

const DEMO = 'scripts/prepare-machine.sh && npm ci && npm run demo';
const TEST = 'scripts/prepare-machine.sh && npm ci && npm test';

/** The lines of the first fenced block after a heading. */
function blockAfter(text: string, heading: string): string[] {
  const from = text.indexOf(`\n${heading}\n`);
  expect(from, heading).toBeGreaterThan(-1);
  const open = text.indexOf('```', from);
  const body = text.indexOf('\n', open) + 1;
  return text.slice(body, text.indexOf('\n```', body)).split('\n');
}

/**
 * The paths a layout block names: the first column of each line (names split by ", "),
 * indented names inside the unindented `src/` above them; continuation lines name nothing.
 */
function layoutPaths(block: string[]): string[] {
  const paths: string[] = [];
  for (const line of block) {
    const indent = line.length - line.trimStart().length;
    if (line.trim() === '' || indent > 4) continue;
    const names = line
      .trim()
      .split(/\s{2,}/)[0]!
      .split(', ');
    for (const name of names) paths.push(indent > 0 ? `src/${name}` : name);
  }
  return paths;
}

/** The folders of src/, as a layout names them. */
const srcFolders = () =>
  fs
    .readdirSync(path.join(root, 'src'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => `src/${entry.name}/`)
    .sort();

describe('README', () => {
  it('is at most 250 lines and shows `uses:` in its first 40', () => {
    expect(lines.length).toBeLessThanOrEqual(250);
    const uses = lines.findIndex((line) => /^\s*- uses: /.test(line));
    expect(uses).toBeGreaterThan(-1);
    expect(uses + 1).toBeLessThanOrEqual(40);
  });

  it('goes from using it to the layout, in that order', () => {
    const headings = lines.filter((line) => line.startsWith('## '));
    expect(headings).toEqual([
      '## Use it in a workflow',
      '## What the PR comment looks like',
      '## Try it locally',
      '## Other CI: the CLI',
      '## Configuration',
      '## Performance',
      '## Layout',
    ]);
  });

  it('gives the two commands, and CI runs exactly the test one', () => {
    expect(lines).toContain(DEMO);
    expect(lines).toContain(TEST);
    const run = read('.ci/run')
      .split('\n')
      .filter((line) => line.trim() !== '' && !line.startsWith('#') && !line.startsWith('set ') && !line.startsWith('cd '));
    expect(run).toEqual([TEST]);
  });

  it('keeps its performance table to 8 rows', () => {
    const section = readme.slice(readme.indexOf('\n## Performance\n'), readme.indexOf('\n## Layout\n'));
    const rows = section.split('\n').filter((line) => line.startsWith('|'));
    expect(rows.length - 2).toBeGreaterThan(0);
    expect(rows.length - 2).toBeLessThanOrEqual(8);
  });

  it('links only to files that exist', () => {
    for (const [file, text] of [
      ['README.md', readme],
      ['docs/README.md', read('docs/README.md')],
    ] as const) {
      for (const [, target] of text.matchAll(/\]\(([^)#]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        expect(fs.existsSync(path.join(root, path.dirname(file), target!)), `${file}: ${target}`).toBe(true);
      }
    }
  });
});

describe('docs/README.md', () => {
  it('indexes every page of docs/', () => {
    const index = read('docs/README.md');
    const pages = fs.readdirSync(path.join(root, 'docs')).filter((file) => file.endsWith('.md') && file !== 'README.md');
    for (const page of pages) expect(index, page).toContain(`](${page})`);
  });
});

describe('layouts', () => {
  for (const [file, heading] of [
    ['README.md', '## Layout'],
    ['docs/design.md', '## 7. Layout'],
  ] as const) {
    it(`${file} names what the tree has, and every folder of src/`, () => {
      const named = layoutPaths(blockAfter(read(file), heading));
      for (const entry of named) expect(fs.existsSync(path.join(root, entry)), `${file} names ${entry}`).toBe(true);
      const folders = named.filter((entry) => /^src\/.+\/$/.test(entry));
      expect(folders.sort(), `${file}: the folders of src/`).toEqual(srcFolders());
    });
  }
});
