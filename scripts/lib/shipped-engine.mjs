// Whether the engine committed in dist/ for this machine was built from the working tree's native
// sources: then `npm test` loads it instead of compiling a ci-profile engine of its own. The tests
// then exercise the very file that ships, and a fresh clone skips minutes of optimised compiling;
// any change under native/ changes the source hash and brings the build back.
import fs from 'node:fs';
import path from 'node:path';
import { MANIFEST_FILE, fileDigest, parseManifest } from '../../src/engine-manifest.mjs';
import { engineFile, glibcVersion, platformId } from '../../src/engine-platforms.mjs';
import { nativeSourceHash } from '../package-hash.mjs';
import { engineProblems } from './engine-check.mjs';

/**
 * The shipped engine for this machine, if it is the build of these sources.
 * @param {string} root the checkout
 * @returns {{ file: string, sourceHash: string } | { reason: string }} the engine's path, or why
 *   it cannot stand in for a build
 */
export function shippedEngine(root) {
  const dist = path.join(root, 'dist');
  const name = engineFile(platformId(process.platform, process.arch, glibcVersion()));
  const file = path.join(dist, name);
  const manifestPath = path.join(dist, MANIFEST_FILE);
  if (!fs.existsSync(file) || !fs.existsSync(manifestPath)) return { reason: `dist/ has no ${name} with its manifest` };
  const manifest = parseManifest(fs.readFileSync(manifestPath, 'utf8'), `dist/${MANIFEST_FILE}`);
  const sourceHash = nativeSourceHash(root);
  // The check verify-engines makes, without the rebuild: the sources the manifest names, and
  // this engine's digest (a file edited or swapped after packaging is not the build it vouches for).
  const [problem] = engineProblems({ manifest, sources: sourceHash, committed: new Map([[name, fileDigest(file)]]), rebuilt: new Map() });
  if (problem) return { reason: problem };
  return { file, sourceHash };
}

/**
 * Copies the shipped engine into build/, where the loader looks in a checkout, when it is the
 * build of these sources (`shippedEngine`). A temporary name and a rename: a process that has
 * the old file loaded never sees half a file.
 * @param {string} root the checkout
 * @returns {{ out: string, sourceHash: string } | { reason: string }} where it went, or why not
 */
export function installShippedEngine(root) {
  const shipped = shippedEngine(root);
  if (!('file' in shipped)) return shipped;
  const out = path.join(root, 'build', path.basename(shipped.file));
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.copyFileSync(shipped.file, `${out}.tmp`);
  fs.renameSync(`${out}.tmp`, out);
  return { out, sourceHash: shipped.sourceHash };
}
