/**
 * A shard's part of the workload, written as a workload of its own that the gate replays as it
 * replays any: the shard's sessions (partition.ts), their offsets moved so that the part starts
 * at 0, and the capture sidecar's failed statements renumbered to the part's sessions, so that a
 * failure production had stays expected evidence (docs/gate-statistics.md, "Errors").
 *
 * The engine's workload format is read and written through the engine (`readWorkload`,
 * `writeWorkload`); the whole profile is held in memory while the part is cut, which suits the
 * workloads a CI runner replays (condensed to its budget, docs/scale-out.md).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fromEngineError } from '../engine/errors.js';
import { readWorkload, type WorkloadProfileJson, writeWorkload } from '../engine/index.js';
import { InputError } from '../exit-codes.js';
import { plural } from '../format/units.js';
import type { ShardSpec } from '../gate/shard-option.js';
import { readCaptureSidecar } from '../sidecars/capture.js';
import { captureWindow, partitionSessions } from './partition.js';
import { sessionGroups } from './session-groups.js';

/** The whole workload a part is cut from: what every partial of one run must agree on. */
export interface WholeWorkload {
  path: string;
  /** Of the file's bytes. */
  sha256: string;
  sessions: number;
  statements: number;
}

/** What a shard replays. */
export interface WorkloadPart {
  whole: WholeWorkload;
  /** The part as a workload file (with its capture sidecar when the whole had one). */
  file: string;
  sessions: number;
  statements: number;
  /** Groups of sessions linked by generated keys in the part. */
  groups: number;
  /** From the part's first statement's start to its last statement's end, as captured. */
  duration_us: number;
}

/**
 * The SHA-256 of a file, read in chunks.
 * @param file the file
 * @returns hex digest
 */
export function fileDigest(file: string): string {
  const hash = crypto.createHash('sha256');
  const fd = fs.openSync(file, 'r');
  try {
    const buffer = Buffer.alloc(1 << 20);
    for (;;) {
      const read = fs.readSync(fd, buffer, 0, buffer.length, null);
      if (read === 0) break;
      hash.update(buffer.subarray(0, read));
    }
  } finally {
    fs.closeSync(fd);
  }
  return hash.digest('hex');
}

/**
 * Cuts a shard's part out of a workload and writes it.
 * @param workloadPath the whole workload
 * @param shard which part
 * @param dir where to write it (a directory of the run's own)
 * @returns the part
 * @throws InputError when the workload cannot be read, or has fewer groups of sessions than shards
 */
export async function writeWorkloadPart(workloadPath: string, shard: ShardSpec, dir: string): Promise<WorkloadPart> {
  let profile: WorkloadProfileJson;
  try {
    profile = await readWorkload(workloadPath);
  } catch (error) {
    throw fromEngineError(error);
  }
  const groups = sessionGroups(profile);
  const parts = partitionSessions(profile, groups, shard.count);
  const chosen = parts[shard.index - 1]!;
  if (chosen.length === 0) {
    throw new InputError(
      `option --shard ${shard.index}/${shard.count}: the workload has ${plural(groups.length, 'group')} of sessions ` +
        `(sessions linked by generated keys replay together), too few for ${shard.count} shards; use at most ${groups.length}`,
    );
  }
  const part = partProfile(profile, chosen);
  const file = path.join(dir, `${path.basename(workloadPath, '.wkl')}.shard-${shard.index}-of-${shard.count}.wkl`);
  try {
    await writeWorkload(file, part);
  } catch (error) {
    throw fromEngineError(error);
  }
  writePartSidecar(workloadPath, file, chosen);
  const statements = profile.sessions.reduce((n, s) => n + s.queries.length, 0);
  const inPart = new Set(chosen);
  return {
    whole: { path: workloadPath, sha256: fileDigest(workloadPath), sessions: profile.sessions.length, statements },
    file,
    sessions: chosen.length,
    statements: part.metadata.total_queries,
    groups: groups.filter((g) => inPart.has(g[0]!)).length,
    duration_us: part.metadata.capture_duration_us,
  };
}

/** The profile of the chosen sessions, starting at offset 0. */
function partProfile(profile: WorkloadProfileJson, chosen: number[]): WorkloadProfileJson {
  const sessions = chosen.map((s) => profile.sessions[s]!);
  const { start, end } = captureWindow(sessions);
  const moved = sessions.map((s) => ({ ...s, queries: s.queries.map((q) => ({ ...q, start_offset_us: q.start_offset_us - start })) }));
  const total = moved.reduce((n, s) => n + s.queries.length, 0);
  return {
    ...profile,
    sessions: moved,
    metadata: { ...profile.metadata, total_queries: total, total_sessions: moved.length, capture_duration_us: Math.max(0, end - start) },
  };
}

/** The capture sidecar of the part: the whole's, with the failed statements of the part's sessions renumbered. */
function writePartSidecar(workloadPath: string, partFile: string, chosen: number[]): void {
  const sidecar = readCaptureSidecar(workloadPath);
  if (sidecar === undefined) return;
  // The sidecar numbers sessions by their 1-based position in the workload.
  const position = new Map(chosen.map((s, i) => [s + 1, i + 1]));
  const failed = sidecar.failed.flatMap((f) => {
    const at = position.get(f.session_id);
    return at === undefined ? [] : [{ ...f, session_id: at }];
  });
  const part = { ...sidecar, workload: partFile, sidecar: `${partFile}.capture.json`, failed, failed_statements: failed.length };
  fs.writeFileSync(`${partFile}.capture.json`, `${JSON.stringify(part, null, 2)}\n`);
}
