// Loads the native engine (native/node, a napi-rs addon) and exposes its functions with their
// types. Only src/engine/index.ts imports this module; everything else uses that.
//
// The addon is loaded on first use, not on import, so that code paths which never touch the
// engine (the action's post step, `--help`) also work where it cannot load. Its types come from
// native/node/index.d.ts, which napi-rs generates from the Rust sources (see docs/binding.md).
//
// A shipped engine is checked before it is loaded: its SHA-256 must be the one the manifest
// beside the bundle lists (engines.sha256, src/engine-manifest.mjs), the manifest that CI
// proves by rebuilding the engines. Which engines count as shipped is decided when the bundle
// is built (esbuild's `define` of PG_RETEST_BUNDLE), not by what files exist at run time:
//
//   the action (dist/index.js)   its own directory only, checked: the repository a workflow
//                                checks out may hold a build/ directory, and nothing but the
//                                committed, checked dist/ may decide what runs
//   the CLI (dist/cli.js)        its own directory and the npm platform package, both checked;
//                                then build/ in a checkout (a local development build)
//   the sources (tests, tsx)     build/: a local development build, not checked
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as Binding from '../../native/node/index.js';
import { MANIFEST_FILE, fileDigest, parseManifest } from '../engine-manifest.mjs';
import { ENGINE_PLATFORMS, type EnginePlatform, engineFile, glibcVersion, platformId } from '../engine-platforms.mjs';

/** Which bundle this code was built into (esbuild `define`); undeclared when run from the sources. */
declare const PG_RETEST_BUNDLE: string | undefined;
/** What this code runs as: the action's bundle, the CLI's, or the sources. */
export type EngineSearch = 'action' | 'cli' | 'sources';
const SEARCH: EngineSearch = typeof PG_RETEST_BUNDLE === 'string' ? (PG_RETEST_BUNDLE === 'action' ? 'action' : 'cli') : 'sources';

export type NativeBinding = typeof Binding;
export type NativeWorkload = Binding.Workload;
export type NativeReplayHandle = Binding.ReplayHandle;
export type NativeReplayOptions = Binding.ReplayOptions;
export type NativeReplayProgress = Binding.ReplayProgress;
export type NativeCaptureOptions = Binding.CaptureOptions;
export type NativeCaptureProgress = Binding.CaptureProgress;
export type NativeCondenseOptions = Binding.CondenseOptions;
export type NativeCondenseProgress = Binding.CondenseProgress;
export type NativeProxyOptions = Binding.ProxyOptions;
export type NativeProxyHandle = Binding.ProxyHandle;

/** Code of the error thrown when the addon cannot be loaded. */
export const UNAVAILABLE = 'E_ENGINE_UNAVAILABLE';

/**
 * The npm package that carries the engine for a platform, for installs from the npm registry
 * (one package per platform, which npm installs only where its `os`, `cpu` and `libc` match).
 * @param id the platform id (`linux-arm64-gnu`)
 * @returns the package name
 */
export function platformPackage(id: string): string {
  return `pg-retest-action-${id}`;
}

/** The platforms named as a list: `linux-x64-gnu, linux-arm64-gnu and darwin-arm64`. */
function listed(platforms: readonly EnginePlatform[]): string {
  const ids = platforms.map((entry) => entry.id);
  return ids.length > 1 ? `${ids.slice(0, -1).join(', ')} and ${ids.at(-1)}` : (ids[0] ?? 'no platform');
}

/**
 * Why this machine cannot run the engine, or undefined when it can.
 * @param platform `process.platform`
 * @param arch `process.arch`
 * @param glibc the C library's version, undefined when it is not glibc (musl, Alpine)
 * @param offered the platforms whose engines this installation has (the action's dist/ has the
 *   Linux ones); every platform built by default
 * @returns a one-line explanation that names the platforms there are, or undefined
 */
export function platformProblem(
  platform: string,
  arch: string,
  glibc: string | undefined,
  offered: readonly EnginePlatform[] = ENGINE_PLATFORMS,
): string | undefined {
  const here = platformId(platform, arch, glibc);
  if (offered.some((entry) => entry.id === here)) return undefined;
  return `the pg-retest engine does not run on ${here}; it is built for ${listed(offered)}`;
}

