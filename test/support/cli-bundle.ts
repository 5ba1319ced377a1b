// The CLI bundle (dist/cli.js) that tests run as users do. It is not committed, so the test run
// builds it once, in global setup, before any file starts: a file that rebuilt it while another
// file's child process was loading it could hand that process half a file, and a file that
// relied on another to build it ran whatever bundle an earlier run had left.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Builds dist/cli.js from the sources, as `npm run build` does. */
export function buildCliBundle(): void {
  const build = spawnSync('npm', ['run', '--silent', 'build:cli'], { cwd: root, encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`npm run build:cli failed:\n${build.stdout}${build.stderr}`);
}
