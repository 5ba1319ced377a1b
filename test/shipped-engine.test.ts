// npm test loads the committed release engine instead of building one only when dist/ holds the
// build of the very native sources in the tree (scripts/lib/shipped-engine.mjs). Shown on a tree
// of its own: stand-in sources, an engine file and its manifest as `npm run package` writes them.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MANIFEST_FILE, fileDigest, formatManifest } from '../src/engine-manifest.mjs';
import { engineFile, glibcVersion, platformId } from '../src/engine-platforms.mjs';
// @ts-expect-error: a plain .mjs script without declarations
import { NATIVE_INPUTS, nativeSourceHash } from '../scripts/package-hash.mjs';
// @ts-expect-error: a plain .mjs script without declarations
import { installShippedEngine, shippedEngine } from '../scripts/lib/shipped-engine.mjs';

const trees: string[] = [];
afterAll(() => {
  for (const tree of trees) fs.rmSync(tree, { recursive: true, force: true });
});

const name = engineFile(platformId(process.platform, process.arch, glibcVersion()));

/** A checkout whose dist/ was packaged from its native sources. */
function packagedTree(): string {
  const tree = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-shipped-'));
  trees.push(tree);
  for (const input of NATIVE_INPUTS as string[]) {
    // Directories (src) hold a file; the rest are files.
    const file = input.endsWith('/src') ? path.join(tree, input, 'lib.rs') : path.join(tree, input);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `// ${input}\n`);
  }
  fs.mkdirSync(path.join(tree, 'dist'));
  const engine = path.join(tree, 'dist', name);
  fs.writeFileSync(engine, 'engine bytes');
  const manifest = formatManifest({ sourceHash: nativeSourceHash(tree), engines: [{ file: name, sha256: fileDigest(engine) }] });
  fs.writeFileSync(path.join(tree, 'dist', MANIFEST_FILE), manifest);
  return tree;
}

describe('the engine npm test loads', () => {
  it('is the shipped one when dist/ was packaged from these sources', () => {
    const tree = packagedTree();
    expect(shippedEngine(tree)).toEqual({ file: path.join(tree, 'dist', name), sourceHash: nativeSourceHash(tree) });
  });

  it('is built when a native source changed since packaging', () => {
    const tree = packagedTree();
    fs.appendFileSync(path.join(tree, 'native/core/src/lib.rs'), '// changed\n');
    expect(shippedEngine(tree).reason).toMatch(/^the manifest was written for native sources [0-9a-f]{64}, the sources are [0-9a-f]{64}/);
  });

  it('is built when the engine file is not the one the manifest lists', () => {
    const tree = packagedTree();
    fs.writeFileSync(path.join(tree, 'dist', name), 'another engine');
    expect(shippedEngine(tree).reason).toMatch(
      new RegExp(`^dist/${name.replace(/\./g, '\\.')} has sha256 [0-9a-f]{64}, the manifest lists`),
    );
  });

  it('is copied into build/ when it is the build of these sources, and not otherwise', () => {
    const tree = packagedTree();
    const out = path.join(tree, 'build', name);
    expect(installShippedEngine(tree)).toEqual({ out, sourceHash: nativeSourceHash(tree) });
    expect(fs.readFileSync(out, 'utf8')).toBe('engine bytes');
    const changed = packagedTree();
    fs.appendFileSync(path.join(changed, 'native/core/src/lib.rs'), '// changed\n');
    expect(installShippedEngine(changed).reason).toMatch(/^the manifest was written for native sources/);
    expect(fs.existsSync(path.join(changed, 'build'))).toBe(false);
  });

  it('is built when dist/ has no engine for this machine', () => {
    const tree = packagedTree();
    fs.rmSync(path.join(tree, 'dist', name));
    expect(shippedEngine(tree).reason).toBe(`dist/ has no ${name} with its manifest`);
  });
});
