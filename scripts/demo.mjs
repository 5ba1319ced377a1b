// `npm run demo`: the gate on the example app, as a PR that adds a slow trigger to a write that
// only runs after an id from `INSERT … RETURNING`.
//
// Starts a throwaway PostgreSQL from npm (embedded: no Docker, no installed server), builds the
// base schema (examples/shop/migrations + seed) and the head schema (base + the stock-trigger
// variant), replays the shop's checkout.wkl (traffic captured from the shop through our own log
// capture: each order's id comes back from RETURNING and is used by the statements after it) in
// alternating rounds, with the replayed ids carried to where the capture used its own
// (docs/keys.md), prints the markdown report that would be the PR comment, and removes the server.
//
// The gate exits 1 when it finds a regression; here that is the expected outcome, so this
// script exits 0 then, and 1 if the gate missed it. Any other status (2 bad input, 3
// infrastructure) is passed on.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const shop = (...parts) => path.join('examples', 'shop', ...parts);
const args = [
  path.join(root, 'dist', 'cli.js'),
  'gate',
  '--provision',
  'embedded',
  '--workload',
  shop('checkout.wkl'),
  '--base-migrations',
  shop('migrations', '*.sql'),
  '--migrations',
  shop('migrations', '*.sql'),
  shop('variants', 'stock-trigger', '*.sql'),
  '--seed',
  shop('seed.sql'),
  ...process.argv.slice(2),
];

const started = Date.now();
const child = spawn(process.execPath, args, { cwd: root, stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('close', (code, signal) => {
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  if (code === 1) {
    console.error(`\ndemo: the gate found the regression the stock-trigger variant introduces (exit status 1), in ${seconds} s.`);
    process.exit(0);
  }
  if (code === 0) {
    console.error(`\ndemo: the gate passed the stock-trigger variant, which should have been a regression (${seconds} s)`);
    process.exit(1);
  }
  process.exit(code ?? (signal === 'SIGINT' ? 130 : 3));
});
