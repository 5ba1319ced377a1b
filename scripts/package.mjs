// `npm run package`: builds the action's committed dist/: the bundles (esbuild, ESM), the
// prebuilt engines and their manifest.
//
//   dist/index.js                    the main step (src/action/index.ts)
//   dist/post.js                     the post step (src/action/post.ts)
//   dist/pg-supervisor.js            the throwaway server's supervisor process
//   dist/engine.<platform>.node      the engines, reproducible release builds (build-native.mjs):
//                                    linux-x64-gnu built here, linux-arm64-gnu and linux-x64-musl
//                                    cross-built (--target; src/engine-platforms.mjs)
//   dist/engines.sha256              their SHA-256 digests and the hash of the native sources
//                                    (src/engine-manifest.mjs), which the action checks before
//                                    loading an engine and CI checks by rebuilding
//
//   node scripts/package.mjs                   everything, into dist/
//   node scripts/package.mjs --js-only --out D only the bundles, into D (the check-dist test)
//   node scripts/package.mjs --from REV        everything, built in a clean checkout of REV (a
//                                              temporary git worktree) and copied into dist/: what
//                                              to commit when this working tree has changes that
//                                              are not part of REV
//
// The bundles and the engines are deterministic: the same sources, lockfiles and toolchain give
// the same bytes, so the tests rebuild the bundles and compare, and `npm run verify-engines`
// (CI: check-dist.yml) rebuilds the engines and compares their digests with the manifest.
// Runs on Linux x64 (glibc): the machine that builds its own engine and cross-builds the others.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { MANIFEST_FILE, fileDigest, formatManifest } from '../src/engine-manifest.mjs';
import { ENGINE_PLATFORMS, engineFile, enginePlatform, glibcVersion } from '../src/engine-platforms.mjs';
import { nativeSourceHash } from './package-hash.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const jsOnly = argv.includes('--js-only');
const outIndex = argv.indexOf('--out');
const out = path.resolve(outIndex >= 0 ? argv[outIndex + 1] : path.join(root, 'dist'));
/** The engines dist/ carries; the first is this machine's. */
const DIST_ENGINES = ENGINE_PLATFORMS.filter((entry) => entry.dist);

function fail(message) {
  console.error(`package: ${message}`);
  process.exit(1);
}

const fromIndex = argv.indexOf('--from');
if (fromIndex >= 0) {
  packageFrom(argv[fromIndex + 1]);
  process.exit(0);
}

/**
 * Builds dist/ in a clean worktree of `rev` and copies it here. node_modules is hard-linked in
 * (a symlink would change the paths the bundles record); cargo gets target directories of its
 * own under target/, kept between runs (the build's paths are the same each time, so it is
 * warm from the second run on).
 */
function packageFrom(rev) {
  if (!rev) fail('--from needs a revision, e.g. --from HEAD');
  const run = (command, args, options = {}) => {
    const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', ...options });
    if (result.status !== 0) fail(`${command} ${args.join(' ')} failed`);
  };
  const worktree = path.join(root, 'target', 'package-worktree');
  const cargoTarget = path.join(root, 'target', 'package-target');
  fs.rmSync(worktree, { recursive: true, force: true });
  run('git', ['worktree', 'prune']);
  run('git', ['worktree', 'add', '--detach', '--quiet', worktree, rev]);
  try {
    run('cp', ['-al', path.join(root, 'node_modules'), path.join(worktree, 'node_modules')]);
    const env = { ...process.env, CARGO_TARGET_DIR: cargoTarget, PG_RETEST_CROSS_TARGET_DIR: path.join(cargoTarget, 'cross') };
    run(process.execPath, [path.join(worktree, 'scripts', 'package.mjs')], { cwd: worktree, env });
    const engines = DIST_ENGINES.map((entry) => engineFile(entry.id));
    for (const file of ['index.js', 'post.js', 'pg-supervisor.js', ...engines, MANIFEST_FILE])
      replaceFile(path.join(worktree, 'dist', file), path.join(out, file));
    console.error(`package: dist/ built from ${rev} and copied to ${path.relative(process.cwd(), out) || '.'}`);
  } finally {
    fs.rmSync(worktree, { recursive: true, force: true });
    spawnSync('git', ['worktree', 'prune'], { cwd: root });
  }
}

