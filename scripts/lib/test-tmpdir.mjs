// The temp directory a test run works in. The suite's PostgreSQL servers (the shared one, the
// ones test files and the action under test start) live under the temp directory, and most of
// their CPU goes to the file system: every CREATE DATABASE opens about 1,200 files, initdb
// writes a thousand. On this project's CI machine (ext4 on a virtual disk) one CREATE DATABASE
// from template1 costs ~190 ms of system CPU, on tmpfs ~30 ms; the suite creates thousands of
// databases. So when a RAM-backed file system with room to spare is there, the run's temp
// directory goes on it (docs/testing.md, "How long"). It is removed when the run ends.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Where Linux keeps a tmpfs every user may write to. */
const RAM_DIR = '/dev/shm';
/**
 * The free space the run needs there: a whole run peaks at about 1.5 GB; a container's default
 * /dev/shm (64 MB) is too small, and then the disk is used.
 */
const MIN_FREE_BYTES = 2 * 1024 ** 3;
/** statfs f_type of tmpfs. */
const TMPFS_MAGIC = 0x01021994;

/**
 * Chooses the run's temp directory.
 * @param {NodeJS.ProcessEnv} env the run's environment: `PG_RETEST_TEST_TMPDIR` names a directory to
 *   use instead (`disk` keeps the system's default)
 * @param {{ ramDir?: string, minFreeBytes?: number }} [where] for tests of this function
 * @returns {{ dir: string, created: boolean, reason: string } | { dir: undefined, reason: string }}
 *   `created`: made for this run, to be removed with `removeTestTmpdir`
 */
export function chooseTestTmpdir(env, { ramDir = RAM_DIR, minFreeBytes = MIN_FREE_BYTES } = {}) {
  const asked = env.PG_RETEST_TEST_TMPDIR;
  if (asked === 'disk') return { dir: undefined, reason: `PG_RETEST_TEST_TMPDIR=disk: the system's temp directory (${os.tmpdir()})` };
  if (asked) {
    if (!fs.statSync(asked, { throwIfNoEntry: false })?.isDirectory()) {
      throw new Error(`PG_RETEST_TEST_TMPDIR=${asked} is not a directory; create it or unset the variable`);
    }
    return { dir: path.resolve(asked), created: false, reason: `PG_RETEST_TEST_TMPDIR=${asked}` };
  }
  let stats;
  try {
    stats = fs.statfsSync(ramDir);
    fs.accessSync(ramDir, fs.constants.W_OK | fs.constants.X_OK);
  } catch {
    return { dir: undefined, reason: `no writable ${ramDir}: the system's temp directory (${os.tmpdir()})` };
  }
  if (stats.type !== TMPFS_MAGIC) return { dir: undefined, reason: `${ramDir} is not a tmpfs: the system's temp directory` };
  const free = stats.bavail * stats.bsize;
  if (free < minFreeBytes) {
    return {
      dir: undefined,
      reason: `${ramDir} has ${Math.floor(free / 1024 ** 2)} MB free, under ${Math.ceil(minFreeBytes / 1024 ** 2)} MB: the system's temp directory`,
    };
  }
  const dir = fs.mkdtempSync(path.join(ramDir, 'pg-retest-test-'));
  // Like /tmp: every user may create entries (the servers run as the postgres OS user when the
  // suite runs as root), the sticky bit keeps them from removing each other's.
  fs.chmodSync(dir, 0o1777);
  return { dir, created: true, reason: `tmpfs ${dir} (${Math.floor(free / 1024 ** 3)} GiB free)` };
}

/**
 * Removes a directory `chooseTestTmpdir` created, whatever the run left in it.
 * @param {ReturnType<typeof chooseTestTmpdir>} chosen
 */
export function removeTestTmpdir(chosen) {
  if (chosen.dir && chosen.created) fs.rmSync(chosen.dir, { recursive: true, force: true });
}
