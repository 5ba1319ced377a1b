// `npm run verify-engines`: proves that the engines dist/ carries are what the committed sources
// build. In a clean checkout of a commit (a git worktree, HEAD by default) with cargo target
// directories of its own, emptied first, it rebuilds every engine of dist/ with the reproducible
// release build (scripts/build-native.mjs) and compares:
//
//   - each rebuilt engine's SHA-256 with the one dist/engines.sha256 lists at that commit
//   - each committed engine's SHA-256 with the manifest (what `sha256sum -c` does)
//   - the manifest's native-sources hash with the hash of that commit's native sources
//
//   node scripts/verify-engines.mjs [--rev REV] [--warm] [--only linux-x64-gnu]
//
// --warm keeps the target directories of the last run (faster; the proof is the cold run),
// --only rebuilds one platform. Exits 0 when everything matches, 1 when something differs (the
// rebuilt engines stay in target/verify-engines/ to compare: cmp -l, readelf -a, diffoscope),
// 2 on a usage error. Needs what `npm run package` needs (docs/releasing.md), not node_modules.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MANIFEST_FILE, fileDigest, parseManifest } from '../src/engine-manifest.mjs';
import { ENGINE_PLATFORMS, engineFile } from '../src/engine-platforms.mjs';
import { engineProblems } from './lib/engine-check.mjs';
import { nativeSourceHash } from './package-hash.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const option = (name) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const rev = option('--rev') ?? 'HEAD';
const only = option('--only');
const platforms = ENGINE_PLATFORMS.filter((entry) => entry.dist && (only === undefined || entry.id === only));
if (platforms.length === 0) {
  console.error(
    `verify-engines: --only needs one of ${ENGINE_PLATFORMS.filter((entry) => entry.dist)
      .map((entry) => entry.id)
      .join(', ')}`,
  );
  process.exit(2);
}

const worktree = path.join(root, 'target', 'verify-worktree');
const cargoTarget = path.join(root, 'target', 'verify-target');
const rebuilt = path.join(root, 'target', 'verify-engines');

function git(...args) {
  const run = spawnSync('git', args, { cwd: root, encoding: 'utf8' });
  if (run.status !== 0) {
    console.error(`verify-engines: git ${args.join(' ')} failed: ${run.stderr.trim()}`);
    process.exit(1);
  }
  return run.stdout.trim();
}

const seconds = (since) => `${((Date.now() - since) / 1000).toFixed(0)} s`;
let problems = [];

fs.rmSync(worktree, { recursive: true, force: true });
git('worktree', 'prune');
git('worktree', 'add', '--detach', '--quiet', worktree, rev);
try {
  const commit = git('-C', worktree, 'rev-parse', '--short=12', 'HEAD');
  const manifest = parseManifest(fs.readFileSync(path.join(worktree, 'dist', MANIFEST_FILE), 'utf8'), `dist/${MANIFEST_FILE}`);
  const sources = nativeSourceHash(worktree);
  console.log(`verify-engines: ${rev} (${commit}), native sources ${sources.slice(0, 12)}`);
  if (!argv.includes('--warm')) fs.rmSync(cargoTarget, { recursive: true, force: true });
  fs.rmSync(rebuilt, { recursive: true, force: true });
  const env = { ...process.env, CARGO_TARGET_DIR: cargoTarget, PG_RETEST_CROSS_TARGET_DIR: path.join(cargoTarget, 'cross') };
  const committed = new Map();
  const digests = new Map();
  const started = Date.now();
  for (const platform of platforms) {
    const file = engineFile(platform.id);
    committed.set(file, fileDigest(path.join(worktree, 'dist', file)));
    const since = Date.now();
    const args = [path.join(worktree, 'scripts', 'build-native.mjs'), '--target', platform.id, '--out', rebuilt];
    const build = spawnSync(process.execPath, args, { cwd: worktree, stdio: 'inherit', env });
    const actual = build.status === 0 ? fileDigest(path.join(rebuilt, file)) : undefined;
    digests.set(file, actual);
    const verdict = actual === manifest.digests.get(file) ? 'matches the manifest' : 'DIFFERS from the manifest';
    console.log(
      `verify-engines: ${platform.id} rebuilt in ${seconds(since)}: ${actual === undefined ? 'build FAILED' : `sha256 ${actual} ${verdict}`}`,
    );
  }
  console.log(`verify-engines: ${platforms.length} engine(s) rebuilt in ${seconds(started)}`);
  problems = engineProblems({ manifest, sources, committed, rebuilt: digests });
} finally {
  fs.rmSync(worktree, { recursive: true, force: true });
  spawnSync('git', ['worktree', 'prune'], { cwd: root });
}

for (const problem of problems) console.error(`verify-engines: ${problem}`);
if (problems.length > 0)
  console.error('verify-engines: the rebuilt engines are in target/verify-engines/ (compare with cmp -l, readelf -a or diffoscope)');
console.log(
  problems.length === 0
    ? 'verify-engines: the engines in dist/ are the reproducible build of the sources'
    : `verify-engines: ${problems.length} problem(s)`,
);
process.exit(problems.length === 0 ? 0 : 1);
