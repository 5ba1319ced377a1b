/**
 * Where a gate run's replays happen: base's server and, when head replays on a server of its own,
 * head's; what the run keeps on each (databases, the statement counters, the replay role), how
 * the replays are set up there, and giving it all back at the end.
 */
import { sweepStaleDatabases } from '../provision/leftovers.js';
import type { Server } from '../provision/index.js';
import { passwordOf } from '../provision/url.js';
import type { Logger } from '../runtime/logger.js';
import type { Workload } from '../engine/index.js';
import { StatementCounterLog } from '../plans/gate-probe.js';
import type { Checkout } from '../templates/base-checkout.js';
import { type GateRecord, throwIfInterrupted } from './gate-record.js';
import type { GateConfig } from './options.js';
import { type PlaceIdentity, prepareReplayRole, type RolePlace, settleIdentities } from './replay-role.js';
import { releaseRun } from './run-resources.js';
import { compareServers, serverWarnings, startSideServer } from './run-servers.js';
import { serverTimeSupport, type ServerTimeSupport } from './server-time.js';

/**
 * A server of the run and what the run keeps on it: base's, and head's when head replays on a
 * server of its own (then its databases get a prefix of their own, since a pooler in front of
 * base's server reaches the same databases).
 */
export interface Place {
  server: Server;
  prefix: string;
  /** Databases created on it and not dropped yet. */
  created: string[];
  counters?: StatementCounterLog;
  /** The replay role made there, not dropped yet (replay-role.ts). */
  role?: string;
  /** Who its replays run as. */
  identity?: PlaceIdentity;
}

/** What a run holds and gives back when it ends, however it ends: filled in as it is taken. */
export interface Holdings {
  base?: Place;
  head?: Place;
  checkout?: Checkout;
}

/** The places of a run whose servers are up: `head` is `base` unless head has a server of its own. */
export interface Places {
  base: Place;
  head: Place;
  separate: boolean;
}

/** How every replay of the run is set up, the same on both sides. */
export interface ReplaySetup {
  /** Whether the servers send their own time per statement (server-time.ts). */
  serverTime: ServerTimeSupport;
  /** Whether statements that act beyond the replay database are skipped. */
  skipServerWide: boolean;
}

/**
 * Starts base's server (or checks the user's), and head's when it has one, and compares the two.
 * @param config the run's options
 * @param record where the servers are described
 * @param held where the run keeps them
 * @param workload for the servers' sizes and its session-dependent statements
 * @param prefix what the names of the run's databases start with
 * @param context log and interrupt
 * @returns the places
 */
export async function startServers(
  config: GateConfig,
  record: GateRecord,
  held: Holdings,
  workload: Workload,
  prefix: string,
  context: { logger: Logger; signal: AbortSignal },
): Promise<Places> {
  const { logger } = context;
  const sizing = { sessions: workload.sessions, maxConnections: config.maxConnections };
  held.base = { server: await startSideServer(config.servers.base, sizing, logger, 'base'), prefix, created: [] };
  const server = held.base.server;
  record.environment.server_version = server.version;
  record.environment.server_kind = server.kind;
  record.environment.server = server.description;
  if (config.servers.head !== null) {
    throwIfInterrupted(context.signal);
    held.head = { server: await startSideServer(config.servers.head, sizing, logger, 'head'), prefix: `${prefix}_h`, created: [] };
  }
  await sweepStaleDatabases([held.base.server, held.head?.server], logger);
  const places: Places = { base: held.base, head: held.head ?? held.base, separate: held.head !== undefined };
  if (config.servers.head !== null) {
    record.servers = await compareServers(
      { base: config.servers.base, head: config.servers.head },
      { base: places.base.server, head: places.head.server },
      workload,
      logger,
    );
    record.warnings.push(...serverWarnings(record.servers));
  }
  return places;
}

/**
 * Sets the replays up on every server: whether the servers report their own time per statement,
 * the statement counters, and who the replays run as.
 * @param config the run's options
 * @param record where what was decided is noted
 * @param places the servers
 * @param templates the template databases the replays copy
 * @param logger progress lines
 * @returns how the replays run
 */
