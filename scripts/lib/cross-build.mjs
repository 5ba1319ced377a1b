// How scripts/build-native.mjs cross-builds the engine on a Linux x64 (glibc) machine for the
// other Linux platforms dist/ carries. Rust is the pinned toolchain (rust-toolchain.toml), whose
// prebuilt standard library for each target rustup adds; the C parts (libpg_query, ring) go
// through the target's C compiler, and bindgen reads the target's C headers.
// scripts/prepare-cross.sh installs all of it.
//
//   linux-arm64-gnu   gcc-aarch64-linux-gnu, glibc headers and libraries in /usr/aarch64-linux-gnu
//                     (clang finds them there itself for bindgen's --target=aarch64-…)
//   linux-x64-musl    musl-gcc and musl's headers (/usr/include/x86_64-linux-musl); linked
//                     dynamically against musl (`-crt-static`: a cdylib cannot be static), as
//                     napi-rs's musl builds are, needing musl's libc and libgcc_s (the unwinder,
//                     Alpine's package libgcc) at run time. Debian has no musl build of libgcc_s
//                     to link against, so the link sees the machine's own through a directory
//                     that holds nothing else (not glibc's libc beside it): the library records
//                     only the name libgcc_s.so.1 and GCC_* symbol versions, which Alpine's has too
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** The C toolchain and bindgen's view of the headers, per Rust target. */
const TARGET_ENV = {
  'aarch64-unknown-linux-gnu': {
    CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER: 'aarch64-linux-gnu-gcc',
    CC_aarch64_unknown_linux_gnu: 'aarch64-linux-gnu-gcc',
    AR_aarch64_unknown_linux_gnu: 'aarch64-linux-gnu-ar',
  },
  'x86_64-unknown-linux-musl': {
    CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_LINKER: 'musl-gcc',
    CC_x86_64_unknown_linux_musl: 'musl-gcc',
    AR_x86_64_unknown_linux_musl: 'ar',
    // musl's headers instead of the machine's glibc ones; clang's own (stddef.h, …) stay.
    BINDGEN_EXTRA_CLANG_ARGS_x86_64_unknown_linux_musl: '-nostdlibinc -isystem /usr/include/x86_64-linux-musl',
  },
};

/**
 * Whether this machine can cross-build for a platform.
 * @param {{ rustTarget: string }} platform
 */
export function canCrossBuild(platform) {
  return process.platform === 'linux' && process.arch === 'x64' && platform.rustTarget in TARGET_ENV;
}

/**
 * Installs what is missing (scripts/prepare-cross.sh), then gives the cargo command that builds
 * the binding for `platform` and where the library lands.
 * @param {{ root: string, targetDir: string, platform: { id: string, rustTarget: string, library: string }, profile: string, profileDir: string }} options
 * @returns {{ args: string[], env: Record<string, string>, rustflags: string[], targetDir: string, output: string } | { error: string }}
 *   cargo's arguments, the variables to add, the target's own rustflags, cargo's target directory
 */
export function crossBuild({ root, targetDir, platform, profile, profileDir }) {
  const prepared = spawnSync(path.join(root, 'scripts', 'prepare-cross.sh'), [], { cwd: root, stdio: 'inherit' });
  if (prepared.status !== 0) return { error: `scripts/prepare-cross.sh failed; ${platform.id} needs its packages` };
  // A directory of its own: build scripts compiled for a cross build (without the host build's
  // rustflags) and for the host build would otherwise rebuild each other in target/release.
  const crossDir = process.env.PG_RETEST_CROSS_TARGET_DIR || path.join(targetDir, 'cross');
  fs.mkdirSync(crossDir, { recursive: true });
  const rustflags = [];
  if (platform.rustTarget === 'x86_64-unknown-linux-musl') {
    const libgcc = spawnSync('gcc', ['-print-file-name=libgcc_s.so.1'], { encoding: 'utf8' }).stdout?.trim();
    if (!libgcc || !fs.existsSync(libgcc)) return { error: 'gcc does not know where libgcc_s.so.1 is; install gcc' };
    const linkDir = path.join(crossDir, 'musl-link');
    fs.mkdirSync(linkDir, { recursive: true });
    fs.rmSync(path.join(linkDir, 'libgcc_s.so.1'), { force: true });
    fs.symlinkSync(fs.realpathSync(libgcc), path.join(linkDir, 'libgcc_s.so.1'));
    rustflags.push('-C', 'target-feature=-crt-static', '-C', `link-arg=-L${linkDir}`);
  }
  return {
    args: ['build', '-p', 'pg-retest-node', '--profile', profile, '--target', platform.rustTarget],
    env: { ...TARGET_ENV[/** @type {keyof typeof TARGET_ENV} */ (platform.rustTarget)], CARGO_TARGET_DIR: crossDir },
    rustflags,
    targetDir: crossDir,
    output: path.join(crossDir, platform.rustTarget, profileDir, platform.library),
  };
}
