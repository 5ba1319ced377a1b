// dist/ is what `npm run package` makes from the sources in this tree: the bundles byte for
// byte (rebuilt into a temporary directory and compared), and the engine through the hash of
// the native sources it carries (the hash is recomputed from the current sources; a Rust
// build need not reproduce its bytes). A failure here means: run `npm run package` and commit dist/.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ENGINE_PLATFORMS, engineFile } from '../src/engine-platforms.mjs';
// @ts-expect-error: a plain .mjs script without declarations
import { carriesHash, nativeSourceHash } from '../scripts/package-hash.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = path.join(root, 'dist');
const rebuilt = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-dist-'));

afterAll(() => fs.rmSync(rebuilt, { recursive: true, force: true }));

describe('dist/', () => {
  it('holds the bundles npm run package builds from these sources', () => {
    const run = spawnSync(process.execPath, [path.join(root, 'scripts', 'package.mjs'), '--js-only', '--out', rebuilt], { cwd: root, encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    for (const file of ['index.js', 'post.js', 'pg-supervisor.js']) {
      const committed = fs.readFileSync(path.join(dist, file));
      const fresh = fs.readFileSync(path.join(rebuilt, file));
      expect(committed.equals(fresh), `dist/${file} differs from a fresh build: run npm run package and commit dist/`).toBe(true);
    }
  });

  it('holds an engine built from the current native sources', () => {
    const engine = path.join(dist, 'engine.linux-x64-gnu.node');
    const carried = (createRequire(import.meta.url)(engine) as { nativeSourceHash(): string }).nativeSourceHash();
    expect(carried, 'dist/engine.linux-x64-gnu.node was built from other native sources: run npm run package and commit dist/').toBe(nativeSourceHash());
  });

  // Engines of other platforms cannot be loaded here to ask; their bytes hold the hash
  // (test/engine-platforms.test.ts loads them under emulation and asks).
  it.each(['linux-arm64-gnu', 'linux-x64-musl'])('holds the %s engine, built from the current native sources', (id) => {
    const engine = path.join(dist, engineFile(id));
    expect(fs.existsSync(engine), `dist/${engineFile(id)} is missing: run npm run package and commit dist/`).toBe(true);
    expect(carriesHash(engine, nativeSourceHash()), `dist/${engineFile(id)} was built from other native sources: run npm run package and commit dist/`).toBe(true);
  });

  it('holds exactly the engines of the platforms the action supports, stripped release builds', () => {
    const engines = ENGINE_PLATFORMS.filter((entry) => entry.dist).map((entry) => engineFile(entry.id));
    expect(fs.readdirSync(dist).filter((name) => name.endsWith('.node')).sort()).toEqual([...engines].sort());
    for (const engine of engines) {
      const file = spawnSync('file', [path.join(dist, engine)], { encoding: 'utf8' });
      if (file.status === 0) expect(file.stdout).toMatch(/stripped/);
      expect(file.stdout).not.toMatch(/not stripped|with debug_info/);
    }
  });

  it('is committed: only the CLI bundle is ignored', () => {
    const engines = ENGINE_PLATFORMS.filter((entry) => entry.dist).map((entry) => `dist/${engineFile(entry.id)}`);
    const ignored = spawnSync('git', ['check-ignore', 'dist/index.js', 'dist/post.js', 'dist/pg-supervisor.js', ...engines], { cwd: root, encoding: 'utf8' });
    expect(ignored.stdout.trim()).toBe('');
  });
});
