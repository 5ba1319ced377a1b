// Typed entry point of the test harness; the implementation is plain ESM
// (postgres.mjs) so that scripts/test.mjs can use it on Node without a loader.
export { findBinaries, localMajors, randomPassword, SHARED_SERVER_SETTINGS, startPostgres } from './postgres.mjs';
export type { StartOptions, TestServer } from './postgres.mjs';
