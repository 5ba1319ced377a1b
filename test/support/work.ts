// Work per call for tests of the work counters and the work rule.
import type { WorkPerCall } from '../../src/plans/types.js';

/** No work at all, one row: what a test's figures are spread over. */
export const NO_WORK: WorkPerCall = {
  shared_hit: 0,
  shared_read: 0,
  shared_dirtied: 0,
  shared_written: 0,
  local_hit: 0,
  local_read: 0,
  local_dirtied: 0,
  local_written: 0,
  temp_read: 0,
  temp_written: 0,
  wal_records: 0,
  wal_fpi: 0,
  wal_bytes: 0,
  rows: 1,
};
