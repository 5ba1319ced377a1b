// The hash of the native sources a built engine carries (`nativeSourceHash()`), computed the
// same way as native/node/build.rs does when it builds: every file of the inputs below, in
// sorted path order, each as `path \0 length \0 bytes`, through SHA-256. Keep the two lists
// and the encoding in step; the check-dist test compares the engine in dist/ with this.
//
//   node scripts/package-hash.mjs        prints the hash of the working tree's sources
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Files, or directories taken whole, relative to the repository root (as in build.rs). */
export const NATIVE_INPUTS = [
  'Cargo.toml',
  'Cargo.lock',
  'native/core/Cargo.toml',
  'native/core/src',
  'native/node/Cargo.toml',
  'native/node/build.rs',
  'native/node/src',
  'rust-toolchain.toml',
];

function collect(relative, out) {
  const absolute = path.join(root, relative);
  if (fs.statSync(absolute).isDirectory()) {
    for (const name of fs.readdirSync(absolute).sort()) collect(`${relative}/${name}`, out);
  } else {
    out.push(relative);
  }
}

/**
 * SHA-256 of the native sources in the working tree.
 * @returns 64 hex digits
 */
export function nativeSourceHash() {
  const files = [];
  for (const input of NATIVE_INPUTS) collect(input, files);
  // build.rs sorts by the UTF-8 bytes of the path; so does this for ASCII paths.
  files.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const hash = crypto.createHash('sha256');
  for (const file of files) {
    const bytes = fs.readFileSync(path.join(root, file));
    hash.update(file).update('\0').update(String(bytes.length)).update('\0').update(bytes);
  }
  return hash.digest('hex');
}

/**
 * Whether an engine file carries a source hash, found in its bytes: for engines of another
 * platform, which this machine cannot load to ask (`nativeSourceHash()`). The hash is stored as
 * its 64 hex digits (build.rs passes it to the library as a string constant).
 * @param {string} file an engine
 * @param {string} hash 64 hex digits
 */
export function carriesHash(file, hash) {
  return /^[0-9a-f]{64}$/.test(hash) && fs.readFileSync(file).includes(Buffer.from(hash, 'ascii'));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(nativeSourceHash());
}
