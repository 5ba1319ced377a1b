// dist/ is what `npm run package` makes from the sources in this tree: the bundles byte for
// byte (rebuilt into a temporary directory and compared), the engines through their manifest
// dist/engines.sha256: every engine has the digest it lists, and it lists the hash of the
// current native sources. That the listed digests are what the sources build is proved by
// rebuilding (`npm run verify-engines`, CI's check-dist.yml), too slow for this suite; what the
// suite shows is that a swapped engine is refused before it runs, by the action and by the CLI,
// and that a manifest edited to match the swap is what the rebuild check reports.
// A failure here means: run `npm run package` and commit dist/.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { MANIFEST_FILE, fileDigest, formatManifest, parseManifest } from '../src/engine-manifest.mjs';
import { ENGINE_PLATFORMS, engineFile } from '../src/engine-platforms.mjs';
import { ExitCode } from '../src/exit-codes.js';
// @ts-expect-error: a plain .mjs script without declarations
import { nativeSourceHash } from '../scripts/package-hash.mjs';
import { tamperedEngine } from './support/tampered-engine.js';
// @ts-expect-error: a plain .mjs script without declarations
import { engineProblems } from '../scripts/lib/engine-check.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = path.join(root, 'dist');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-dist-'));
const distEngines = ENGINE_PLATFORMS.filter((entry) => entry.dist).map((entry) => engineFile(entry.id));
const x64 = engineFile('linux-x64-gnu');
const fixtureWkl = path.join(root, 'test', 'fixtures', 'wkl', 'workload.wkl');

const manifest = () => parseManifest(fs.readFileSync(path.join(dist, MANIFEST_FILE), 'utf8'), `dist/${MANIFEST_FILE}`);

afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A copy of dist/ (with the CLI bundle) in a directory of its own; `swap` then replaces files in it. */
function distCopy(name: string, swap: Record<string, Buffer> = {}): string {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir);
  for (const file of ['index.js', 'post.js', 'pg-supervisor.js', 'cli.js', MANIFEST_FILE, ...distEngines])
    fs.copyFileSync(path.join(dist, file), path.join(dir, file));
  for (const [file, bytes] of Object.entries(swap)) fs.writeFileSync(path.join(dir, file), bytes);
  return dir;
}

/** The action's main step from a dist/ copy, as a runner starts it, gating a workload. */
function runAction(dir: string) {
  const work = path.join(dir, 'work');
  fs.mkdirSync(work);
  for (const file of ['summary.md', 'output', 'state']) fs.writeFileSync(path.join(work, file), '');
  const env = {
    PATH: process.env.PATH,
    GITHUB_REPOSITORY: 'acme/shop',
    GITHUB_EVENT_NAME: 'push',
    GITHUB_WORKSPACE: work,
    RUNNER_TEMP: work,
    GITHUB_STEP_SUMMARY: path.join(work, 'summary.md'),
    GITHUB_OUTPUT: path.join(work, 'output'),
    GITHUB_STATE: path.join(work, 'state'),
    INPUT_WORKLOAD: fixtureWkl,
    'INPUT_BASE-MIGRATIONS': path.join(root, 'examples', 'shop', 'migrations', '*.sql'),
    INPUT_MIGRATIONS: path.join(root, 'examples', 'shop', 'migrations', '*.sql'),
    'INPUT_DATABASE-URL': 'postgres://nobody@127.0.0.1:9/none',
  };
  const run = spawnSync(process.execPath, [path.join(dir, 'index.js')], { cwd: work, env, encoding: 'utf8', timeout: 60_000 });
  return { code: run.status, output: `${run.stdout}${run.stderr}` };
}

function runCli(dir: string) {
  const run = spawnSync(process.execPath, [path.join(dir, 'cli.js'), 'inspect', fixtureWkl], { encoding: 'utf8', timeout: 60_000 });
  return { code: run.status, output: `${run.stdout}${run.stderr}` };
}

