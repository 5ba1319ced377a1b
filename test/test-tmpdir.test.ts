// Where `npm test` puts its servers and files (scripts/lib/test-tmpdir.mjs): a directory of its
// own on tmpfs when there is one with room, else the system's temp directory; never a half-usable
// choice, and an explicit PG_RETEST_TEST_TMPDIR wins.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without declarations
import { chooseTestTmpdir, removeTestTmpdir } from '../scripts/lib/test-tmpdir.mjs';

type Chosen = { dir: string | undefined; created?: boolean; reason: string };
const choose = chooseTestTmpdir as (env: NodeJS.ProcessEnv, where?: { ramDir?: string; minFreeBytes?: number }) => Chosen;
const remove = removeTestTmpdir as (chosen: Chosen) => void;

const TMPFS_MAGIC = 0x01021994;
const shmIsTmpfs = (() => {
  try {
    return fs.statfsSync('/dev/shm').type === TMPFS_MAGIC;
  } catch {
    return false;
  }
})();

let scratch: string;
beforeAll(() => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-tmpdir-test-'));
});
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

describe('the test run temp directory', () => {
  it('PG_RETEST_TEST_TMPDIR=disk keeps the system default', () => {
    expect(choose({ PG_RETEST_TEST_TMPDIR: 'disk' })).toMatchObject({ dir: undefined, reason: expect.stringContaining('disk') });
  });

  it('PG_RETEST_TEST_TMPDIR naming a directory uses it and leaves it in place', () => {
    const chosen = choose({ PG_RETEST_TEST_TMPDIR: scratch });
    expect(chosen).toMatchObject({ dir: scratch, created: false });
    remove(chosen);
    expect(fs.existsSync(scratch)).toBe(true);
  });

  it('PG_RETEST_TEST_TMPDIR naming nothing is an error saying so', () => {
    expect(() => choose({ PG_RETEST_TEST_TMPDIR: path.join(scratch, 'missing') })).toThrow(/is not a directory; create it or unset/);
  });

  it('a directory that is not a tmpfs is not used', () => {
    // The scratch directory is on the system's temp file system; under `npm test` that may itself
    // be tmpfs, so the expectation follows what it is.
    const onTmpfs = fs.statfsSync(scratch).type === TMPFS_MAGIC;
    const chosen = choose({}, { ramDir: scratch, minFreeBytes: 1 });
    if (onTmpfs) {
      expect(chosen.created).toBe(true);
      remove(chosen);
    } else {
      expect(chosen).toEqual({ dir: undefined, reason: `${scratch} is not a tmpfs: the system's temp directory` });
    }
  });

  it('a missing RAM directory falls back to the default', () => {
    expect(choose({}, { ramDir: path.join(scratch, 'no-shm') }).dir).toBeUndefined();
  });

  it.runIf(shmIsTmpfs)('a tmpfs with too little room is not used', () => {
    const chosen = choose({}, { minFreeBytes: Number.MAX_SAFE_INTEGER });
    expect(chosen.dir).toBeUndefined();
    expect(chosen.reason).toMatch(/^\/dev\/shm has \d+ MB free, under \d+ MB: the system's temp directory$/);
  });

  it.runIf(shmIsTmpfs)('on tmpfs: a directory of its own that every user may write to, removed with what is in it', () => {
    const chosen = choose({}, { minFreeBytes: 1 });
    expect(chosen.created).toBe(true);
    expect(path.dirname(chosen.dir!)).toBe('/dev/shm');
    expect(fs.statSync(chosen.dir!).mode & 0o7777).toBe(0o1777);
    fs.mkdirSync(path.join(chosen.dir!, 'data'));
    fs.writeFileSync(path.join(chosen.dir!, 'data', 'file'), 'x');
    remove(chosen);
    expect(fs.existsSync(chosen.dir!)).toBe(false);
  });
});
