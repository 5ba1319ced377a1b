// The version reports and `--version` carry (src/tool.ts) is package.json's, copied by
// scripts/write-version.mjs instead of imported, so that the action's bundle does not carry
// package.json (where any edit would change dist/).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import packageJson from '../package.json' with { type: 'json' };
import { TOOL_VERSION, toolInfo } from '../src/tool.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const trees: string[] = [];
afterAll(() => {
  for (const tree of trees) fs.rmSync(tree, { recursive: true, force: true });
});

/** A tree with the script, src/tool.ts and a package.json of the given version. */
function tree(version: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-version-'));
  trees.push(dir);
  fs.mkdirSync(path.join(dir, 'scripts'));
  fs.mkdirSync(path.join(dir, 'src'));
  fs.copyFileSync(path.join(root, 'scripts', 'write-version.mjs'), path.join(dir, 'scripts', 'write-version.mjs'));
  fs.copyFileSync(path.join(root, 'src', 'tool.ts'), path.join(dir, 'src', 'tool.ts'));
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'pg-retest-action', version }));
  return dir;
}

const writeVersion = (dir: string, ...args: string[]) =>
  spawnSync(process.execPath, [path.join(dir, 'scripts', 'write-version.mjs'), ...args], { encoding: 'utf8' });

describe('the tool version', () => {
  it("is package.json's", () => {
    expect(TOOL_VERSION).toBe(packageJson.version);
    expect(toolInfo()).toEqual({ name: 'pg-retest-action', version: packageJson.version });
    expect(writeVersion(root, '--check').status).toBe(0);
  });

  it('--check fails naming both versions when package.json moved on; without it the file is rewritten', () => {
    const dir = tree('9.8.7');
    const check = writeVersion(dir, '--check');
    expect(check.status).toBe(1);
    expect(check.stderr).toContain(`src/tool.ts says ${TOOL_VERSION}, package.json 9.8.7; run node scripts/write-version.mjs`);
    expect(writeVersion(dir).status).toBe(0);
    expect(fs.readFileSync(path.join(dir, 'src', 'tool.ts'), 'utf8')).toContain("export const TOOL_VERSION = '9.8.7';");
    expect(writeVersion(dir, '--check').status).toBe(0);
  });

  it('npm version runs it and stages the file', () => {
    expect(packageJson.scripts.version).toBe('node scripts/write-version.mjs && git add src/tool.ts');
  });

  it('the action bundles do not carry package.json', () => {
    for (const bundle of ['index.js', 'post.js']) {
      const text = fs.readFileSync(path.join(root, 'dist', bundle), 'utf8');
      expect(text).not.toMatch(/devDependencies/);
    }
  });
});
