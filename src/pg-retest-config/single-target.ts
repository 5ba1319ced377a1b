/**
 * A pipeline run without variants: one replay against one target, as pg-retest's `run` does —
 * the database behind `[replay] target` or `[provision] connection_string` (in place), or a
 * server started for the run (`[provision] backend`), with `restore_from` loaded into it.
 *
 * `backend = "docker"` runs the configured image where a Docker engine answers; elsewhere
 * (GitHub's hosted runners have Docker, many containers and laptops do not) it starts the same
 * kind of throwaway server without Docker: PostgreSQL of the image's major from the machine's
 * binaries or from npm. The report says which.
 */
import { createDatabase } from '../provision/database.js';
import { describeTarget, replayUrl } from '../provision/url.js';
import { writesRefused } from '../engine/replay-writes.js';
import { dockerUnavailable } from '../provision/docker.js';
import { type Server, useDatabaseUrl } from '../provision/index.js';
import type { Logger } from '../runtime/logger.js';
import { serverForRun } from '../provision/run-server.js';
import { replayOnce, type ReplayContext } from '../gate/replay-once.js';
import type { ReplayReport, Workload } from '../engine/index.js';
import { largestFactor } from '../options/class-scale-options.js';
import type { ReplaySettings, TargetPlan } from './plan.js';
import { restoreFrom, type RestoreOutcome } from './restore.js';

/** The database created on a server the run starts (pg-retest's container has this one). */
const DATABASE = 'pgretest';

export interface TargetDescription {
  /** `database-url`, `docker`, `local` or `embedded`. */
  kind: string;
  /** Where, never with a password. */
  description: string;
  version: string;
  restore: RestoreOutcome | null;
}

export interface SingleTargetResult {
  target: TargetDescription;
  report: ReplayReport;
}

/**
 * Gets the target, loads restore_from into a started server, and replays once.
 * @param target where
 * @param workload the workload
 * @param replay pg-retest's replay settings
 * @param context logger, progress, interrupt
 * @param note refines how a key was understood (which server was started)
 * @returns the target and the replay's report (whatever its status)
 */
export async function replaySingleTarget(
  target: TargetPlan,
  workload: Workload,
  replay: ReplaySettings,
  context: ReplayContext & { logger: Logger },
  note: (key: string, text: string) => void,
): Promise<SingleTargetResult> {
  const { logger } = context;
  let server: Server | undefined;
  try {
    let url: string;
    let restore: RestoreOutcome | null = null;
    if (target.kind === 'url') {
      refuseUnaskedWrites(workload, replay, describeTarget(target.url));
      server = await useDatabaseUrl(target.url);
      url = target.url;
      logger.info(`replaying against ${server.description} (${target.key})`);
    } else {
      server = await startServer(target, workload.sessions * largestFactor(replay.scale, replay.classScale), logger, note);
      url = await createDatabase(server.url, DATABASE);
      if (target.restoreFrom !== undefined) {
        restore = await restoreFrom(target.restoreFrom, url, logger, context.signal);
        note(
          'provision.restore_from',
          {
            psql: 'loaded with psql into the started server before the replay, going on after failed statements as pg-retest does; each failure is listed in the report',
            pg_restore: 'a pg_dump archive, restored with pg_restore into the started server before the replay',
            statements: 'loaded statement by statement (psql is not installed) into the started server before the replay',
          }[restore.method],
        );
      }
    }
    const report = await replayOnce(
      workload,
      {
        conninfo: replayUrl(server, url),
        speed: replay.speed,
        readOnly: replay.readOnly,
        skipServerWide: target.kind === 'url' && !replay.allowServerWide,
        scale: replay.scale,
        staggerMs: replay.staggerMs,
        ...replay.classScale,
      },
      context,
    );
    return { target: { kind: server.kind, description: server.description, version: server.version, restore }, report };
  } finally {
    if (server && server.kind !== 'database-url') {
      logger.info('stopping the server and removing its data directory');
      await server.stop();
    }
  }
}

/**
 * A workload that writes is not replayed into a database the run did not create unless the config
 * (or `--allow-writes`) says so.
 * @param workload the workload
 * @param replay the settings
 * @param target the database as messages name it
 */
export function refuseUnaskedWrites(workload: Workload, replay: ReplaySettings, target: string): void {
  if (replay.readOnly || replay.allowWrites) return;
  const refusal = writesRefused(workload.summary(0), target, {
    allow: 'set allow_writes = true under [replay] (or pass --allow-writes)',
    skip: 'read_only = true',
  });
  if (refusal) throw refusal;
}

async function startServer(
  target: Extract<TargetPlan, { kind: 'start' }>,
  sessions: number,
  logger: Logger,
  note: (key: string, text: string) => void,
): Promise<Server> {
  const options = { sessions, maxConnections: undefined, logger };
  if (target.backend !== 'docker') {
    const server = await serverForRun({ kind: target.backend, major: target.major }, options);
    note('provision.backend', `${target.backend}: ${server.description}, started for the run and removed after it`);
    return server;
  }
  const noDocker = await dockerUnavailable();
  if (noDocker === undefined) {
    const server = await serverForRun({ kind: 'docker', major: target.major }, { ...options, image: target.image });
    note('provision.backend', `docker: ${target.image} in Docker, started for the run and removed after it`);
    return server;
  }
  logger.info(
    `[provision] backend = "docker": ${noDocker}; starting PostgreSQL${target.major ? ` ${target.major}` : ''} without Docker instead`,
  );
  const server = await serverForRun({ kind: 'auto', major: target.major }, options);
  const plain = /^(docker\.io\/)?(library\/)?postgres(:|$)/.test(target.image);
  note(
    'provision.backend',
    `docker, where a Docker engine answers; here there is ${noDocker}, so the same kind of throwaway server was started without it: ${server.description}` +
      (plain ? '' : ` (the image ${target.image} may bring extensions this server lacks)`),
  );
  return server;
}
