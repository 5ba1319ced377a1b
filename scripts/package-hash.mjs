// The hash of the native sources a built engine carries (`nativeSourceHash()`), computed the
// same way as native/node/build.rs does when it builds: every file of the inputs below, in
// sorted path order, each as `path \0 length \0 bytes`, through SHA-256. Keep the two lists
// and the encoding in step. dist/engines.sha256 records it (the sources its engines were
// built from); test/action-dist.test.ts compares that with this.
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
  'native/wkl/Cargo.toml',
  'native/wkl/src',
  'rust-toolchain.toml',
];

function collect(tree, relative, out) {
  const absolute = path.join(tree, relative);
  if (fs.statSync(absolute).isDirectory()) {
    for (const name of fs.readdirSync(absolute).sort()) collect(tree, `${relative}/${name}`, out);
  } else {
    out.push(relative);
  }
}

/**
 * SHA-256 of the native sources in a working tree.
 * @param {string} [tree] the checkout; this script's own by default
 * @returns 64 hex digits
 */
export function nativeSourceHash(tree = root) {
  const files = [];
  for (const input of NATIVE_INPUTS) collect(tree, input, files);
  // build.rs sorts by the UTF-8 bytes of the path; so does this for ASCII paths.
  files.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const hash = crypto.createHash('sha256');
  for (const file of files) {
    const bytes = fs.readFileSync(path.join(tree, file));
    hash.update(file).update('\0').update(String(bytes.length)).update('\0').update(bytes);
  }
  return hash.digest('hex');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(nativeSourceHash());
}
