// Writes examples/shop/checkout.wkl: the sample shop's traffic in the shape real applications
// produce, captured through the project's own log capture (not generated).
//
//   npm run build && node scripts/capture-example-workload.mjs [out.wkl]
//
// It starts a throwaway PostgreSQL server logging every statement (csvlog), builds the shop
// (migrations, seed), and drives it from node-postgres clients as an application would
// (scripts/lib/shop-traffic.mjs: checkouts with ids from RETURNING, storefront reads, a back
// office paying the new orders), then captures the log with `pg-retest-action capture
// --application-name shop`. The ids in the file are the ones this server handed out; replay
// carries the ones it gets to every later use (docs/keys.md). Timing comes from a real run, so
// the file differs from run to run; the mix does not (fixed PRNG seed).
import path from 'node:path';
import { buildExampleDatabase, captureServerLog, root, startLoggingServer } from './lib/logged-capture.mjs';
import { driveShop } from './lib/shop-traffic.mjs';

const out = path.resolve(process.argv[2] ?? path.join(root, 'examples', 'shop', 'checkout.wkl'));
const shop = (...parts) => path.join(root, 'examples', 'shop', ...parts);

async function main() {
  const server = await startLoggingServer('shop');
  try {
    const url = await buildExampleDatabase(server, 'shop', shop());

    await driveShop(url);

    captureServerLog(server, out, ['--application-name', 'shop']);
  } finally {
    await server.stop();
  }
}

main().catch((error) => {
  console.error(`capture-example-workload: ${error.message}`);
  process.exit(1);
});
