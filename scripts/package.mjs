// `npm run package`: builds the action's committed dist/: the bundles (esbuild, ESM) and the
// prebuilt engine.
//
//   dist/index.js                    the main step (src/action/index.ts)
//   dist/post.js                     the post step (src/action/post.ts)
//   dist/pg-supervisor.js            the throwaway server's supervisor process
//   dist/engine.linux-x64-gnu.node   the engine, release build, symbols stripped (Cargo profile)
//
//   node scripts/package.mjs                   everything, into dist/
//   node scripts/package.mjs --js-only --out D only the bundles, into D (the check-dist test)
//   node scripts/package.mjs --from REV        everything, built in a clean checkout of REV (a
//                                              temporary git worktree) and copied into dist/: what
//                                              to commit when this working tree has changes that
//                                              are not part of REV
//
// The bundles are deterministic (same sources and lockfile → same bytes), so a test rebuilds
// them and compares. The engine is not guaranteed to rebuild byte for byte (toolchain, machine); it carries the hash of the
// native sources it was built from (native/node/build.rs), which the test compares instead.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { nativeSourceHash } from './package-hash.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const jsOnly = argv.includes('--js-only');
const outIndex = argv.indexOf('--out');
const out = path.resolve(outIndex >= 0 ? argv[outIndex + 1] : path.join(root, 'dist'));
const ENGINE = 'engine.linux-x64-gnu.node';

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
 * (a symlink would change the paths the bundles record); cargo gets a target directory of its
 * own under target/, seeded once from target/release so that only the two crates rebuild.
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
    if (!fs.existsSync(path.join(cargoTarget, 'release')) && fs.existsSync(path.join(root, 'target', 'release'))) {
      fs.mkdirSync(cargoTarget, { recursive: true });
      run('cp', ['-a', path.join(root, 'target', 'release'), path.join(cargoTarget, 'release')]);
    }
    run(process.execPath, [path.join(worktree, 'scripts', 'package.mjs')], { cwd: worktree, env: { ...process.env, CARGO_TARGET_DIR: cargoTarget } });
    for (const file of ['index.js', 'post.js', 'pg-supervisor.js', ENGINE]) replaceFile(path.join(worktree, 'dist', file), path.join(out, file));
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
  banner: { js: "import { createRequire as __pgRetestCreateRequire } from 'node:module'; const require = __pgRetestCreateRequire(import.meta.url);" },
};

fs.mkdirSync(out, { recursive: true });
await build({ ...common, entryPoints: { index: 'src/action/index.ts', post: 'src/action/post.ts' }, outdir: out });
await build({ ...common, entryPoints: { 'pg-supervisor': 'src/provision/pg-supervisor.mjs' }, outdir: out });
console.error(`package: bundles in ${path.relative(process.cwd(), out) || '.'}`);

if (!jsOnly) {
  const expected = nativeSourceHash();
  const built = spawnSync(process.execPath, [path.join(root, 'scripts', 'build-native.mjs')], { cwd: root, stdio: 'inherit' });
  if (built.status !== 0) fail('the native build failed');
  const engine = path.join(root, 'build', ENGINE);
  const carried = createRequire(import.meta.url)(engine).nativeSourceHash();
  // Sources edited while cargo ran would give a binary that matches neither state.
  if (carried !== expected || nativeSourceHash() !== expected) fail('the native sources changed during the build; run npm run package again');
  replaceFile(engine, path.join(out, ENGINE));
  console.error(`package: ${path.relative(process.cwd(), path.join(out, ENGINE))} (sources ${expected.slice(0, 12)})`);
}

/**
 * Copies to a temporary name, then renames: a process that has the old engine loaded (a test,
 * a CLI run) keeps its mapping, where copying over the file in place would crash it (SIGBUS).
 */
function replaceFile(from, to) {
  fs.copyFileSync(from, `${to}.tmp`);
  fs.renameSync(`${to}.tmp`, to);
}
