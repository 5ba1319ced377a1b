// The lint and format check of the TypeScript and JavaScript (biome.jsonc, run first by `npm test`):
// what it refuses, what the project's own style keeps, and that `npm run format` writes that
// style. Each case is a small tree written to a temporary directory and checked with the
// project's own config, so no stray file can be left in src/ or test/.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { root } from './support/shop-gate.js';

const biome = path.join(root, 'node_modules', '@biomejs', 'biome', 'bin', 'biome');
const scripts = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

/** The arguments an npm script gives Biome. */
function biomeArgs(script: string): string[] {
  const [command, ...args] = scripts[script]!.split(' ');
  expect(command).toBe('biome');
  return args;
}
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-lint-'));

afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/**
 * A tree of its own with the project's config: each key a path, each value its content. It is a
 * git repository, as the config reads .gitignore through git.
 */
function tree(name: string, files: Record<string, string>): string {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.copyFileSync(path.join(root, 'biome.jsonc'), path.join(dir, 'biome.jsonc'));
  fs.writeFileSync(path.join(dir, '.gitignore'), '');
  for (const [file, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), content);
  }
  expect(spawnSync('git', ['init', '--quiet', dir]).status).toBe(0);
  return dir;
}

/** Runs Biome in `cwd` with `args`. */
function runBiome(cwd: string, args: string[]) {
  const run = spawnSync(process.execPath, [biome, ...args], { cwd, encoding: 'utf8' });
  expect(run.error).toBeUndefined();
  return run;
}

/** Runs the check `npm test` runs (`npm run lint:code`); what it found, as `rule file` lines. */
function check(cwd: string): { status: number | null; findings: string[] } {
  const run = runBiome(cwd, [...biomeArgs('lint:code'), '--reporter=github', '.']);
  const findings = [...run.stdout.matchAll(/^::\w+ title=([^,]+),file=([^,]+),/gm)].map((m) => `${m[1]} ${path.relative(cwd, m[2]!)}`);
  return { status: run.status, findings };
}

/** Formatted as the project writes it. */
const CLEAN = "export const greeting = { text: 'hello', to: ['you', 'them'] };\n";

describe('the lint and format check', () => {
  it('passes a tree written in the project style', () => {
    expect(check(tree('clean', { 'src/greeting.ts': CLEAN }))).toEqual({ status: 0, findings: [] });
  });

  it('fails on a warning, not only on an error: a focused test left behind', () => {
    const dir = tree('focused', {
      'test/a.test.ts': "import { expect, it } from 'vitest';\n\nit.only('adds', () => {\n  expect(1 + 1).toBe(2);\n});\n",
    });
    expect(check(dir)).toEqual({ status: 1, findings: ['lint/suspicious/noFocusedTests test/a.test.ts'] });
  });

  it('fails on code not formatted as the project writes it, and `npm run format` writes it so', () => {
    const messy = 'export const greeting = {\n    text: "hello",\n    to: ["you", "them"]\n}\n';
    const dir = tree('messy', { 'scripts/greeting.mjs': messy });
    expect(check(dir)).toEqual({ status: 1, findings: ['format scripts/greeting.mjs'] });
    expect(runBiome(dir, biomeArgs('format')).status).toBe(0);
    expect(fs.readFileSync(path.join(dir, 'scripts', 'greeting.mjs'), 'utf8')).toBe(
      "export const greeting = {\n  text: 'hello',\n  to: ['you', 'them'],\n};\n",
    );
    expect(check(dir)).toEqual({ status: 0, findings: [] });
  });

  it('wraps a line over 140 characters, and only then', () => {
    /** A line of `width` characters: an array of one string, padded. */
    const line = (width: number) => `export const s = ['${'a'.repeat(width - "export const s = [''];".length)}'];`;
    expect(line(141)).toHaveLength(141);
    const dir = tree('width', { 'src/at.ts': `${line(140)}\n`, 'src/over.ts': `${line(141)}\n` });
    expect(check(dir).findings).toEqual(['format src/over.ts']);
    runBiome(dir, biomeArgs('format'));
    expect(fs.readFileSync(path.join(dir, 'src', 'over.ts'), 'utf8')).toBe(
      `export const s = [\n  '${'a'.repeat(141 - "export const s = [''];".length)}',\n];\n`,
    );
  });

  it('keeps the project style the config allows: non-null assertions, control characters in regexes, GitHub expressions', () => {
    const dir = tree('allowed', {
      'src/allowed.ts': [
        'export const first = (values: string[]): string => values[0]!;',
        'export const escapes = /\\u001b\\[[0-9;]*[A-Za-z]/g;',
        "export const token = '${{ github.token }}';",
        '',
      ].join('\n'),
    });
    expect(check(dir)).toEqual({ status: 0, findings: [] });
  });

  it('leaves recorded and generated files alone: test/fixtures, test/golden, dist', () => {
    const messy = 'export const a = {\n    b: "c"\n}\n';
    const dir = tree('recorded', {
      'test/fixtures/a.mjs': messy,
      'test/golden/a.ts': messy,
      'dist/index.js': messy,
      'src/greeting.ts': CLEAN,
    });
    expect(check(dir)).toEqual({ status: 0, findings: [] });
  });
});
