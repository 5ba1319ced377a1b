// The engines' manifest: `engines.sha256` beside the engines of dist/ (and beside the CLI in the
// npm package), listing the SHA-256 digest of each engine in sha256sum's format, so that a person
// can check it with `sha256sum -c engines.sha256`, and the hash of the native sources the
// engines were built from. The loader (src/engine/native.ts) refuses an engine whose digest is not the
// one listed; CI rebuilds the engines and compares (scripts/verify-engines.mjs).
//
//   # The engines and their SHA-256 digests, written by `npm run package` ...
//   # native-sources: 4823d3b58bad78caf30ecd865533344606e83900b0f6b98277a2de43d437e0ab
//   # built-with: rustc 1.95.0 (59807616e 2026-04-14), Debian GNU/Linux 12 (bookworm)
//   0f3c…  engine.linux-x64-gnu.node
//
// Comment lines start with `#` (sha256sum -c skips them); `native-sources` is read, the others are
// for people. Plain JavaScript with no imports beyond Node's, like engine-platforms.mjs, so that
// the scripts run it without a build; types in engine-manifest.d.mts.
import crypto from 'node:crypto';
import fs from 'node:fs';

/** The manifest's file name, beside the engines. */
export const MANIFEST_FILE = 'engines.sha256';

const SOURCES = /^#\s*native-sources:\s*([0-9a-f]{64})\s*$/;
/** sha256sum's line: digest, a space, ' ' (text) or '*' (binary), the file name. */
const ENTRY = /^([0-9a-f]{64}) [ *]([A-Za-z0-9._-]+)$/;

/**
 * Writes a manifest's text.
 * @param {{ sourceHash: string, builtWith?: string, engines: { file: string, sha256: string }[] }} manifest
 * @returns {string}
 */
export function formatManifest({ sourceHash, builtWith, engines }) {
  return [
    '# The engines and their SHA-256 digests, written by `npm run package` (pg-retest-action).',
    '# Check them here with `sha256sum -c engines.sha256`; rebuild and compare: npm run verify-engines.',
    `# native-sources: ${sourceHash}`,
    ...(builtWith ? [`# built-with: ${builtWith}`] : []),
    ...engines.map(({ file, sha256 }) => `${sha256}  ${file}`),
    '',
  ].join('\n');
}

/**
 * Reads a manifest's text.
 * @param {string} text
 * @param {string} name what to call the manifest in an error (its path)
 * @returns {{ sourceHash: string | undefined, digests: Map<string, string> }} the source hash
 *   and each engine file name's digest
 * @throws {Error} one line naming the first line that is not a comment or an entry
 */
export function parseManifest(text, name) {
  let sourceHash;
  const digests = new Map();
  text.split('\n').forEach((raw, index) => {
    const line = raw.replace(/\r$/, '');
    if (line.trim() === '') return;
    if (line.startsWith('#')) {
      sourceHash = SOURCES.exec(line)?.[1] ?? sourceHash;
      return;
    }
    const entry = ENTRY.exec(line);
    if (!entry || digests.has(entry[2])) {
      throw new Error(`${name}, line ${index + 1}: expected '<sha256>  <engine file>' once per file, got '${line.slice(0, 80)}'`);
    }
    digests.set(entry[2], entry[1]);
  });
  return { sourceHash, digests };
}

/**
 * SHA-256 of a file, from a path or an open file descriptor (the loader hashes the very file it
 * then loads).
 * @param {string | number} file
 * @returns {string} 64 hex digits
 */
export function fileDigest(file) {
  const hash = crypto.createHash('sha256');
  const fd = typeof file === 'number' ? file : fs.openSync(file, 'r');
  try {
    const chunk = Buffer.alloc(1 << 20);
    for (let at = 0; ; ) {
      const read = fs.readSync(fd, chunk, 0, chunk.length, at);
      if (read === 0) break;
      hash.update(chunk.subarray(0, read));
      at += read;
    }
  } finally {
    if (typeof file !== 'number') fs.closeSync(fd);
  }
  return hash.digest('hex');
}
