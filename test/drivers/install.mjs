// Installs and builds the driver apps of test/drivers/ from the project's own files, once:
//
//   node-postgres  the devDependency `pg` (nothing to do)
//   psycopg        python3 -m venv target/drivers/python/venv, pip install -r python/requirements.txt (PyPI)
//   pgjdbc         mvn -B -q process-classes on java/pom.xml (Maven Central): classes and the driver's jar
//                  under target/drivers/java/
//   pgx            go build in go/ (go.mod and go.sum, through the Go module proxy) into target/drivers/go/app
//
// Each build writes target/drivers/<driver>/stamp.json last, with a digest of the files it was made
// from and the toolchain's version; a later run whose digest matches does nothing (a second run of
// test/capture-drivers.test.ts takes no build time). The downloads land in the tools' own caches
// (~/.m2, the Go module cache, pip's), as for any project.
//
//   node test/drivers/install.mjs [node|python|java|go ...]   prints what it did and how long it took
import { execFile, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const out = path.join(root, 'target', 'drivers');

/**
 * What each app's build depends on, what toolchain it needs, how it is built, what it makes and how it runs.
 * `toolchain` gives one line naming what is missing and how to install it, or null when present.
 */
export const DRIVERS = {
  node: {
    label: 'node-postgres',
    inputs: [],
    products: [],
    toolchain: () => (resolves('pg') ? null : 'the npm package pg is not installed: run npm ci'),
    version: () => JSON.parse(fs.readFileSync(path.join(root, 'node_modules', 'pg', 'package.json'), 'utf8')).version,
    build: async () => {},
    command: () => [process.execPath, path.join(here, 'node', 'app.mjs')],
  },
  python: {
    label: 'psycopg',
    inputs: ['python/requirements.txt'],
    products: [path.join(out, 'python', 'venv', 'bin', 'python')],
    toolchain: () =>
      probe('python3', ['-c', 'import venv, ensurepip']) !== null
        ? null
        : 'python3 with venv and ensurepip not found: install Python 3.8+ (Debian: apt-get install python3-venv; scripts/prepare-machine.sh does)',
    version: () => probe('python3', ['--version']),
    build: async () => {
      const venv = path.join(out, 'python', 'venv');
      await run('python3', ['-m', 'venv', '--clear', venv]);
      await run(path.join(venv, 'bin', 'pip'), [
        'install',
        '--quiet',
        '--disable-pip-version-check',
        '-r',
        path.join(here, 'python', 'requirements.txt'),
      ]);
    },
    command: () => [path.join(out, 'python', 'venv', 'bin', 'python'), path.join(here, 'python', 'app.py')],
  },
  java: {
    label: 'pgjdbc',
    inputs: ['java/pom.xml', 'java/src/main/java/drivers/App.java'],
    products: [path.join(out, 'java', 'build', 'classes', 'drivers', 'App.class'), path.join(out, 'java', 'lib')],
    toolchain: () =>
      probe('javac', ['-version']) !== null && probe('mvn', ['-B', '-v']) !== null
        ? null
        : 'javac (JDK 17+) or mvn not found: install a JDK and Maven (Debian: apt-get install default-jdk-headless maven; scripts/prepare-machine.sh does)',
    version: () => `${probe('javac', ['-version'])} ${probe('mvn', ['-B', '-v'])?.split('\n')[0]}`,
    build: async () => {
      fs.rmSync(path.join(out, 'java'), { recursive: true, force: true });
      await run('mvn', ['-B', '-q', '-f', path.join(here, 'java', 'pom.xml'), 'process-classes']);
    },
    command: () => [
      'java',
      '-cp',
      `${path.join(out, 'java', 'build', 'classes')}${path.delimiter}${path.join(out, 'java', 'lib', '*')}`,
      'drivers.App',
    ],
  },
  go: {
    label: 'pgx',
    inputs: ['go/main.go', 'go/go.mod', 'go/go.sum'],
    products: [path.join(out, 'go', 'app')],
    toolchain: () =>
      probe(goBinary(), ['version']) !== null
        ? null
        : 'go not found: install Go 1.25 or newer (go.mod asks for it; https://go.dev/doc/install)',
    version: () => probe(goBinary(), ['version']),
    // GOTOOLCHAIN=local: an older go says so instead of fetching a newer toolchain; -mod=readonly:
    // go.sum as committed, never rewritten.
    build: async () =>
      run(goBinary(), ['build', '-mod=readonly', '-o', path.join(out, 'go', 'app'), '.'], {
        cwd: path.join(here, 'go'),
        env: { ...process.env, GOTOOLCHAIN: 'local' },
      }),
    command: () => [path.join(out, 'go', 'app')],
  },
};

/** `go` on PATH, else where Go's own installer puts it (a shell that did not read the profile adding it to PATH). */
function goBinary() {
  const installed = '/usr/local/go/bin/go';
  return probe('go', ['version']) === null && fs.existsSync(installed) ? installed : 'go';
}

function resolves(name) {
  return fs.existsSync(path.join(root, 'node_modules', name, 'package.json'));
}

/** The command's trimmed output (stdout, else stderr: javac prints its version there), or null when it cannot run. */
function probe(command, args) {
  const r = spawnSync(command, args, { encoding: 'utf8' });
  if (r.error || r.status !== 0) return null;
  return (r.stdout || r.stderr).trim();
}

const execFileAsync = promisify(execFile);
const MAX_OUTPUT = 16 * 1024 * 1024;

/**
 * Runs a program to its end.
 * @returns {Promise<{ code: number, stdout: string, stderr: string }>} its exit status and output; rejects only when it cannot start
 */
async function execute(command, args, options = {}) {
  try {
    const { stdout, stderr } = await execFileAsync(command, args, { maxBuffer: MAX_OUTPUT, ...options });
    return { code: 0, stdout, stderr };
  } catch (e) {
    if (typeof e.code === 'number') return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    throw new Error(`${command} ${args.join(' ')}: ${e.message}`);
  }
}

/** Runs a build step; a failure carries the step and the end of its output. */
async function run(command, args, options = {}) {
  const r = await execute(command, args, options);
  if (r.code === 0) return;
  const tail = `${r.stdout}${r.stderr}`.trim().split('\n').slice(-15).join('\n');
  throw new Error(`${command} ${args.join(' ')} failed (exit ${r.code}): ${tail}`);
}

/** A digest of the files the app's build depends on and its toolchain's version. */
function inputsDigest(driver) {
  const d = DRIVERS[driver];
  const hash = crypto.createHash('sha256');
  for (const file of d.inputs)
    hash
      .update(`${file}\0`)
      .update(fs.readFileSync(path.join(here, file)))
      .update('\0');
  hash.update(String(d.version()));
  return hash.digest('hex');
}

/**
 * Builds one app unless its last build was made from the same files with the same toolchain.
 * @param {keyof typeof DRIVERS} driver
 * @returns {Promise<{ driver: string, built: boolean, ms: number }>} whether it built, and how long that took
 */
export async function installDriver(driver) {
  const d = DRIVERS[driver];
  const missing = d.toolchain();
  if (missing) throw new Error(`${d.label}: ${missing}`);
  const started = Date.now();
  const stampFile = path.join(out, driver, 'stamp.json');
  const digest = inputsDigest(driver);
  const stamp = fs.existsSync(stampFile) ? JSON.parse(fs.readFileSync(stampFile, 'utf8')) : null;
  if (stamp?.digest === digest && d.products.every((p) => fs.existsSync(p))) return { driver, built: false, ms: Date.now() - started };
  fs.rmSync(stampFile, { force: true });
  await d.build();
  fs.mkdirSync(path.dirname(stampFile), { recursive: true });
  fs.writeFileSync(stampFile, `${JSON.stringify({ digest, version: d.version() }, null, 2)}\n`);
  return { driver, built: true, ms: Date.now() - started };
}

/**
 * Runs a built app against a database: the URL goes in its environment, never on its command line.
 * @returns {Promise<{ code: number, stdout: string, stderr: string }>}
 */
export function runDriver(driver, databaseUrl) {
  const [program, ...args] = DRIVERS[driver].command();
  return execute(program, args, { env: { ...process.env, DATABASE_URL: databaseUrl } });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const wanted = process.argv.length > 2 ? process.argv.slice(2) : Object.keys(DRIVERS);
  const unknown = wanted.filter((w) => !(w in DRIVERS));
  if (unknown.length > 0) {
    console.error(`install: unknown driver ${unknown.join(', ')}; known: ${Object.keys(DRIVERS).join(', ')}`);
    process.exit(2);
  }
  let failed = false;
  const started = Date.now();
  for (const driver of wanted) {
    try {
      const r = await installDriver(driver);
      console.log(`${DRIVERS[driver].label}: ${r.built ? 'built' : 'up to date'} in ${(r.ms / 1000).toFixed(1)} s`);
    } catch (e) {
      failed = true;
      console.error(e.message);
    }
  }
  console.log(`all: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  process.exit(failed ? 1 : 0);
}
