/** The state one rendering of the markdown report carries through its sections. */
import type { GateReport } from '../verdict/report-types.js';

/** How many rows the tables may show. Infinity everywhere is the untruncated report. */
export interface Limits {
  /** Rows of the collapsed table of every compared fingerprint. */
  all: number;
  /** Rows of every other table or list (each also has a cap of its own, see {@link CAPS}). */
  rows: number;
}

/** What one rendering left out because of its {@link Limits}. */
export interface Context {
  report: GateReport;
  limits: Limits;
  /** Replace data values in error messages (see mask.ts). */
  mask: boolean;
  /** Compared fingerprints missing from the collapsed table. */
  hiddenFingerprints: number;
  /** Rows missing from the other tables. */
  hiddenRows: number;
}
