// The engines dist/ carries for the platforms this machine is not, run on this machine: the arm64
// engine in Node's arm64 build under qemu's user-mode emulation, the musl engine in a Node built
// against musl on musl's own dynamic loader (scripts/foreign-node.mjs). Each runs the engine's
// smoke replay (scripts/smoke-engine.mjs) against the shared test server and must carry the hash
// of the current native sources. No cross build happens here: the engines are the committed ones
// (`npm run package` builds them); PG_RETEST_ENGINE_DIR=build checks fresh ones from
// `node scripts/build-native.mjs --target <id>` instead.
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { engineFile } from '../src/engine-platforms.mjs';
// @ts-expect-error: a plain .mjs script without declarations
import { foreignNode } from '../scripts/foreign-node.mjs';
import { adminSql } from './support/admin-sql.js';
// @ts-expect-error: a plain .mjs script without declarations
import { nativeSourceHash } from '../scripts/package-hash.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const engines = path.resolve(root, process.env.PG_RETEST_ENGINE_DIR ?? 'dist');
const engine = (id: string): string => path.join(engines, engineFile(id));

const databases: string[] = [];
const sql = adminSql;
async function freshDatabase(): Promise<string> {
  const name = `platforms_${randomBytes(4).toString('hex')}`;
  await sql(`create database ${name}`);
  databases.push(name);
  const url = new URL(inject('pgUrl'));
  url.pathname = `/${name}`;
  return url.toString();
}
afterAll(async () => {
  for (const name of databases) await sql(`drop database if exists ${name} with (force)`);
});

/** readelf's view of a file: its header, dynamic section and symbol versions. */
function readelf(file: string): string {
  const run = spawnSync('readelf', ['-hdVW', file], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (run.error) throw new Error(`readelf (binutils) is needed: ${run.error.message}`);
  expect(run.status, run.stderr).toBe(0);
  return run.stdout;
}

const needed = (elf: string): string[] => [...elf.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1] ?? '').sort();

describe.each([
  { id: 'linux-arm64-gnu', platform: 'linux-arm64', glibc: true },
  { id: 'linux-x64-musl', platform: 'linux-x64', glibc: false },
])('the $id engine', ({ id, platform, glibc }) => {
  it('runs the smoke replay against a real server on its own platform, built from the current sources', async () => {
    const node = foreignNode(id);
    const url = await freshDatabase();
    const started = Date.now();
    const run = spawnSync(
      node.command,
      [...node.args, path.join(root, 'scripts', 'smoke-engine.mjs'), '--engine', engine(id), '--url', url, '--hash', nativeSourceHash()],
      {
        encoding: 'utf8',
        env: { ...process.env, ...node.env },
        timeout: 180_000,
      },
    );
    expect(run.status, `${run.error ?? ''}${run.stderr}`).toBe(0);
    const result = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '{}');
    // The process really was that platform: arm64, or x64 without glibc.
    expect(result.platform).toBe(platform);
    expect(result.glibc === null).toBe(!glibc);
    expect(result).toMatchObject({ executed: 6, errors: ['22012', '42703'], rows: 105, sourceHash: nativeSourceHash() });
    console.log(
      `${id}: smoke replay on ${result.platform} (${result.glibc ? `glibc ${result.glibc}` : 'musl'}, Node ${result.node}) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
  });

  it(glibc ? 'is an aarch64 library against glibc' : 'is an x86-64 library against musl, with nothing of glibc', () => {
    const elf = readelf(engine(id));
    expect(elf).toMatch(glibc ? /Machine:\s+AArch64/ : /Machine:\s+Advanced Micro Devices X86-64/);
    if (glibc) {
      expect(needed(elf)).toEqual(['libc.so.6', 'libgcc_s.so.1', 'libm.so.6']);
    } else {
      // musl's libc.so is the C library, the math library and the loader in one; libgcc_s is
      // Alpine's libgcc (the unwinder). No glibc soname and no GLIBC_ symbol version.
      expect(needed(elf)).toEqual(['libc.so', 'libgcc_s.so.1']);
      expect(elf).not.toMatch(/GLIBC_/);
    }
  });
});