/** Options shared with `npm run build:cli`, so that dist/pg-supervisor.js is the same file from both. */
const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  external: ['pg-native'],
  logLevel: 'warning',
  absWorkingDir: root,
  // Bundled CommonJS dependencies call require(); in an ES module it must be made.
  banner: {
    js: "import { createRequire as __pgRetestCreateRequire } from 'node:module'; const require = __pgRetestCreateRequire(import.meta.url);",
  },
};

fs.mkdirSync(out, { recursive: true });
// The action's engine search (src/engine/native.ts): its own directory only, checked against the manifest.
await build({
  ...common,
  define: { PG_RETEST_BUNDLE: '"action"' },
  entryPoints: { index: 'src/action/index.ts', post: 'src/action/post.ts' },
  outdir: out,
});
await build({ ...common, entryPoints: { 'pg-supervisor': 'src/provision/pg-supervisor.mjs' }, outdir: out });
console.error(`package: bundles in ${path.relative(process.cwd(), out) || '.'}`);

if (!jsOnly) {
  const host = enginePlatform(process.platform, process.arch, glibcVersion());
  if (host?.id !== DIST_ENGINES[0]?.id)
    fail(
      `the engines are packaged on ${DIST_ENGINES[0]?.label}, which cross-builds the others; this is ${process.platform}-${process.arch}`,
    );
  const expected = nativeSourceHash();
  for (const platform of DIST_ENGINES) {
    const args = [path.join(root, 'scripts', 'build-native.mjs'), ...(platform.id === host.id ? [] : ['--target', platform.id])];
    const built = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
    if (built.status !== 0) fail(`the native build for ${platform.id} failed`);
  }
  // Sources edited while cargo ran would give engines that match neither state.
  const hostEngine = path.join(root, 'build', engineFile(host.id));
  if (createRequire(import.meta.url)(hostEngine).nativeSourceHash() !== expected || nativeSourceHash() !== expected) {
    fail('the native sources changed during the build; run npm run package again');
  }
  const engines = DIST_ENGINES.map((platform) => {
    const file = engineFile(platform.id);
    replaceFile(path.join(root, 'build', file), path.join(out, file));
    return { file, sha256: fileDigest(path.join(out, file)) };
  });
  fs.writeFileSync(path.join(out, MANIFEST_FILE), formatManifest({ sourceHash: expected, builtWith: builtWith(), engines }));
  for (const { file, sha256 } of engines) console.error(`package: ${path.relative(process.cwd(), path.join(out, file))} sha256 ${sha256}`);
  console.error(`package: ${path.relative(process.cwd(), path.join(out, MANIFEST_FILE))} (sources ${expected.slice(0, 12)})`);
}

/** The toolchain, for people reading the manifest: rustc's version and the machine's system. */
function builtWith() {
  const rustc = spawnSync('rustc', ['-V'], { cwd: root, encoding: 'utf8' }).stdout?.trim() || 'rustc (unknown)';
  const release = fs.existsSync('/etc/os-release')
    ? /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(fs.readFileSync('/etc/os-release', 'utf8'))?.[1]
    : undefined;
  return `${rustc}, ${release ?? `${os.type()} ${os.release()}`}`;
}

/**
 * Copies to a temporary name, then renames: a process that has the old engine loaded (a test,
 * a CLI run) keeps its mapping, where copying over the file in place would crash it (SIGBUS).
 */
function replaceFile(from, to) {
  fs.copyFileSync(from, `${to}.tmp`);
  fs.renameSync(`${to}.tmp`, to);
}
