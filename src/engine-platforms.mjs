// The platforms the native engine is built for, in one table that the loader (src/engine/native.ts), the
// builds (scripts/build-native.mjs, scripts/package.mjs), the npm packages (scripts/pack-npm.mjs)
// and the tests read. Plain JavaScript with no imports, so that scripts run it on a bare Node;
// types in engine-platforms.d.mts.
//
// The ids are napi-rs's platform names: `<os>-<cpu>[-<abi>]`. The engine of platform `id` is the
// file `engine.<id>.node`, and its npm package `pg-retest-action-<id>`.

/**
 * Every platform with an engine. `dist` marks the engines the action's committed dist/ carries
 * (what `uses:` runs: GitHub's Linux runners on x64 and arm64, and Alpine container jobs); the
 * others exist as npm packages only, built on their own runners by the release workflow.
 */
export const ENGINE_PLATFORMS = Object.freeze([
  {
    id: 'linux-x64-gnu',
    os: 'linux',
    cpu: 'x64',
    libc: 'glibc',
    rustTarget: 'x86_64-unknown-linux-gnu',
    library: 'libpg_retest_node.so',
    label: 'Linux x64 (glibc)',
    dist: true,
  },
  {
    id: 'linux-arm64-gnu',
    os: 'linux',
    cpu: 'arm64',
    libc: 'glibc',
    rustTarget: 'aarch64-unknown-linux-gnu',
    library: 'libpg_retest_node.so',
    label: 'Linux arm64 (glibc)',
    dist: true,
  },
  {
    id: 'linux-x64-musl',
    os: 'linux',
    cpu: 'x64',
    libc: 'musl',
    rustTarget: 'x86_64-unknown-linux-musl',
    library: 'libpg_retest_node.so',
    label: 'Linux x64 (musl: Alpine)',
    dist: true,
  },
  {
    id: 'darwin-arm64',
    os: 'darwin',
    cpu: 'arm64',
    libc: undefined,
    rustTarget: 'aarch64-apple-darwin',
    library: 'libpg_retest_node.dylib',
    label: 'macOS arm64',
    dist: false,
  },
]);

/**
 * The engine's file name for a platform.
 * @param {string} id a platform id
 */
export function engineFile(id) {
  return `engine.${id}.node`;
}

/**
 * The platform a process runs on, as an engine id, whether or not an engine exists for it.
 * @param {string} platform `process.platform`
 * @param {string} arch `process.arch`
 * @param {string | undefined} glibc the C library's version; undefined when it is not glibc (musl)
 */
export function platformId(platform, arch, glibc) {
  if (platform !== 'linux') return `${platform}-${arch}`;
  return `${platform}-${arch}-${glibc ? 'gnu' : 'musl'}`;
}

/**
 * The engine platform for a process, or undefined when there is none.
 * @param {string} platform `process.platform`
 * @param {string} arch `process.arch`
 * @param {string | undefined} glibc as for platformId
 */
export function enginePlatform(platform, arch, glibc) {
  const id = platformId(platform, arch, glibc);
  return ENGINE_PLATFORMS.find((entry) => entry.id === id);
}

/** The version of glibc this process runs on, or undefined (musl, macOS). */
export function glibcVersion() {
  const report = /** @type {{ header?: { glibcVersionRuntime?: string } } | undefined} */ (process.report?.getReport());
  return report?.header?.glibcVersionRuntime;
}
