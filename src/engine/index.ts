// The engine as the rest of the action sees it: typed, promise-based, with one error class.
// This is the only module that imports src/engine/native.ts (and so the `.node` file); it wraps the
// native objects as `inner`, fills in nothing the engine decides itself, and rethrows every
// native failure as an EngineError whose `code` callers map to an exit status.
import type {
  CaptureProgress,
  CaptureSummary,
  Comparison,
  CondenseProgress,
  CondenseSummary,
  ReplayProgress,
  ReplayReport,
  WorkloadComparison,
  WorkloadInspection,
  WorkloadProfileJson,
  WorkloadSummary,
} from '../types.js';
import * as native from './native.js';

export type * from '../types.js';

/**
 * What went wrong, as a stable code:
 * - `E_OPTIONS`: replay options (or arguments) are invalid;
 * - `E_WORKLOAD`: a workload file cannot be read or is not a workload, or a profile cannot be written;
 * - `E_CONNECT`: the target server cannot be reached or refuses the connection;
 * - `E_RESULTS_FILE`: the per-statement results file cannot be written;
 * - `E_CANCELLED`: the replay was cancelled before it connected;
 * - `E_ENGINE_UNAVAILABLE`: the native engine is not built or cannot run on this machine;
 * - `E_INTERNAL`: a bug in the engine.
 */
export type EngineErrorCode =
  | 'E_OPTIONS'
  | 'E_WORKLOAD'
  | 'E_CONNECT'
  | 'E_RESULTS_FILE'
  | 'E_CANCELLED'
  | 'E_ENGINE_UNAVAILABLE'
  | 'E_INTERNAL';

const ENGINE_CODES: ReadonlySet<string> = new Set<EngineErrorCode>([
  'E_OPTIONS',
  'E_WORKLOAD',
  'E_CONNECT',
  'E_RESULTS_FILE',
  'E_CANCELLED',
  'E_ENGINE_UNAVAILABLE',
  'E_INTERNAL',
]);

/** napi's own codes for an argument of the wrong type: the caller's mistake, like bad options. */
const ARGUMENT_CODES: ReadonlySet<string> = new Set([
  'InvalidArg',
  'ObjectExpected',
  'StringExpected',
  'NumberExpected',
  'BooleanExpected',
  'ArrayExpected',
  'FunctionExpected',
]);

/** A failure of the engine, with a one-line message and a code saying what kind it was. */
export class EngineError extends Error {
  override readonly name = 'EngineError';

