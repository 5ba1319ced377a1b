/** Types of engine-manifest.mjs. */

/** The manifest's file name, beside the engines: `engines.sha256`. */
export const MANIFEST_FILE: string;

/** A manifest's text from the source hash and each engine's digest. */
export function formatManifest(manifest: { sourceHash: string; builtWith?: string; engines: { file: string; sha256: string }[] }): string;

/** A manifest read: the native source hash and each engine file name's digest; throws one line on a malformed line. */
export function parseManifest(text: string, name: string): { sourceHash: string | undefined; digests: Map<string, string> };

/** SHA-256 of a file (a path, or an open file descriptor), as 64 hex digits. */
export function fileDigest(file: string | number): string;
