// Starts a throwaway server, prints its details as one JSON line and then
// waits to be killed. Used by test/harness.test.ts to check that a test
// process that dies without cleaning up does not leave PostgreSQL behind.
import { startPostgres } from './postgres.mjs';

const server = await startPostgres();
process.stdout.write(`${JSON.stringify({ port: server.port, dataDir: server.dataDir, url: server.url })}\n`);
setInterval(() => {}, 60_000);
