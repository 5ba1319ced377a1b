/**
 * What the capture saw fail, as evidence for the comparison: a statement that failed in
 * production too (a unique violation between two of its sessions, a deadlock) is expected to
 * fail now and then in a replay, and its failures are judged by rate, never from one occurrence
 * (docs/gate-statistics.md, "Errors"). Read from the capture's sidecar next to the workload
 * (`W.wkl.capture.json`, docs/capture.md); a workload without one has no such evidence.
 */
import { readCaptureSidecar } from '../sidecars/capture.js';
import type { CaptureFailure, Workload } from '../engine/index.js';
import { CliError } from '../exit-codes.js';
import { plural } from '../format/units.js';
import type { CaptureSummary } from '../types.js';

export interface CaptureEvidence {
  /** The failures with their fingerprints; null without a sidecar. */
  failures: CaptureFailure[] | null;
  /** What could not be used, one line each. */
  warnings: string[];
}

/**
 * The capture's failed statements of a workload, with their fingerprints.
 * @param workloadPath the `.wkl` file (its sidecar is `<path>.capture.json`)
 * @param workload the loaded workload, to name each statement's fingerprint
 * @returns the evidence, or none
 */
export function captureEvidence(workloadPath: string, workload: Workload): CaptureEvidence {
  let sidecar: CaptureSummary | undefined;
  try {
    sidecar = readCaptureSidecar(workloadPath);
  } catch (error) {
    // The gate does not need the sidecar; a broken one costs only the evidence.
    const why = error instanceof CliError ? error.message : String(error);
    return { failures: null, warnings: [`the capture sidecar was not used: ${why}`] };
  }
  if (sidecar === undefined) return { failures: null, warnings: [] };
  // The sidecar numbers sessions from 1, as `capture` does; the engine from 0.
  const at = sidecar.failed.map((f): [number, number] => [f.session_id - 1, f.statement_index]);
  const fingerprints = workload.fingerprintsAt(at);
  const failures: CaptureFailure[] = [];
  let unknown = 0;
  sidecar.failed.forEach((f, i) => {
    const fingerprint = fingerprints[i];
    if (fingerprint === null || fingerprint === undefined) unknown += 1;
    else failures.push({ fingerprint, sqlstate: f.sqlstate, session: at[i]![0], index: at[i]![1] });
  });
  const warnings =
    unknown > 0
      ? [
          `${plural(unknown, 'failed statement')} of the capture sidecar ${unknown === 1 ? 'is' : 'are'} not in the workload (a sidecar of another capture?); left out of the evidence`,
        ]
      : [];
  return { failures, warnings };
}