/** A place the engine may be, with the manifest it must match (none: a local development build). */
export interface EngineCandidate {
  file: string;
  manifest?: string;
}

/**
 * Where the addon may be, in order: next to the bundle (`dist/index.js` has `dist/engine.*.node`
 * and `dist/engines.sha256` beside it), the platform package of an npm install (checked against
 * the manifest beside the CLI), then `build/` at the repository root (`npm run build:native`).
 * @param moduleUrl URL of the module doing the loading
 * @param id the platform whose engine to look for
 * @param search what the loading code runs as (see the top of this file)
 * @returns absolute paths, each with the manifest that must list its digest
 */
export function candidatePaths(moduleUrl: string, id: string, search: EngineSearch): EngineCandidate[] {
  const library = engineFile(id);
  const at = (relative: string) => fileURLToPath(new URL(relative, moduleUrl));
  const manifest = at(`./${MANIFEST_FILE}`);
  // The repository's root is one folder up from a bundle (dist/cli.js), two from this file (src/engine/).
  const build: EngineCandidate = { file: at(`${search === 'sources' ? '../..' : '..'}/build/${library}`) };
  if (search === 'sources') return [build];
  const beside: EngineCandidate = { file: at(`./${library}`), manifest };
  if (search === 'action') return [beside];
  const candidates = [beside];
  try {
    candidates.push({ file: createRequire(moduleUrl).resolve(`${platformPackage(id)}/${library}`), manifest });
  } catch {
    // Not installed from npm, or the platform package is missing.
  }
  return [...candidates, build];
}

function unavailable(message: string, cause?: unknown): Error {
  return Object.assign(new Error(message, cause === undefined ? undefined : { cause }), { code: UNAVAILABLE });
}

let loaded: NativeBinding | undefined;

/**
 * The addon, loaded on the first call.
 * @returns the addon's exports
 */
export function binding(): NativeBinding {
  if (loaded) return loaded;
  // getReport() takes a few milliseconds: once.
  const glibc = glibcVersion();
  const problem = platformProblem(process.platform, process.arch, glibc);
  if (problem) throw unavailable(problem);
  const id = platformId(process.platform, process.arch, glibc);
  const candidates = candidatePaths(import.meta.url, id, SEARCH);
  const found = candidates.find((candidate) => fs.existsSync(candidate.file));
  if (!found) {
    throw unavailable(
      `the pg-retest engine for ${id} is not there (looked for ${candidates.map((candidate) => candidate.file).join(' and ')}); in a checkout run \`npm run build:native\`; ` +
        `installed from npm, install ${platformPackage(id)} too (npm adds it on ${id} unless optional dependencies are turned off)`,
    );
  }
  loaded = found.manifest === undefined ? loadFile(found.file) : loadChecked(found.file, found.manifest);
  return loaded;
}

/** Loads an addon file, with napi's failure in one line. */
function loadFile(file: string, openedAs: string = file): NativeBinding {
  try {
    const module = { exports: {} };
    process.dlopen(module, openedAs);
    return module.exports as NativeBinding;
  } catch (err) {
    const reason = err instanceof Error ? err.message.split('\n')[0] : String(err);
    throw unavailable(`cannot load the pg-retest engine from ${file}: ${reason}`, err);
  }
}

/**
 * Loads an engine only when its SHA-256 is the one `manifest` lists for it. The digest is taken
 * from an open descriptor and, on Linux, that same descriptor is what gets loaded
 * (/proc/self/fd/N), so the file cannot be swapped between the check and the load.
 * @param file the engine
 * @param manifest the engines.sha256 that must list it
 * @returns the addon's exports
 */
export function loadChecked(file: string, manifest: string): NativeBinding {
  const expected = expectedDigest(file, manifest);
  const fd = fs.openSync(file, 'r');
  try {
    const actual = fileDigest(fd);
    if (actual !== expected) {
      throw unavailable(
        `refusing to load the pg-retest engine ${file}: its sha256 is ${actual}, ${manifest} lists ${expected}; ` +
          'use the engine of a released version (a fresh checkout of the action at its tag, or a reinstall from npm), or in a checkout of the sources run npm run package',
      );
    }
    const opened = `/proc/self/fd/${fd}`;
    return loadFile(file, process.platform === 'linux' && fs.existsSync(opened) ? opened : file);
  } finally {
    fs.closeSync(fd);
  }
}

