// A tampered engine for the tests of the digest check: the committed one with one byte of its
// .comment section (the compilers' version strings, never loaded) changed. It still loads and
// works, and carries the native source hash: exactly what a check by source hash let through.
import fs from 'node:fs';

/**
 * The bytes of `file` with the first compiler version string altered.
 * @param file an ELF engine built by GCC and rustc
 * @returns a working engine with another SHA-256
 */
export function tamperedEngine(file: string): Buffer {
  const bytes = Buffer.from(fs.readFileSync(file));
  const at = bytes.indexOf('GCC: (');
  if (at < 0) throw new Error(`${file} has no GCC version string to alter`);
  bytes[at] = 'g'.charCodeAt(0);
  return bytes;
}
