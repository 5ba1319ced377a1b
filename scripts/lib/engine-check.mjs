// What `npm run verify-engines` (scripts/verify-engines.mjs) judges, apart from building: a
// manifest (src/engine-manifest.mjs) against the sources it names, the committed engines and
// the engines rebuilt from those sources. A pure function, so that the test suite can show what
// it reports for a swapped engine without the minutes a rebuild takes.

/**
 * Every way the committed engines and their manifest are not the reproducible build of the sources.
 * @param {{ manifest: { sourceHash: string | undefined, digests: Map<string, string> }, sources: string, committed: Map<string, string>, rebuilt: Map<string, string | undefined> }} facts
 *   the manifest read; the native source hash of the same commit; the SHA-256 of each committed
 *   engine by file name; the SHA-256 of each rebuilt engine (undefined: its build failed)
 * @returns {string[]} one line per problem, none when everything matches
 */
export function engineProblems({ manifest, sources, committed, rebuilt }) {
  const problems = [];
  if (manifest.sourceHash !== sources) {
    problems.push(
      `the manifest was written for native sources ${manifest.sourceHash ?? '(none listed)'}, the sources are ${sources}: run npm run package and commit dist/`,
    );
  }
  for (const [file, sha256] of committed) {
    const listed = manifest.digests.get(file) ?? 'none';
    if (sha256 !== listed) problems.push(`dist/${file} has sha256 ${sha256}, the manifest lists ${listed}`);
  }
  for (const [file, sha256] of rebuilt) {
    const listed = manifest.digests.get(file) ?? 'none';
    if (sha256 === undefined) problems.push(`dist/${file}: the rebuild failed`);
    else if (sha256 !== listed) problems.push(`dist/${file}: the rebuild has sha256 ${sha256}, the manifest lists ${listed}`);
  }
  return problems;
}
