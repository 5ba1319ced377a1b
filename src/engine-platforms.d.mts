/** Types of engine-platforms.mjs. */

/** One platform the engine is built for. */
export interface EnginePlatform {
  /** napi-rs's name: `linux-x64-gnu`, `linux-arm64-gnu`, `linux-x64-musl`, `darwin-arm64`. */
  id: string;
  /** `process.platform`, and the npm package's `os`. */
  os: string;
  /** `process.arch`, and the npm package's `cpu`. */
  cpu: string;
  /** The npm package's `libc` (Linux only). */
  libc: 'glibc' | 'musl' | undefined;
  /** Rust's target triple. */
  rustTarget: string;
  /** The library cargo writes for that target. */
  library: string;
  /** For people: `Linux arm64 (glibc)`. */
  label: string;
  /** Whether the action's dist/ carries this engine. */
  dist: boolean;
}

/** Every platform with an engine. */
export const ENGINE_PLATFORMS: readonly EnginePlatform[];

/** The engine's file name for a platform: `engine.<id>.node`. */
export function engineFile(id: string): string;

/** The platform a process runs on, as an engine id, whether or not an engine exists for it. */
export function platformId(platform: string, arch: string, glibc: string | undefined): string;

/** The engine platform for a process, or undefined when there is none. */
export function enginePlatform(platform: string, arch: string, glibc: string | undefined): EnginePlatform | undefined;

/** The version of glibc this process runs on, or undefined (musl, macOS). */
export function glibcVersion(): string | undefined;