/** The digest `manifest` lists for the engine `file`; one line naming the fix when there is none. */
function expectedDigest(file: string, manifest: string): string {
  let text: string;
  try {
    text = fs.readFileSync(manifest, 'utf8');
  } catch {
    throw unavailable(
      `refusing to load the pg-retest engine ${file}: its manifest ${manifest} is missing; restore it (a fresh checkout or install), or in a checkout of the sources run npm run package`,
    );
  }
  let expected: string | undefined;
  try {
    expected = parseManifest(text, manifest).digests.get(path.basename(file));
  } catch (err) {
    throw unavailable(
      `refusing to load the pg-retest engine ${file}: ${err instanceof Error ? err.message : String(err)}; restore the manifest, or run npm run package`,
    );
  }
  if (expected === undefined) {
    throw unavailable(
      `refusing to load the pg-retest engine ${file}: ${manifest} lists no digest for ${path.basename(file)}; restore the manifest, or run npm run package`,
    );
  }
  return expected;
}

/**
 * Reads, decodes and analyses a `.wkl` workload profile (on a worker thread).
 * @param path the file
 * @returns the loaded workload
 */
export function loadWorkload(path: string): Promise<NativeWorkload> {
  return binding().loadWorkload(path);
}

/**
 * Loads a workload and summarises it.
 * @param path the file
 * @param top how many fingerprints to list
 * @returns the summary, with the decoder's warnings
 */
export function inspectWorkload(path: string, top?: number): Promise<object> {
  return binding().inspectWorkload(path, top);
}

/**
 * Writes a profile as a `.wkl` file pg-retest can read.
 * @param path the file
 * @param profile an object in pg-retest's JSON shape
 * @returns when the file is complete
 */
export function writeWorkload(path: string, profile: object): Promise<void> {
  return binding().writeWorkload(path, profile);
}

/**
 * Reads a `.wkl` file into pg-retest's JSON shape.
 * @param path the file
 * @returns the profile
 */
export function readWorkload(path: string): Promise<object> {
  return binding().readWorkload(path);
}

/**
 * Starts a replay and returns its handle at once.
 * @param workload from loadWorkload
 * @param options the replay options
 * @param onProgress called with snapshots; never keeps the process alive
 * @returns the handle
 */
export function startReplay(
  workload: NativeWorkload,
  options: NativeReplayOptions,
  onProgress?: (progress: NativeReplayProgress) => void,
): NativeReplayHandle {
  return binding().startReplay(workload, options, onProgress);
}

/**
 * Reads PostgreSQL logs and writes a `.wkl` workload and its `.capture.json` sidecar.
 * @param options the logs, the output and the filters
 * @param onProgress called with snapshots while the logs are read; never keeps the process alive
 * @returns the capture summary (the sidecar's content)
 */
export function captureWorkload(options: NativeCaptureOptions, onProgress?: (progress: NativeCaptureProgress) => void): Promise<object> {
  return binding().captureWorkload(options, onProgress);
}

/**
 * Starts the recording proxy: resolves once it listens and the target has accepted a connection.
 * @param options where to listen and relay, what to write
 * @returns the running proxy's handle
 */
export function startProxy(options: NativeProxyOptions): Promise<NativeProxyHandle> {
  return binding().startProxy(options);
}

/**
 * Condenses a workload to a budget and writes it with its `.condense.json` sidecar.
 * @param options input, output, budget and what to keep
 * @param onProgress called with snapshots; never keeps the process alive
 * @returns the condense summary (the sidecar's content)
 */
export function condenseWorkload(options: NativeCondenseOptions, onProgress?: (progress: NativeCondenseProgress) => void): Promise<object> {
  return binding().condenseWorkload(options, onProgress);
}

/**
 * Compares a condensed workload with its original, both read streamed.
 * @param condensed the condensed `.wkl`
 * @param original the original `.wkl`
 * @param minShare the hot share (0–1)
 * @param minCalls calls a hot fingerprint needs to be gated
 * @returns the comparison
 */
export function compareWorkloads(condensed: string, original: string, minShare: number, minCalls: number): Promise<object> {
  return binding().compareWorkloads(condensed, original, minShare, minCalls);
}
