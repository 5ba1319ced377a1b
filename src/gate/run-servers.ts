/**
 * The gate's servers: each side's started (or connected to) from its {@link ServerSpec}, and,
 * when head runs on a server of its own, what differs between the two (versions, settings, URLs,
 * whether a client keeps its server connection) and which statements of the workload depend on
 * session state (docs/gate.md, "Gating server changes").
 */
import type { ServerSpec } from './server-options.js';
import type { Workload } from '../engine/index.js';
import { plural } from '../format/units.js';
import type { Server } from '../provision/index.js';
import type { Logger } from '../runtime/logger.js';
import { withStatStatements } from '../provision/preload.js';
import { serverForRun } from '../provision/run-server.js';
import { maskUrl, passwordOf, redact } from '../provision/url.js';
import type { ServerSide, ServersReport } from '../verdict/report-types.js';
import { diffSettings } from '../verdict/server-differences.js';
import { probeSessions, readSettings } from './server-facts.js';
import { findSessionFeatures } from '../verdict/session-features.js';

/**
 * Starts a side's server, or checks that the user's answers.
 * @param spec the side's server
 * @param sizing the workload's sessions and the replay's cap, for max_connections
 * @param logger progress lines
 * @param side which side, for the log
 * @returns the server
 */
export async function startSideServer(
  spec: ServerSpec,
  sizing: { sessions: number; maxConnections: number | undefined },
  logger: Logger,
  side: 'base' | 'head',
): Promise<Server> {
  if (spec.kind === 'database-url') return serverForRun(spec, { ...sizing, extensions: spec.extensions, logger });
  const server = await serverForRun(
    { kind: spec.kind, major: spec.major },
    {
      ...sizing,
      extensions: spec.extensions,
      image: spec.image,
      // Autovacuum off: on the fresh, vacuumed copies it has nothing useful to do within a
      // replay, and a worker waking up during one replay and not the other is noise. With two
      // servers it also keeps the idle one idle. The user's settings win.
      // pg_stat_statements: buffers and server time per statement (docs/plans.md); a started
      // cluster drops it when its binaries lack the library, and the probe falls back.
      settings: { autovacuum: 'off', ...withStatStatements(spec.settings) },
      logger,
    },
  );
  if (side === 'head') logger.info(`head replays on its own server: ${server.description}`);
  return server;
}

/**
 * What differs between base's and head's servers, read from the servers.
 * @param specs how each was asked for
 * @param servers the running servers
 * @param workload for its session-dependent statements
 * @param logger progress lines
 * @returns the servers part of the report
 */
export async function compareServers(
  specs: { base: ServerSpec; head: ServerSpec },
  servers: { base: Server; head: Server },
  workload: Workload,
  logger: Logger,
): Promise<ServersReport> {
  const secrets = [passwordOf(servers.base.url), passwordOf(servers.head.url)];
  const clean = (error: unknown) =>
    secrets.reduce<string>((m, s) => redact(m, s), (error instanceof Error ? error.message : String(error)).split('\n')[0]!);
  let settings: ReturnType<typeof diffSettings> = { settings: [], only_base: [], only_head: [] };
  let settingsError: string | null = null;
  try {
    settings = diffSettings(await readSettings(servers.base.url), await readSettings(servers.head.url));
  } catch (error) {
    settingsError = clean(error);
    logger.info(`warning: the servers' settings could not be compared: ${settingsError}`);
  }
  const side = async (spec: ServerSpec, server: Server): Promise<ServerSide> => {
    let sessions: { keeps: boolean | null; note: string } = { keeps: true, note: 'a server the gate started' };
    if (spec.kind === 'database-url') {
      try {
        sessions = await probeSessions(server.url);
      } catch (error) {
        sessions = { keeps: null, note: `could not be told: ${clean(error)}` };
      }
    }
    return {
      version: server.version,
      kind: server.kind,
      description: server.description,
      url: spec.kind === 'database-url' ? maskUrl(spec.url) : null,
      postgres_config: spec.kind === 'database-url' ? {} : spec.settings,
      keeps_sessions: sessions.keeps,
      sessions_note: sessions.note,
    };
  };
  const base = await side(specs.base, servers.base);
  const head = await side(specs.head, servers.head);
  const report: ServersReport = {
    base,
    head,
    ...settings,
    settings_error: settingsError,
    session_features: findSessionFeatures(workload.examples()),
    sessions_lost_on_head: base.keeps_sessions === true && head.keeps_sessions === false,
  };
  logger.info(
    `servers: base PostgreSQL ${base.version}, head PostgreSQL ${head.version}; ${plural(report.settings.length, 'setting')} ${report.settings.length === 1 ? 'differs' : 'differ'}` +
      (head.keeps_sessions === false ? `; head's server does not keep a client on one server connection (${head.sessions_note})` : ''),
  );
  return report;
}

/**
 * What the report should warn about the servers (what is not a verdict).
 * @param servers the servers part of the report
 * @returns warning lines
 */
export function serverWarnings(servers: ServersReport): string[] {
  const warnings: string[] = [];
  const features = servers.session_features.length;
  if (servers.sessions_lost_on_head && features === 0) {
    warnings.push(
      "head's server does not keep a client on one server connection (a transaction pooler); no statement of the workload depends on that",
    );
  }
  if (servers.base.keeps_sessions === false && features > 0) {
    warnings.push(
      `base's server does not keep a client on one server connection either: ${plural(features, 'statement group')} of the workload that depend on session state may fail or misbehave on both sides (workload fidelity, not gated)`,
    );
  }
  for (const [side, s] of [
    ['base', servers.base],
    ['head', servers.head],
  ] as const) {
    if (s.keeps_sessions === null) warnings.push(`whether ${side}'s server keeps a client on one server connection ${s.sessions_note}`);
  }
  return warnings;
}
