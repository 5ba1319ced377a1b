// Builds the napi-rs binding (native/node) and puts it where the TypeScript
// loader looks for it: build/engine.<platform>.node.
//
// Plain `cargo build` rather than `napi build`: the loader (src/native.ts)
// only needs the cdylib under the right name, and cargo's own output and exit
// status are then all there is to read when the build breaks.
//
//   node scripts/build-native.mjs                release build (what dist/ ships)
//   node scripts/build-native.mjs --debug        faster debug build for local work
//   node scripts/build-native.mjs --profile ci   the test suite's build: optimised, no LTO
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const debug = process.argv.includes('--debug');
const profileAt = process.argv.indexOf('--profile');
/** Cargo's profile, and the directory under target/ it builds into. */
const profile = debug ? 'dev' : profileAt > 0 ? process.argv[profileAt + 1] : 'release';
if (!profile || !/^[a-z][a-z0-9_-]*$/.test(profile)) {
  console.error('build-native: --profile needs a cargo profile name (e.g. ci)');
  process.exit(2);
}
const profileDir = profile === 'dev' ? 'debug' : profile;

/** Platforms we build for: Node's platform/arch → napi-rs target triple suffix and library file name. */
function platformTarget() {
  const { platform, arch } = process;
  if (platform === 'linux' && arch === 'x64') {
    // glibcVersionRuntime is absent on musl (Alpine), whose cdylib would be a different target.
    const glibc = process.report?.getReport?.().header?.glibcVersionRuntime;
    if (!glibc) return { error: 'linux x64 without glibc (musl?) is not supported; only linux-x64-gnu is' };
    return { triple: 'linux-x64-gnu', library: 'libpg_retest_node.so' };
  }
  return { error: `${platform}-${arch} is not supported; the engine is built for linux-x64-gnu only` };
}

function fail(message) {
  console.error(`build-native: ${message}`);
  process.exit(1);
}

const target = platformTarget();
if (target.error) fail(target.error);

const metadata = spawnSync('cargo', ['metadata', '--format-version', '1', '--no-deps'], {
  cwd: root,
  encoding: 'utf8',
  maxBuffer: 64 * 1024 * 1024,
});
if (metadata.error) fail(`cannot run cargo (${metadata.error.message}); install Rust (rustup) first`);
if (metadata.status !== 0) fail(`cargo metadata failed:\n${metadata.stderr}`);
const targetDir = JSON.parse(metadata.stdout).target_directory;

const args = ['build', '-p', 'pg-retest-node', '--profile', profile];
console.error(`build-native: cargo ${args.join(' ')}`);
const build = spawnSync('cargo', args, { cwd: root, stdio: 'inherit' });
if (build.status !== 0) fail(`cargo build failed (${build.status ?? build.signal})`);

const built = path.join(targetDir, profileDir, target.library);
if (!fs.existsSync(built)) fail(`cargo succeeded but ${built} does not exist`);
const out = path.join(root, 'build', `engine.${target.triple}.node`);
fs.mkdirSync(path.dirname(out), { recursive: true });
// Copy to a temporary name and rename, so that a process that has the old
// file loaded never sees a half-written one.
fs.copyFileSync(built, `${out}.tmp`);
fs.renameSync(`${out}.tmp`, out);
console.error(`build-native: ${path.relative(root, out)} (${profile})`);
