// What makes a release build of the engine the same bytes wherever it runs (scripts/build-native.mjs
// applies it to every release build; docs/releasing.md). The toolchain is pinned elsewhere
// (rust-toolchain.toml for Rust; the C compilers are Debian 12's, see docs/releasing.md); this
// removes what depends on the machine rather than on the sources:
//
//   paths      the checkout, the target directory, CARGO_HOME (crates.io sources: panic
//              locations of dependencies) and the Rust toolchain are written as fixed names, in
//              Rust code (--remap-path-prefix) and in the C code the `cc` crate compiles for
//              libpg_query and ring (-ffile-prefix-map: __FILE__ in their error paths)
//   time       SOURCE_DATE_EPOCH, for any __DATE__ or archive timestamp
//   symbols    stripped by the release profile (Cargo.toml), one codegen unit with LTO
//
// The build id the linker writes is a hash of the output (GNU ld's default), so it is as
// reproducible as the rest. Nothing here changes what the engine does.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * A fixed time for SOURCE_DATE_EPOCH. Not the commit's: the same native sources are committed
 * at many commits, and all of them must rebuild to the engines the manifest lists.
 */
export const SOURCE_DATE_EPOCH = '1';

/**
 * The path prefixes to rewrite, most general first: rustc and GCC apply the last mapping that
 * matches, so the target directory (often inside the checkout) comes after the checkout.
 * @param {{ root: string, targetDir: string, sysroot: string, cargoHome: string }} dirs
 * @returns {[string, string][]} [from, to] pairs, each directory also under its real path
 */
export function pathMappings({ root, targetDir, sysroot, cargoHome }) {
  const named = [
    [cargoHome, '/cargo'],
    [sysroot, '/rust'],
    [root, '/pg-retest'],
    [targetDir, '/pg-retest/target'],
  ];
  return named.flatMap(([dir, to]) => {
    const real = fs.existsSync(dir) ? fs.realpathSync(dir) : dir;
    return (real === dir ? [dir] : [dir, real]).map((from) => [from, to]);
  });
}

/** A flag as one word of a shell-escaped list (CC_SHELL_ESCAPED_FLAGS). */
const shellWord = (flag) => `'${flag.replaceAll("'", "'\\''")}'`;

/**
 * The environment of a reproducible build.
 * @param {{ root: string, targetDir: string, rustTarget: string, rustflags?: string[] }} options
 *   the checkout, cargo's target directory, the Rust target triple and the flags the target
 *   needs besides (they share one variable: CARGO_ENCODED_RUSTFLAGS wins over every other)
 * @returns {Record<string, string>} variables to add to the build's environment
 */
export function reproducibleEnv({ root, targetDir, rustTarget, rustflags = [] }) {
  const sysroot = spawnSync('rustc', ['--print', 'sysroot'], { cwd: root, encoding: 'utf8' }).stdout?.trim() || '/nonexistent';
  const cargoHome = process.env.CARGO_HOME || path.join(os.homedir(), '.cargo');
  const mappings = pathMappings({ root, targetDir, sysroot, cargoHome });
  const remaps = mappings.map(([from, to]) => `--remap-path-prefix=${from}=${to}`);
  const cflags = mappings.map(([from, to]) => shellWord(`-ffile-prefix-map=${from}=${to}`)).join(' ');
  return {
    CARGO_ENCODED_RUSTFLAGS: [...rustflags, ...remaps].join('\x1f'),
    [`CFLAGS_${rustTarget.replaceAll('-', '_')}`]: cflags,
    CC_SHELL_ESCAPED_FLAGS: '1',
    SOURCE_DATE_EPOCH,
    // macOS's ar and ld64 write times unless told not to.
    ZERO_AR_DATE: '1',
  };
}