  /**
   * @param code what kind of failure
   * @param message one line, for the user
   * @param options the original error as `cause`
   */
  constructor(
    readonly code: EngineErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Turns anything the native layer throws into an EngineError.
 * @param err what was thrown
 * @returns the EngineError to throw instead
 */
function toEngineError(err: unknown): EngineError {
  if (err instanceof EngineError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const raw = (err as { code?: unknown } | null)?.code;
  const code: EngineErrorCode =
    typeof raw === 'string' && ENGINE_CODES.has(raw)
      ? (raw as EngineErrorCode)
      : typeof raw === 'string' && ARGUMENT_CODES.has(raw)
        ? 'E_OPTIONS'
        : 'E_INTERNAL';
  return new EngineError(code, message, { cause: err });
}

async function engineCall<T>(call: () => T | Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw toEngineError(err);
  }
}

/** A fingerprint of a workload with one captured statement of it. */
export interface StatementExample {
  /** 16 hex digits, as in replay reports. */
  fingerprint: string;
  /** Literals replaced by `$n`. */
  normalized: string;
  kind: string;
  /** Whether it may change data (unparsed text counts as a write). */
  writes: boolean;
  /** The first captured text with this fingerprint, literals included. */
  example: string;
  /**
   * The statements that ran before `example` in its transaction block (BEGIN excluded), which
   * a probe executing it replays first; empty outside a block or when the block is long.
   */
  setup: string[];
}

/** A decoded and analysed workload, ready to replay. */
export class Workload {
  /** @param inner the native workload */
  constructor(readonly inner: native.NativeWorkload) {}

  /** Captured sessions. */
  get sessions(): number {
    return this.inner.sessions;
  }

  /** Captured statements over all sessions. */
  get statements(): number {
    return this.inner.statements;
  }

  /** What the decoder noticed without refusing the file, one line each (file name first). */
  get warnings(): string[] {
    return this.inner.warnings;
  }

  /**
   * One captured statement per fingerprint, literals included: what the gate EXPLAINs. The
   * examples carry real data values, so they must never reach a public report.
   * @returns every fingerprint, in the order first seen
   */
  examples(): StatementExample[] {
    try {
      return native.binding().statementExamples(this.inner);
    } catch (err) {
      throw toEngineError(err);
    }
  }

  /**
   * The fingerprints of statements named by position (the capture sidecar's failures).
   * @param at [session index, statement index] pairs, 0-based
   * @returns each one's fingerprint (16 hex digits), or null where the workload has no such statement
   */
  fingerprintsAt(at: [number, number][]): (string | null)[] {
    try {
      return this.inner.fingerprintsAt(at).map((fingerprint) => fingerprint ?? null);
    } catch (err) {
      throw toEngineError(err);
    }
  }

  /**
   * What the workload contains.
   * @param top how many of the most frequent fingerprints to list (default 10)
   * @returns the summary
   */
  summary(top?: number): WorkloadSummary {
    try {
      return this.inner.summary(top) as WorkloadSummary;
    } catch (err) {
      throw toEngineError(err);
    }
  }
}

/**
 * Reads, decodes and analyses a `.wkl` workload profile, off the main thread.
 * @param path the file
 * @returns the workload; rejects with `E_WORKLOAD` naming the file when it is not one
 */
export async function loadWorkload(path: string): Promise<Workload> {
  return new Workload(await engineCall(() => native.loadWorkload(path)));
}

/**
 * Summarises a workload file without keeping it.
 * @param path the file
 * @param top how many fingerprints to list (default 10)
 * @returns the summary and the decoder's warnings
 */
export function inspectWorkload(path: string, top?: number): Promise<WorkloadInspection> {
  return engineCall(() => native.inspectWorkload(path, top) as Promise<WorkloadInspection>);
}

/**
 * Writes a workload profile as a `.wkl` file that pg-retest (and this engine) can read.
 * @param path the file; replaced atomically
 * @param profile the profile in pg-retest's JSON shape
 * @returns when the file is complete; rejects with `E_WORKLOAD` when the profile is malformed
 */
export function writeWorkload(path: string, profile: WorkloadProfileJson): Promise<void> {
  return engineCall(() => native.writeWorkload(path, profile));
}

/**
 * Reads a `.wkl` into pg-retest's JSON shape (the whole profile, for tools that rewrite one).
 * @param path the file
 * @returns the profile; rejects with `E_WORKLOAD` when the file is not a workload
 */
export function readWorkload(path: string): Promise<WorkloadProfileJson> {
  return engineCall(() => native.readWorkload(path)) as Promise<WorkloadProfileJson>;
}

/** What to capture; see native/node/index.d.ts for every option. */
export type CaptureOptions = native.NativeCaptureOptions;

/**
 * Turns PostgreSQL logs into a `.wkl` workload (and its `.capture.json` sidecar), off the main
 * thread.
 * @param options the logs, the output and the filters
 * @param onProgress called with snapshots while the logs are read (and once with `done: true`)
 * @returns the capture summary; rejects with `E_WORKLOAD` when a log cannot be read or holds no
 *   statement, or the output cannot be written
 */
export function captureWorkload(options: CaptureOptions, onProgress?: (progress: CaptureProgress) => void): Promise<CaptureSummary> {
  return engineCall(() => native.captureWorkload(options, onProgress) as Promise<CaptureSummary>);
}

/** What to condense and to what budget; see native/node/index.d.ts. */
export type CondenseOptions = native.NativeCondenseOptions;

/**
 * Condenses a workload to a budget (and writes its `.condense.json` sidecar), off the main
 * thread.
 * @param options input, output, budget, hot share, min calls, seed
 * @param onProgress called with snapshots (and once with `done: true`)
 * @returns the summary; rejects with `E_WORKLOAD` when the input cannot be read or the output
 *   written, `E_OPTIONS` for malformed options
 */
export function condenseWorkload(options: CondenseOptions, onProgress?: (progress: CondenseProgress) => void): Promise<CondenseSummary> {
  return engineCall(() => native.condenseWorkload(options, onProgress) as Promise<CondenseSummary>);
}

/**
 * Compares a condensed workload with its original (both read streamed).
 * @param condensed the condensed `.wkl`
 * @param original the workload it was condensed from
 * @param minShare the hot share (0–1)
 * @param minCalls calls a hot fingerprint needs to be gated
 * @returns the comparison; rejects with `E_WORKLOAD` when a file is not a workload
 */
export function compareWorkloads(condensed: string, original: string, minShare: number, minCalls: number): Promise<WorkloadComparison> {
  return engineCall(() => native.compareWorkloads(condensed, original, minShare, minCalls) as Promise<WorkloadComparison>);
}

/** How to replay; see native/node/index.d.ts for every option and its default. */
export type ReplayOptions = native.NativeReplayOptions;

/** Callbacks and cancellation for one replay. */
export interface ReplayControl {
  /**
   * Called with a snapshot every `progressIntervalMs`, and once more with `done: true` before
   * the replay's promise settles. Snapshots are dropped while the main thread is busy. An
   * exception thrown here does not stop the replay; it is reported once as a process warning.
   */
  onProgress?: (progress: ReplayProgress) => void;
  /** Aborting cancels the replay: it resolves with status `cancelled`. */
  signal?: AbortSignal;
}

/**
 * Replays a workload against one database.
 * @param workload from loadWorkload
 * @param options where and how to replay
 * @param control progress callback and cancellation
 * @returns the report, whose status says whether the run completed; rejects with an
 *   EngineError only when the replay could not start (`E_OPTIONS`, `E_CONNECT`,
 *   `E_RESULTS_FILE`, `E_CANCELLED`)
 */
export async function replay(workload: Workload, options: ReplayOptions, control: ReplayControl = {}): Promise<ReplayReport> {
  const { onProgress, signal } = control;
  let progress: ((p: ReplayProgress) => void) | undefined;
  if (onProgress) {
    let warned = false;
    progress = (p) => {
      try {
        onProgress(p);
      } catch (err) {
        if (warned) return;
        warned = true;
        const reason = err instanceof Error ? err.message : String(err);
        process.emitWarning(`the replay's progress callback threw (further errors are not reported): ${reason}`);
      }
    };
  }
  // Not started at all: the replay starts at once on the engine's own threads, and a cancel sent
  // right after could reach it only once it had connected (or finished), on a busy machine.
  if (signal?.aborted) throw new EngineError('E_CANCELLED', 'the replay was cancelled before it started');
  return engineCall(async () => {
    const handle = native.startReplay(workload.inner, options, progress);
    const cancel = (): void => handle.cancel();
    if (signal?.aborted) cancel();
    signal?.addEventListener('abort', cancel, { once: true });
    try {
      return (await handle.result()) as ReplayReport;
    } finally {
      signal?.removeEventListener('abort', cancel);
    }
  });
}

/**
 * What the recording proxy did: the content of its `.capture.json` sidecar, whose common fields
 * are a log capture's (so `replay` reads the failed statements from either).
 */
export interface ProxySummary
  extends Pick<
    CaptureSummary,
    | 'workload'
    | 'sidecar'
    | 'sessions'
    | 'statements'
    | 'first_statement_at'
    | 'duration_us'
    | 'failed_statements'
    | 'excluded'
    | 'incomplete'
    | 'warnings'
    | 'failed'
  > {
  format: 'pg-retest-action capture';
  version: 1;
  capture_method: 'proxy';
  listen: string;
  /** `host:port` of the server (never its password). */
  target: string;
  /** Client connections that authenticated. */
  connections: number;
  /** Ran, but cannot be replayed as SQL text (`binary_parameter`, `copy_from_stdin`, …). */
  not_replayable: Record<string, number>;
  copy: { from_stdin: number; to_stdout: number };
  /** Executes the server skipped after an error earlier in their pipeline (they never ran). */
  skipped_after_error: number;
  /** Parse or Describe messages the server refused (their statements never ran). */
  protocol_errors: number;
  /** Statements sent but not answered when their session ended. */
  unfinished: number;
  cancel_requests: number;
  /** Traffic relayed but not recorded because a session's recorder fell behind. */
  lost_chunks: number;
  incomplete_sessions: number;
  statements_with_returned_rows: number;
}

/** A running recording proxy. */
export interface RunningProxy {
  /** Where it listens (`127.0.0.1:6543`). */
  address: string;
  /** Stops accepting clients; open sessions may finish within the grace period. */
  stop(): void;
  /** The summary, once the workload and its sidecar are written. */
  result(): Promise<ProxySummary>;
}

/**
 * Starts the recording proxy.
 * @param options where to listen (`HOST:PORT`), the target's URL, the `.wkl` to write, and
 *   optionally `durationMs`, `graceMs`, `includeNoise`
 * @returns the running proxy; rejects with `E_OPTIONS` (bad address, port in use) or
 *   `E_CONNECT` (the target is unreachable or refuses the TLS it asks for)
 */
export async function startProxy(options: native.NativeProxyOptions): Promise<RunningProxy> {
  const handle = await engineCall(() => native.startProxy(options));
  return {
    address: handle.address,
    stop: () => handle.stop(),
    result: () => engineCall(() => handle.result() as Promise<ProxySummary>),
  };
}

/** What {@link compareReplays} compares. */
export interface CompareReplaysInput {
  /** Replays on the base schema, made with `includeSamples`; at least one. */
  base: ReplayReport[];
  /** Replays on the head schema, made with `includeSamples`; at least one. */
  head: ReplayReport[];
  /** Two more replays on the base schema, for the noise floor; without them it is 0. */
  noise?: [ReplayReport, ReplayReport] | null;
  /** The statements the capture saw fail, with their fingerprints (evidence that such failures are expected). */
  capture?: CaptureFailure[] | null;
  options: {
    /** A fraction: 0.2 flags a p95 more than 20 % slower. */
    p95Threshold: number;
    /** Smallest p95 slowdown that counts, ms. */
    minDeltaMs: number;
    /** Fewest successful executions per side for a fingerprint to be judged. */
    minCalls: number;
    /** Level of the confidence intervals (default 0.95). */
    confidence?: number;
    /** Bootstrap resamples per interval (default 2000). */
    iterations?: number;
    /** Seeds the bootstrap (default 0): same reports and seed, same result. */
    seed?: number;
    /** The server-time rule: a fraction of base's median (default 0.2)... */
    serverThreshold?: number;
    /** ...and the least shift, ms (default 0.05). */
    serverMinDeltaMs?: number;
  };
}

/** A statement the capture saw fail. */
export interface CaptureFailure {
  fingerprint: string;
  sqlstate: string;
  /** 0-based session index in the workload, and statement index in it. */
  session: number;
  index: number;
}

/**
 * Compares head replays with base replays, off the main thread (docs/gate-statistics.md).
 * @param input the replay reports of each side, the optional noise pair and the thresholds
 * @returns the comparison; rejects with `E_OPTIONS` for invalid options or reports without samples
 */
export async function compareReplays(input: CompareReplaysInput): Promise<Comparison> {
  const { base, head, noise, capture, options } = input;
  return engineCall(
    () =>
      native
        .binding()
        .compareReplays({ base, head, noise: noise ?? undefined, capture: capture ?? undefined, options }) as Promise<Comparison>,
  );
}
