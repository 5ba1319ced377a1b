// Builds the napi-rs binding (native/node) and puts it where the TypeScript
// loader looks for it: build/engine.<platform>.node.
//
// Plain `cargo build` rather than `napi build`: the loader (src/engine/native.ts)
// only needs the cdylib under the right name, and cargo's own output and exit
// status are then all there is to read when the build breaks.
//
//   node scripts/build-native.mjs                release build for this machine (what dist/ ships)
//   node scripts/build-native.mjs --debug        faster debug build for local work
//   node scripts/build-native.mjs --profile ci   the test suite's build: optimised, no LTO
//   node scripts/build-native.mjs --target linux-arm64-gnu   a cross build, from Linux x64 (glibc):
//                                                linux-arm64-gnu or linux-x64-musl (scripts/lib/cross-build.mjs)
//   node scripts/build-native.mjs --out DIR      the engine into DIR instead of build/
//
// A release build is reproducible: the same sources give the same bytes from any checkout
// directory, target directory or home (scripts/lib/reproducible-build.mjs), with the Rust that
// rust-toolchain.toml pins. The other profiles are for local work and the tests, and keep
// cargo's cache of the test suite's builds (different rustflags would rebuild everything).
//
// Platforms: src/engine-platforms.mjs. darwin-arm64 builds on a Mac, linux-x64-musl also on
// Alpine itself.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENGINE_PLATFORMS, engineFile, enginePlatform, glibcVersion, platformId } from '../src/engine-platforms.mjs';
import { canCrossBuild, crossBuild } from './lib/cross-build.mjs';
import { reproducibleEnv } from './lib/reproducible-build.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const option = (name) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const debug = argv.includes('--debug');
/** Cargo's profile, and the directory under target/ it builds into. */
const profile = debug ? 'dev' : (option('--profile') ?? 'release');
if (!profile || !/^[a-z][a-z0-9_-]*$/.test(profile)) {
  console.error('build-native: --profile needs a cargo profile name (e.g. ci)');
  process.exit(2);
}
const profileDir = profile === 'dev' ? 'debug' : profile;

function fail(message) {
  console.error(`build-native: ${message}`);
  process.exit(1);
}

const hostId = platformId(process.platform, process.arch, glibcVersion());
const host = enginePlatform(process.platform, process.arch, glibcVersion());
const wanted = option('--target') ?? hostId;
const target = ENGINE_PLATFORMS.find((entry) => entry.id === wanted);
const ids = ENGINE_PLATFORMS.map((entry) => entry.id).join(', ');
if (!target) fail(`there is no engine platform ${wanted}; there are ${ids}`);
const native = host?.id === target.id;
if (!native && !canCrossBuild(target)) {
  fail(
    `cannot build ${target.id} on ${hostId}: build it on a ${target.label} machine (linux-x64-gnu cross-builds linux-arm64-gnu and linux-x64-musl)`,
  );
}

const metadata = spawnSync('cargo', ['metadata', '--format-version', '1', '--no-deps'], {
  cwd: root,
  encoding: 'utf8',
  maxBuffer: 64 * 1024 * 1024,
});
if (metadata.error) fail(`cannot run cargo (${metadata.error.message}); install Rust (rustup) first`);
if (metadata.status !== 0) fail(`cargo metadata failed:\n${metadata.stderr}`);
const targetDir = JSON.parse(metadata.stdout).target_directory;

const plan = native
  ? {
      args: ['build', '-p', 'pg-retest-node', '--profile', profile],
      env: {},
      // On musl a cdylib must link the C library dynamically (the target's default is static).
      rustflags: target.libc === 'musl' ? ['-C', 'target-feature=-crt-static'] : [],
      targetDir,
      output: path.join(targetDir, profileDir, target.library),
    }
  : crossBuild({ root, targetDir, platform: target, profile, profileDir });
if ('error' in plan) fail(plan.error);
const flags =
  profile === 'release'
    ? reproducibleEnv({ root, targetDir: plan.targetDir, rustTarget: target.rustTarget, rustflags: plan.rustflags })
    : plan.rustflags.length > 0
      ? { CARGO_ENCODED_RUSTFLAGS: plan.rustflags.join('\x1f') }
      : {};
const env = { ...process.env, ...plan.env, ...flags };
console.error(`build-native: cargo ${plan.args.join(' ')}${profile === 'release' ? ' (reproducible)' : ''}`);
const build = spawnSync('cargo', plan.args, { cwd: root, stdio: 'inherit', env });
if (build.status !== 0) fail(`cargo build failed (${build.status ?? build.signal})`);

const built = plan.output;
if (!fs.existsSync(built)) fail(`cargo succeeded but ${built} does not exist`);
const out = path.resolve(root, option('--out') ?? 'build', engineFile(target.id));
fs.mkdirSync(path.dirname(out), { recursive: true });
// Copy to a temporary name and rename, so that a process that has the old
// file loaded never sees a half-written one.
fs.copyFileSync(built, `${out}.tmp`);
fs.renameSync(`${out}.tmp`, out);
console.error(`build-native: ${path.relative(root, out)} (${target.id}, ${profile})`);
