// No function in src/ over 120 lines (scripts/long-functions.mjs): a longer one hides its steps,
// as runGate's 301 lines hid its phases behind a state object and a closure.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { root } from './support/shop-gate.js';

describe('functions in src/', () => {
  it('are at most 120 lines long', () => {
    const run = spawnSync(process.execPath, [path.join(root, 'scripts', 'long-functions.mjs'), 'src', '120'], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toBe('0 function(s) over 120 lines in src\n');
  });
});
