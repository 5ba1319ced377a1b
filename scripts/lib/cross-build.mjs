// How scripts/build-native.mjs cross-builds the engine on a Linux x64 (glibc) machine for the
// other Linux platforms: Debian's Rust (rustc-web, cargo-web: 1.96) compiles the standard library
// for the target from its sources (rust-web-src, `-Zbuild-std`), because rustup's prebuilt
// targets come from a download server that not every machine reaches; the C parts (libpg_query,
// ring) go through the target's C compiler, and bindgen reads the target's C headers.
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

/** Debian's toolchain, by absolute path: rustup's proxies come first on most PATHs. */
const CARGO = '/usr/bin/cargo';
const RUSTC = '/usr/bin/rustc';

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
 * @returns {{ command: string, args: string[], env: NodeJS.ProcessEnv, output: string } | { error: string }}
 */
export function crossBuild({ root, targetDir, platform, profile, profileDir }) {
  const prepared = spawnSync(path.join(root, 'scripts', 'prepare-cross.sh'), [], { stdio: 'inherit' });
  if (prepared.status !== 0) return { error: `scripts/prepare-cross.sh failed; ${platform.id} needs its packages` };
  const version = spawnSync(RUSTC, ['-vV'], { encoding: 'utf8' });
  if (version.status !== 0 || !/^release: 1\.(\d+)/m.test(version.stdout)) return { error: `${RUSTC} does not run; reinstall rustc-web` };
  // Its own target directory: another compiler's artifacts beside rustup's would rebuild each other.
  const crossDir = process.env.PG_RETEST_CROSS_TARGET_DIR || path.join(targetDir, 'cross');
  fs.mkdirSync(crossDir, { recursive: true });
  const extra = {};
  if (platform.rustTarget === 'x86_64-unknown-linux-musl') {
    const libgcc = spawnSync('gcc', ['-print-file-name=libgcc_s.so.1'], { encoding: 'utf8' }).stdout?.trim();
    if (!libgcc || !fs.existsSync(libgcc)) return { error: 'gcc does not know where libgcc_s.so.1 is; install gcc' };
    const linkDir = path.join(crossDir, 'musl-link');
    fs.mkdirSync(linkDir, { recursive: true });
    fs.rmSync(path.join(linkDir, 'libgcc_s.so.1'), { force: true });
    fs.symlinkSync(fs.realpathSync(libgcc), path.join(linkDir, 'libgcc_s.so.1'));
    extra.CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS = `-C target-feature=-crt-static -C link-arg=-L${linkDir}`;
  }
  return {
    command: CARGO,
    args: ['build', '-p', 'pg-retest-node', '--profile', profile, '--target', platform.rustTarget, '-Zbuild-std'],
    env: {
      ...process.env,
      ...TARGET_ENV[/** @type {keyof typeof TARGET_ENV} */ (platform.rustTarget)],
      ...extra,
      RUSTC,
      // -Zbuild-std is unstable: allowed on a stable toolchain by this switch.
      RUSTC_BOOTSTRAP: '1',
      CARGO_TARGET_DIR: crossDir,
    },
    output: path.join(crossDir, platform.rustTarget, profileDir, platform.library),
  };
}
