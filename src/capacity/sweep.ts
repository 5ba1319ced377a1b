/**
 * The sweep itself: every step (a concurrency cap) replayed on each side, each replay on a fresh
 * copy of the side's template (or on the user's database as it is), the side that goes first
 * alternating per step; then each side's steps, knee and headroom.
 */
import type { ReplayReport, Workload } from '../engine/index.js';
import { InfraError, InterruptedError } from '../exit-codes.js';
import { plural } from '../format/units.js';
import { replayOnce } from '../gate/replay-once.js';
import { createDatabase, dropDatabase } from '../provision/database.js';
import type { Server } from '../provision/index.js';
import { passwordOf, redact, replayUrl } from '../provision/url.js';
import type { RunContext } from '../runtime/run-context.js';
import { findKnee } from './knee.js';
import { combineRuns, type StepMetrics, type StepRun, stepRun } from './metrics.js';
import type { CapacityConfig } from './options.js';
import type { CapacitySideReport, SideName } from './report-types.js';

/** Where each side's replays run: a template to copy, or the user's database as it is. */
export type Source = { kind: 'template'; name: string } | { kind: 'database'; url: string };

/**
 * Stops the sweep when it was interrupted, between two of its steps.
 * @param signal the run's interrupt
 * @throws InterruptedError when it fired
 */
export function throwIfInterrupted(signal: AbortSignal): void {
  if (signal.aborted) throw new InterruptedError('interrupted; the capacity sweep stopped before it finished');
}

export class Sweep {
  /** Every run so far, by side and step. */
  private readonly runs: Map<SideName, Map<number, StepRun[]>>;
  private replays = 0;

  /**
   * @param config the sweep's options
   * @param context log, progress and interrupt
   * @param workload what is replayed
   * @param server where
   * @param sources each side's template or database
   * @param databases the run's database names: their prefix, and those created and not dropped yet
   */
  constructor(
    private readonly config: CapacityConfig,
    private readonly context: RunContext,
    private readonly workload: Workload,
    private readonly server: Server,
    private readonly sources: Map<SideName, Source>,
    private readonly databases: { prefix: string; created: string[] },
  ) {
    this.runs = new Map([...sources.keys()].map((side) => [side, new Map()]));
  }

  /** The sides swept, in the order of the first step. */
  get sides(): SideName[] {
    return [...this.sources.keys()];
  }

  /** Every step of the sweep on every side; which side goes first alternates per step, so a drift over the run hits both alike. */
  async sweepAll(): Promise<void> {
    for (const [index, connections] of this.config.connections.entries()) {
      for (const side of index % 2 === 0 ? this.sides : [...this.sides].reverse()) await this.step(side, connections);
    }
  }

  /**
   * One replay of one side at one step, kept with the step's other runs.
   * @param side the side
   * @param connections the step
   */
  async step(side: SideName, connections: number): Promise<void> {
    const { context, databases } = this;
    throwIfInterrupted(context.signal);
    const source = this.sources.get(side)!;
    const name = `${databases.prefix}_s${++this.replays}`;
    let url: string;
    if (source.kind === 'template') {
      databases.created.push(name);
      url = await createDatabase(this.server.url, name, source.name);
    } else {
      url = source.url;
    }
    context.logger.info(`${side}: ${connections} connections (replay ${this.replays})`);
    const result = stepRun(await replayStep(this.config, this.workload, replayUrl(this.server, url), connections, context));
    if (source.kind === 'template') {
      await dropDatabase(this.server.url, name);
      databases.created.pop();
    }
    const perStep = this.runs.get(side)!;
    perStep.set(connections, [...(perStep.get(connections) ?? []), result]);
    context.logger.info(
      `  ${result.throughput.toFixed(0)} statements/s, p95 ${(result.p95_us / 1000).toFixed(2)} ms, ${plural(result.errors, 'error')}, ${plural(result.refused_sessions, 'refused session')}`,
    );
  }

  /**
   * A side's report: each step's runs combined, its knee, and the headroom it leaves.
   * @param side the side
   * @param capturedRate the captured workload's own rate (statements per second), if known
   * @returns the side's report
   */
  sideReport(side: SideName, capturedRate: number | null): CapacitySideReport {
    const steps: StepMetrics[] = this.config.connections.map((c) => combineRuns(c, this.runs.get(side)!.get(c)!));
    const knee = findKnee(steps, this.config.kneeRule);
    const ref = knee.connections ?? knee.recommended_connections;
    return {
      side,
      steps,
      knee,
      headroom_to_knee: knee.throughput !== null && capturedRate ? knee.throughput / capturedRate : null,
      headroom_to_refusal: knee.refusal_connections !== null && ref !== null ? knee.refusal_connections / ref : null,
    };
  }
}

/** One replay at one step: a refused session fails at once (no retries), so it is counted. */
async function replayStep(
  config: CapacityConfig,
  workload: Workload,
  url: string,
  connections: number,
  context: RunContext,
): Promise<ReplayReport> {
  const result = await replayOnce(
    workload,
    {
      conninfo: url,
      speed: config.speed,
      readOnly: !config.allowWrites,
      scale: config.scale,
      ...config.classScale,
      maxConnections: connections,
      // Retrying "too many clients" would queue refused sessions behind the server's limit and
      // hide exactly what the sweep must show.
      connectRetryMs: 0,
      statementTimeoutMs: config.statementTimeoutMs,
      deadlineMs: config.replayTimeoutMs,
      applicationName: 'pg-retest-action capacity',
    },
    context,
  );
  if (result.status === 'cancelled') throw new InterruptedError('interrupted; the capacity sweep stopped before it finished');
  if (result.status !== 'completed') {
    throw new InfraError(
      redact(
        `the replay at ${connections} connections did not complete (${result.status}${result.message ? `: ${result.message}` : ''})`,
        passwordOf(url),
      ),
    );
  }
  return result;
}
