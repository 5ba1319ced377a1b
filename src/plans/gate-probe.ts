/**
 * The gate's side of the plan probe: pg_stat_statements counters collected around each replay
 * (a {@link StatementCounterLog}), then {@link probeTemplates} once the replays are compared.
 * Nothing here fails the run: a problem becomes part of the plans report, and the verdict
 * decides what it means (verdict/decide.ts, plans/rules.ts).
 */
import type { Comparison } from '../types.js';
import type { Workload } from '../engine/index.js';
import type { Server } from '../provision/index.js';
import type { Logger } from '../runtime/logger.js';
import { passwordOf, redact } from '../provision/url.js';
import { readMigrations } from './index-changes.js';
import { probePlans, workNote } from './probe.js';
import {
  addCounters,
  type CountersByQuery,
  findStatStatements,
  hasWalCounters,
  type MeasuredCounters,
  readReplay,
  type ReplaySide,
  watchReplay,
  type Watch,
} from './stat-statements.js';
import type { PlansReport } from './types.js';

/**
 * pg_stat_statements counters of every replay (the noise replay's too), for the prober: summed
 * per side, and each replay's own for the spread of work per call between rounds.
 */
export class StatementCounterLog {
  private url: string | null = null;
  private version = '';
  private wal = false;
  /** Why the counters cannot be used; null while they can. */
  unavailable: string | null = null;
  /** The database created to hold the extension, for the caller to drop. */
  createdDatabase: string | null = null;
  /** Each replay's counters by side, in the order replayed. */
  readonly replays: Record<ReplaySide, CountersByQuery[]> = { base: [], head: [], noise: [] };
  /** Replays during which pg_stat_statements evicted entries. */
  evictions = 0;

  /**
   * @param server the run's server
   * @param statsDatabase a name for a database of the gate's own, should the extension need one
   * @param logger progress lines
   */
  constructor(
    private readonly server: Server,
    private readonly statsDatabase: string,
    private readonly logger: Logger,
  ) {}

  /** Finds pg_stat_statements on the server (see stat-statements.ts). */
  async open(): Promise<void> {
    const status = await findStatStatements(this.server.url, majorOf(this.server.version), this.statsDatabase);
    if (status.available) {
      this.url = status.url;
      this.version = status.version;
      this.createdDatabase = status.createdDatabase;
      this.wal = hasWalCounters(status.version);
      this.logger.info(
        `pg_stat_statements ${status.version}: buffers, work and server time per statement from the replays` +
          (this.wal ? '' : ` (version ${status.version} counts no WAL: 1.8 and later do; WAL per call is left out)`),
      );
    } else {
      this.unavailable = status.reason;
      this.logger.info(`pg_stat_statements not available (${status.reason}); buffers will come from EXPLAIN (ANALYZE, BUFFERS)`);
    }
  }

  /**
   * Starts watching a replay's database.
   * @param database the replay's fresh database
   * @returns the watch, or undefined when counters are not in use
   */
  async watch(database: string): Promise<Watch | undefined> {
    if (this.url === null) return undefined;
    try {
      return await watchReplay(this.url, database, this.wal);
    } catch (error) {
      this.fail(error);
      return undefined;
    }
  }

  /**
   * Keeps a finished replay's counters under its side.
   * @param side which schema the replay ran on, `noise` for base's second replay of the noise pair
   * @param watch from {@link watch}
   */
  async collect(side: ReplaySide, watch: Watch): Promise<void> {
    if (this.url === null) return;
    try {
      const replay = await readReplay(this.url, watch);
      this.replays[side].push(replay.counters);
      if (replay.evicted) {
        this.evictions++;
        this.logger.info(
          'warning: pg_stat_statements evicted entries during this replay (pg_stat_statements.max reached); some counts may be short',
        );
      }
    } catch (error) {
      this.fail(error);
    }
  }

  /**
   * What the prober needs: both sides' counters, or why there are none. The sides' sums are
   * joined to the compared calls, which the noise replay is not part of: it is left out of them.
   */
  result(): MeasuredCounters | { unavailable: string } {
    if (this.url === null) return { unavailable: this.unavailable ?? 'not used' };
    return {
      base: summed(this.replays.base),
      head: summed(this.replays.head),
      replays: this.replays,
      version: this.version,
      wal: this.wal,
      evictions: this.evictions,
    };
  }