export async function prepareReplays(
  config: GateConfig,
  record: GateRecord,
  places: Places,
  templates: { base: string; head: string },
  logger: Logger,
): Promise<ReplaySetup> {
  const all = places.separate ? [places.base, places.head] : [places.base];
  // The server's own time per statement, on every replay of both sides or on none.
  const serverTime = await serverTimeOf(all);
  if (!serverTime.available) logger.info(`server time per statement not measured: ${serverTime.reason}`);

  // Buffers and server time per statement, from each server's own accounting when it has it.
  for (const place of all) {
    place.counters = new StatementCounterLog(place.server, `${place.prefix}_stats`, logger);
    await place.counters.open();
    if (place.counters.createdDatabase) place.created.push(place.counters.createdDatabase);
  }

  const isolation = await isolateReplays(config, { base: places.base, head: places.separate ? places.head : undefined }, templates, logger);
  record.environment.replay_user = isolation.note;
  record.warnings.push(...isolation.warnings);
  return { serverTime, skipServerWide: isolation.skipServerWide };
}

/**
 * Who the replays run as on each server, and whether statements that act beyond the replay's
 * database are sent (docs/gate.md, "Replay isolation"). Both sides get the same: a statement
 * skipped on one side only, or refused there for a role's missing privilege, would read as the
 * change's doing.
 * @param config the options (`allowServerWide`)
 * @param places base's server, and head's when it has one of its own
 * @param templates the template databases the replays copy
 * @param logger progress lines
 * @returns whether to skip server-wide statements, the environment's line and warnings
 */
async function isolateReplays(
  config: GateConfig,
  places: { base: Place; head: Place | undefined },
  templates: { base: string; head: string },
  logger: Logger,
): Promise<{ skipServerWide: boolean; note: string; warnings: string[] }> {
  const all = places.head ? [places.base, places.head] : [places.base];
  const foreign = all.some((place) => place.server.kind === 'database-url');
  const asked =
    foreign && config.allowServerWide
      ? 'allow-server-wide: the workload runs with its privileges, statements that act beyond the database included'
      : undefined;
  const identities: PlaceIdentity[] = [];
  for (const place of all) {
    const replayed = places.head ? [place === places.head ? templates.head : templates.base] : [templates.base, templates.head];
    const rolePlace: RolePlace = {
      server: place.server,
      prefix: place.prefix,
      templates: replayed,
      readsCounters: place.counters?.unavailable === null,
    };
    try {
      identities.push(await prepareReplayRole(rolePlace, logger, asked));
    } finally {
      place.role = rolePlace.role;
    }
  }
  const settled = settleIdentities(identities);
  all.forEach((place, i) => {
    place.identity = settled.identities[i];
  });
  const skipServerWide = foreign && !config.allowServerWide;
  const sent = skipServerWide
    ? 'statements that act beyond the database (roles, settings, files, other sessions) skipped'
    : 'every statement sent';
  if (skipServerWide)
    logger.info(
      'statements that act beyond the replay database (roles, server settings, other databases, server files, other sessions) are skipped: the server is not one the gate started (--allow-server-wide sends them)',
    );
  return { skipServerWide, note: `${settled.note}; ${sent}`, warnings: settled.warnings };
}

/**
 * Whether every server of the run lets the gate turn on the server's duration line.
 * @param places the run's servers
 * @returns available on all, or the first reason one cannot
 */
async function serverTimeOf(places: Place[]): Promise<ServerTimeSupport> {
  for (const place of places) {
    const support = await serverTimeSupport(place.server.url);
    if (!support.available) return support;
  }
  return { available: true };
}

/**
 * The secrets a message of the run must not show: the servers' passwords and the replay roles'.
 * @param held what the run holds
 * @returns the secrets (undefined where there is none)
 */
export function secretsOf(held: Holdings): (string | undefined)[] {
  return [
    ...[held.base?.server.url, held.head?.server.url].map((url) => (url === undefined ? undefined : passwordOf(url))),
    ...[held.base?.identity, held.head?.identity].map((identity) => identity?.role?.password),
  ];
}

/**
 * Gives back what the run holds: head's server first, then base's and the base checkout.
 * @param held what the run holds
 * @param logger for warnings
 */
export async function releaseHoldings(held: Holdings, logger: Logger): Promise<void> {
  if (held.head) await releaseRun(held.head.server, held.head.created, undefined, logger, held.head);
  await releaseRun(held.base?.server, held.base?.created ?? [], held.checkout, logger, held.base);
}
