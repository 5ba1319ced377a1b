// The layer rule of src/ (.dependency-cruiser.cjs): src/ keeps it, and the rule refuses what it
// is there to refuse. The refusals are shown on small trees written to a temporary directory and
// checked with the project's own config, so no stray file can be left in src/.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { root } from './support/shop-gate.js';

const config = path.join(root, '.dependency-cruiser.cjs');
const depcruise = path.join(root, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-layers-'));

afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Runs the layer check in `cwd` over its src/; the violations it reports, one per line. */
function check(cwd: string): { status: number | null; violations: string[] } {
  const run = spawnSync(process.execPath, [depcruise, '--config', config, '--output-type', 'err', 'src'], { cwd, encoding: 'utf8' });
  expect(run.error).toBeUndefined();
  const violations = run.stdout
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.startsWith('error '));
  return { status: run.status, violations };
}

/** A tree of its own: each key a path under src/, each value the module it imports (or nothing). */
function tree(name: string, files: Record<string, string | null>): string {
  const dir = path.join(tmp, name);
  for (const [file, imported] of Object.entries(files)) {
    const at = path.join(dir, 'src', file);
    fs.mkdirSync(path.dirname(at), { recursive: true });
    fs.writeFileSync(
      at,
      imported === null ? 'export const value = 1;\n' : `import { value } from '${imported}';\nexport const copy = value;\n`,
    );
  }
  return dir;
}

describe('the layers of src/', () => {
  it('hold in src/: no import up a layer, none between folders of one layer, no cycle', () => {
    const { status, violations } = check(root);
    expect(violations).toEqual([]);
    expect(status).toBe(0);
  });

  it('refuse an import from a lower layer into a higher one', () => {
    const dir = tree('upward', { 'gate/run.ts': null, 'provision/server.ts': '../gate/run.js' });
    const { status, violations } = check(dir);
    expect(violations).toEqual(['error layers: src/provision/server.ts → src/gate/run.ts']);
    expect(status).not.toBe(0);
  });

  it('let a higher layer import a lower one', () => {
    const dir = tree('downward', { 'gate/run.ts': '../provision/server.js', 'provision/server.ts': '../types.js', 'types.ts': null });
    expect(check(dir)).toEqual({ status: 0, violations: [] });
  });

  it('refuse an import between two folders of one layer, the entry points', () => {
    const dir = tree('beside', { 'action/main.ts': '../cli/io.js', 'cli/io.ts': null });
    expect(check(dir).violations).toEqual(['error layers: src/action/main.ts → src/cli/io.ts']);
  });

  it('refuse a folder that has no place among the layers', () => {
    const dir = tree('unplaced', { 'helpers/misc.ts': '../types.js', 'types.ts': null });
    expect(check(dir).violations).toEqual(['error every-module-in-a-layer: src/helpers/misc.ts → src/types.ts']);
  });

  it('refuse two modules that import each other, in one folder too', () => {
    const dir = tree('cycle', { 'gate/a.ts': './b.js', 'gate/b.ts': './a.js' });
    const { violations } = check(dir);
    expect(violations.length).toBeGreaterThan(0);
    expect(violations.every((line) => line.startsWith('error no-cycles: src/gate/'))).toBe(true);
  });
});
