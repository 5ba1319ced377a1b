// `npm run build`'s engine step: build/engine.<platform>.node for this machine, taken from dist/
// when dist/ holds the release engine of exactly these native sources (scripts/lib/shipped-engine.mjs:
// the manifest's source hash and the file's digest). A release build is reproducible, so building
// it again would give the same bytes after minutes of compiling (about 12 on 2 cores); after any
// change under native/, or with --rebuild, it builds (scripts/build-native.mjs, release profile).
//
//   node scripts/ensure-engine.mjs             the shipped engine, or a release build
//   node scripts/ensure-engine.mjs --rebuild   a release build in any case
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { installShippedEngine } from './lib/shipped-engine.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const shipped = process.argv.includes('--rebuild') ? { reason: '--rebuild' } : installShippedEngine(root);
if ('out' in shipped) {
  console.error(
    `ensure-engine: ${path.relative(root, shipped.out)} is dist/'s engine, the reproducible release build of these sources (native-sources ${shipped.sourceHash.slice(0, 12)}); --rebuild builds it anyway`,
  );
} else {
  console.error(`ensure-engine: building the engine (${shipped.reason})`);
  const build = spawnSync(process.execPath, [path.join(root, 'scripts', 'build-native.mjs')], { stdio: 'inherit' });
  process.exit(build.status ?? 1);
}