describe('dist/', () => {
  it('holds the bundles npm run package builds from these sources', () => {
    const rebuilt = path.join(tmp, 'rebuilt');
    const run = spawnSync(process.execPath, [path.join(root, 'scripts', 'package.mjs'), '--js-only', '--out', rebuilt], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(run.status, run.stderr).toBe(0);
    for (const file of ['index.js', 'post.js', 'pg-supervisor.js']) {
      const committed = fs.readFileSync(path.join(dist, file));
      const fresh = fs.readFileSync(path.join(rebuilt, file));
      expect(committed.equals(fresh), `dist/${file} differs from a fresh build: run npm run package and commit dist/`).toBe(true);
    }
  });

  it('holds a manifest of the engines built from the current native sources', () => {
    expect(manifest().sourceHash, `dist/${MANIFEST_FILE} was written for other native sources: run npm run package and commit dist/`).toBe(
      nativeSourceHash(),
    );
  });

  it.each(distEngines)('holds %s with the digest its manifest lists', (file) => {
    expect(fs.existsSync(path.join(dist, file)), `dist/${file} is missing: run npm run package and commit dist/`).toBe(true);
    expect(
      fileDigest(path.join(dist, file)),
      `dist/${file} is not the engine dist/${MANIFEST_FILE} lists: run npm run package and commit dist/`,
    ).toBe(manifest().digests.get(file));
  });

  it('lists exactly the engines of the platforms the action supports, in a file sha256sum -c checks', () => {
    expect([...manifest().digests.keys()].sort()).toEqual([...distEngines].sort());
    const check = spawnSync('sha256sum', ['-c', '--strict', MANIFEST_FILE], { cwd: dist, encoding: 'utf8' });
    if (check.error) return; // no coreutils here: the digests were compared above
    expect(check.status, check.stderr).toBe(0);
    expect(check.stdout.trim().split('\n').sort()).toEqual(distEngines.map((file) => `${file}: OK`).sort());
  });

  it('holds exactly the engines of the platforms the action supports, stripped release builds', () => {
    expect(
      fs
        .readdirSync(dist)
        .filter((name) => name.endsWith('.node'))
        .sort(),
    ).toEqual([...distEngines].sort());
    for (const engine of distEngines) {
      const file = spawnSync('file', [path.join(dist, engine)], { encoding: 'utf8' });
      if (file.status === 0) expect(file.stdout).toMatch(/stripped/);
      expect(file.stdout).not.toMatch(/not stripped|with debug_info/);
    }
  });

  // What made two builds differ (docs/releasing.md): the paths of crates.io's sources under
  // CARGO_HOME and of the C compiled in the target directory. A reproducible build names them
  // by the fixed prefixes of scripts/lib/reproducible-build.mjs, whoever built it where.
  it.each(distEngines)('%s names no directory of the machine that built it', (file) => {
    const text = fs.readFileSync(path.join(dist, file)).toString('latin1');
    const count = (pattern: RegExp) => [...text.matchAll(pattern)].length;
    expect(count(/\/registry\/src\/index\.crates\.io-/g)).toBeGreaterThan(0);
    expect(count(/(?<!\/cargo)\/registry\/src\/index\.crates\.io-/g), 'a crates.io source path outside /cargo').toBe(0);
    expect(count(/\/release\/build\/pg_query-[0-9a-f]{16}\/out\//g)).toBeGreaterThan(0);
    expect(
      count(/(?<!\/pg-retest\/target(?:\/[a-z0-9_]+-unknown-linux-[a-z]+)?)\/release\/build\/pg_query-[0-9a-f]{16}\/out\//g),
      'a C source path outside /pg-retest/target',
    ).toBe(0);
  });

  it('is committed: only the CLI bundle is ignored', () => {
    const ignored = spawnSync(
      'git',
      [
        'check-ignore',
        'dist/index.js',
        'dist/post.js',
        'dist/pg-supervisor.js',
        `dist/${MANIFEST_FILE}`,
        ...distEngines.map((file) => `dist/${file}`),
      ],
      {
        cwd: root,
        encoding: 'utf8',
      },
    );
    expect(ignored.stdout.trim()).toBe('');
  });
});

describe('the engines manifest', () => {
  const digest = (c: string) => c.repeat(64);

  it("is sha256sum's format with the source hash as a comment, read back as written", () => {
    const text = formatManifest({ sourceHash: digest('a'), builtWith: 'rustc 1.95.0', engines: [{ file: x64, sha256: digest('b') }] });
    expect(text).toMatch(/^# native-sources: a{64}$\n^# built-with: rustc 1\.95\.0$\n^b{64} {2}engine\.linux-x64-gnu\.node$/m);
    expect(parseManifest(text, 'm')).toEqual({ sourceHash: digest('a'), digests: new Map([[x64, digest('b')]]) });
    // sha256sum --binary writes ' *' before the name.
    expect(parseManifest(`${digest('c')} *${x64}\r\n`, 'm').digests.get(x64)).toBe(digest('c'));
  });

  it.each([
    ['a short digest', `${'b'.repeat(63)}  ${x64}`],
    ['a path instead of a file name', `${'b'.repeat(64)}  ../${x64}`],
    ['an engine listed twice', `${'b'.repeat(64)}  ${x64}\n${'c'.repeat(64)}  ${x64}`],
    ['anything else', 'engine.linux-x64-gnu.node: OK'],
  ])('refuses %s, naming the line', (_, text) => {
    expect(() => parseManifest(`# native-sources: ${'a'.repeat(64)}\n${text}`, 'dist/engines.sha256')).toThrow(
      /^dist\/engines\.sha256, line \d: expected '<sha256> {2}<engine file>' once per file/,
    );
  });
});

describe('a swapped engine', () => {
  it('loads as committed: the CLI bundle beside an untouched dist/ copy runs', () => {
    const run = runCli(distCopy('untouched'));
    expect(run.code, run.output).toBe(ExitCode.Ok);
    expect(run.output).toMatch(/^statements\s+357 /m);
  });

  // The review's case: a file that is no engine at all, with the source hash in its bytes; and
  // a working engine, with the same hash, that is not the committed one.
  it.each([
    [
      '4 KB of another binary and the source hash',
      () => Buffer.concat([fs.readFileSync(process.execPath).subarray(0, 4096), Buffer.from(nativeSourceHash())]),
    ],
    ['a working engine altered by one byte', () => tamperedEngine(path.join(dist, x64))],
  ])('is refused by the action and by the CLI before it is loaded: %s', (name, bytes) => {
    const swapped = bytes();
    const dir = distCopy(`swapped-${name.length}`, { [x64]: swapped });
    const refusal = new RegExp(
      `refusing to load the pg-retest engine ${dir}/${x64.replaceAll('.', '\\.')}: its sha256 is ${fileDigest(path.join(dir, x64))}, \\S+/${MANIFEST_FILE.replace('.', '\\.')} lists ${manifest().digests.get(x64)};`,
    );
    const action = runAction(dir);
    expect(action.code, action.output).toBe(ExitCode.Infrastructure);
    expect(action.output).toMatch(refusal);
    expect(fs.readFileSync(path.join(dir, 'work', 'summary.md'), 'utf8')).toMatch(refusal);
    const cli = runCli(dir);
    expect(cli.code, cli.output).toBe(ExitCode.Infrastructure);
    expect(cli.output).toMatch(refusal);
    expect(cli.output.trim().split('\n')).toHaveLength(1);
  });

  it('is refused when the manifest beside it is missing or does not list it', () => {
    const missing = distCopy('no-manifest');
    fs.rmSync(path.join(missing, MANIFEST_FILE));
    const run = runCli(missing);
    expect(run.code, run.output).toBe(ExitCode.Infrastructure);
    expect(run.output).toMatch(
      new RegExp(`refusing to load the pg-retest engine \\S+/${x64.replaceAll('.', '\\.')}: its manifest \\S+ is missing;`),
    );
    const unlisted = distCopy('unlisted', {
      [MANIFEST_FILE]: Buffer.from(formatManifest({ sourceHash: nativeSourceHash(), engines: [] })),
    });
    expect(runCli(unlisted).output).toMatch(
      /lists no digest for engine\.linux-x64-gnu\.node; restore the manifest, or run npm run package\n?$/,
    );
  });

  it('with the manifest edited to match is loaded, and is what the rebuild check reports', () => {
    const swapped = tamperedEngine(path.join(dist, x64));
    const listed = manifest();
    const sha256 = crypto.createHash('sha256').update(swapped).digest('hex');
    const forged = formatManifest({
      sourceHash: nativeSourceHash(),
      engines: distEngines.map((file) => ({ file, sha256: file === x64 ? sha256 : (listed.digests.get(file) ?? '') })),
    });
    const dir = distCopy('forged', { [x64]: swapped, [MANIFEST_FILE]: Buffer.from(forged) });
    // The loader only knows the manifest beside it: a consistent pair passes it...
    expect(runCli(dir).code).toBe(ExitCode.Ok);
    // ...and the suite's digest checks above compare the pair with itself. What catches it is the
    // rebuild (scripts/verify-engines.mjs in check-dist.yml): the engines the sources build have
    // the digests of the committed manifest, which `npm run verify-engines` proves, not the forged ones.
    const rebuilt = new Map(distEngines.map((file) => [file, listed.digests.get(file)]));
    const committed = new Map(distEngines.map((file) => [file, fileDigest(path.join(dir, file))]));
    const problems: string[] = engineProblems({
      manifest: parseManifest(forged, MANIFEST_FILE),
      sources: nativeSourceHash(),
      committed,
      rebuilt,
    });
    expect(problems).toEqual([
      `dist/${x64}: the rebuild has sha256 ${listed.digests.get(x64)}, the manifest lists ${fileDigest(path.join(dir, x64))}`,
    ]);
  });
});
