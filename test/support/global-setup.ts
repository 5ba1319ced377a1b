// One PostgreSQL server for the whole test run, and the CLI bundle the tests run (cli-bundle.ts).
//
// Tests get its URL from inject('pgUrl'); child processes they start get it
// from PG_RETEST_TEST_URL. When PG_RETEST_TEST_URL is already set (by
// scripts/test.mjs, or by hand to point at a server of your own), that server
// is used and nothing is started. Tests share the server, so each test that
// writes creates a database of its own (see docs/testing.md).
// Loads vitest's types so that the augmentation below has a module to extend.
import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { buildCliBundle } from './cli-bundle.js';
import { SHARED_SERVER_SETTINGS, startPostgres } from './postgres.js';

declare module 'vitest' {
  interface ProvidedContext {
    /** URL of the shared test server (superuser, database `postgres`). */
    pgUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  buildCliBundle();
  const existing = process.env.PG_RETEST_TEST_URL;
  if (existing) {
    project.provide('pgUrl', existing);
    return undefined;
  }
  const server = await startPostgres({ settings: SHARED_SERVER_SETTINGS });
  process.env.PG_RETEST_TEST_URL = server.url;
  project.provide('pgUrl', server.url);
  return async () => {
    delete process.env.PG_RETEST_TEST_URL;
    await server.stop();
  };
}