  /** One failed read makes every replay's counters incomplete: stop using them. */
  private fail(error: unknown): void {
    const message = redact((error instanceof Error ? error.message : String(error)).split('\n')[0]!, passwordOf(this.server.url));
    this.unavailable = `reading it failed: ${message}`;
    this.url = null;
    this.logger.info(`warning: pg_stat_statements ${this.unavailable}; buffers will come from EXPLAIN (ANALYZE, BUFFERS)`);
  }
}

function summed(replays: CountersByQuery[]): CountersByQuery {
  const total: CountersByQuery = new Map();
  for (const replay of replays) addCounters(total, replay);
  return total;
}

/** Both sides' counters for the prober: from one log, or from base's and head's servers' logs. */
export type SideCounters = ReturnType<StatementCounterLog['result']>;

/**
 * The counters of each side, taken from the log of the server it replayed on.
 * @param base the log of base's server (base's replays)
 * @param head the log of head's server (head's replays); the same log when one server ran both
 * @returns both sides' counters, or why they cannot be used (one side without them would make
 *   the two sides' buffers incomparable)
 */
export function sideCounters(base: StatementCounterLog, head: StatementCounterLog): SideCounters {
  const b = base.result();
  if (base === head) return b;
  const h = head.result();
  if ('unavailable' in b) return { unavailable: `on base's server: ${b.unavailable}` };
  if ('unavailable' in h) return { unavailable: `on head's server: ${h.unavailable}` };
  return {
    base: b.base,
    head: h.head,
    // The noise replay is base's again, on base's server.
    replays: { base: b.replays.base, head: h.replays.head, noise: b.replays.noise },
    version: b.version === h.version ? b.version : `${b.version} / ${h.version}`,
    wal: b.wal && h.wal,
    evictions: b.evictions + h.evictions,
  };
}

/** Where a side's template is. */
export interface TemplateTarget {
  /** The template database's URL. */
  url: string;
  /** The major of the server it is on. */
  major: number;
}

/**
 * Probes the compared fingerprints' plans on the base and head templates.
 * @param workload for the captured example of each fingerprint
 * @param comparison which fingerprints ran on both sides, and how often
 * @param targets the templates, or null when they are gone
 * @param counters the replays' pg_stat_statements counters ({@link sideCounters})
 * @param logger progress lines
 * @param secrets passwords to keep out of messages
 * @param migrations the migration files head applied (name in reports, path), to name the line of an index change
 * @returns the plans report; a probe that failed as a whole has `error` set
 */
export async function probeTemplates(
  workload: Workload,
  comparison: Comparison,
  targets: { base: TemplateTarget; head: TemplateTarget } | null,
  counters: SideCounters,
  logger: Logger,
  secrets: (string | undefined)[],
  migrations: { name: string; path: string }[] = [],
): Promise<PlansReport> {
  try {
    if (targets === null) throw new Error('the templates are gone');
    return await probePlans({
      baseUrl: targets.base.url,
      headUrl: targets.head.url,
      majors: { base: targets.base.major, head: targets.head.major },
      examples: workload.examples(),
      fingerprints: comparison.fingerprints,
      counters,
      logger,
      migrations: readMigrations(migrations),
    });
  } catch (error) {
    let message = (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
    for (const secret of secrets) message = redact(message, secret);
    logger.info(`warning: query plans could not be probed: ${message}`);
    return {
      stats: {
        source: 'base' in counters ? 'pg_stat_statements' : 'explain-analyze',
        pg_stat_statements: 'version' in counters ? counters.version : null,
        unavailable_reason: 'unavailable' in counters ? (counters.unavailable ?? null) : null,
        unjoined: 0,
        work_note: workNote(counters),
      },
      not_explainable: 0,
      fingerprints: [],
      failures: [],
      error: message,
    };
  }
}

/**
 * The major of a server version (`17.6` → 17).
 * @param version `major.minor`
 * @returns the major, 0 when unknown
 */
export function majorOf(version: string): number {
  const major = Number.parseInt(version, 10);
  return Number.isFinite(major) ? major : 0;
}
