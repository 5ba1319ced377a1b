// Writes the PostGIS workloads of test/extensions.test.ts, captured through the project's own log
// capture from traffic driven against a server logging every statement (not generated):
//
//   npm run build && node scripts/capture-postgis-workload.mjs
//
// It needs the machine's PostgreSQL with PostGIS (Debian/Ubuntu: postgresql-<major>-postgis-3;
// `gate --provision local --extensions postgis` installs it). On a logging server it builds
// test/fixtures/postgis (migrations, seed) and drives it from node-postgres clients with bind
// parameters, as a map application would:
//
//   map       6 sessions: places within 0.05° of a point (ST_DWithin), the ten nearest places
//             to a point (ORDER BY geom <-> point LIMIT 10), then a pause
//   catalog   4 sessions: a place by id, a page of places of one kind (plain SQL: these run on
//             a schema without PostGIS too)
//
// and captures each application into its own file: map.wkl and catalog.wkl (with sidecars).
// Timing comes from a real run, so the files differ from run to run; the mix does not (fixed
// PRNG seeds).
import path from 'node:path';
import pg from 'pg';
import { buildExampleDatabase, captureServerLog, root, startLoggingServer } from './lib/logged-capture.mjs';
import { prng } from './lib/prng.mjs';

const fixture = path.join(root, 'test', 'fixtures', 'postgis');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const KINDS = ['cafe', 'park', 'shop', 'school', 'museum'];

async function session(url, application, seed, requests, request) {
  const rnd = prng(seed);
  const c = new pg.Client({ connectionString: url, application_name: application });
  await c.connect();
  try {
    for (let i = 0; i < requests; i += 1) {
      await request(c, rnd);
      await sleep(20 + rnd() * 40);
    }
  } finally {
    await c.end();
  }
}

/** Where a map user looks: inside the seeded area (lon −10…10, lat 40…50). */
const point = (rnd) => [Number((-9 + rnd() * 18).toFixed(4)), Number((41 + rnd() * 8).toFixed(4))];

async function mapRequest(c, rnd) {
  const [lon, lat] = point(rnd);
  await c.query('SELECT id, name, kind FROM places WHERE ST_DWithin(geom, ST_SetSRID(ST_MakePoint($1, $2), 4326), $3)', [lon, lat, 0.05]);
  await c.query(
    'SELECT id, name, ST_Distance(geom, ST_SetSRID(ST_MakePoint($1, $2), 4326)) AS distance FROM places ' +
      'ORDER BY geom <-> ST_SetSRID(ST_MakePoint($1, $2), 4326) LIMIT 10',
    [lon, lat],
  );
}

async function catalogRequest(c, rnd) {
  await c.query('SELECT id, name, kind, lon, lat FROM places WHERE id = $1', [1 + Math.floor(rnd() * 50_000)]);
  await c.query('SELECT id, name FROM places WHERE kind = $1 ORDER BY id LIMIT 20', [KINDS[Math.floor(rnd() * KINDS.length)]]);
}

async function main() {
  const server = await startLoggingServer('postgis');
  try {
    const url = await buildExampleDatabase(server, 'map', fixture);
    const sessions = [];
    for (let i = 0; i < 6; i += 1) sessions.push(sleep(i * 50).then(() => session(url, 'map', 400 + i, 15, mapRequest)));
    for (let i = 0; i < 4; i += 1) sessions.push(sleep(i * 70).then(() => session(url, 'catalog', 500 + i, 15, catalogRequest)));
    await Promise.all(sessions);
    captureServerLog(server, path.join(fixture, 'map.wkl'), ['--application-name', 'map']);
    captureServerLog(server, path.join(fixture, 'catalog.wkl'), ['--application-name', 'catalog']);
  } finally {
    await server.stop();
  }
}

main().catch((error) => {
  console.error(`capture-postgis-workload: ${error.message}`);
  process.exit(1);
});
