/**
 * Where the gate's two sides run (docs/gate.md, "Gating server changes"). By default base and
 * head replay on one server; the `head-*` options give head a server of its own (another major,
 * other settings, or a server the user runs, such as a pooler in front of base's server);
 * `base-database-url` names base's when head has the plain `database-url`, and
 * `base-postgres-config` gives base's started server settings head's does not have (a settings
 * file as it was before the PR, so that a setting the PR removes is gone on head).
 *
 * The shared options (`database-url`, `provision`, `postgres-version`, `postgres-config`) stay
 * what they were for one server: they are base's, and head's unless a `head-*` option says
 * otherwise. That keeps every existing configuration meaning what it meant.
 */
import { z } from 'zod';
import type { OptionDefs } from '../options/argv.js';
import { postgresUrl } from '../options/postgres-url.js';
import { numberValue, separatedItems, settingsValue } from '../options/values.js';
import { SUPPORTED_MAJORS } from '../provision/binaries.js';
import { canonicalExtensionName } from '../provision/extension-table.js';

const majors = SUPPORTED_MAJORS.join(', ');

/** The ways of getting a server; `auto` takes the first that works. */
export const PROVISION_KINDS = ['auto', 'local', 'embedded', 'docker'] as const;
export type ProvisionKind = (typeof PROVISION_KINDS)[number];

/**
 * One side's server: the user's (a URL), or one the gate starts. `extensions` must be creatable
 * on it before any migration runs (provided on a started server, checked on the user's); `image`
 * is the docker provisioner's.
 */
export type ServerSpec =
  | { kind: 'database-url'; url: string; extensions?: string[] }
  | { kind: ProvisionKind; major: number | undefined; settings: Record<string, string>; extensions?: string[]; image?: string };

/**
 * Extension names, as a list, or comma- or space-separated (`postgis, vector`): lower case, each
 * once, under the name `CREATE EXTENSION` takes (`pgvector` is `vector`).
 */
const extensionsValue = z
  .union([z.string(), z.array(z.string())])
  .optional()
  .transform((raw, ctx) => {
    const items = separatedItems(raw ?? '');
    const bad = items.find((item) => !/^[A-Za-z_][A-Za-z0-9_-]*$/.test(item));
    if (bad !== undefined) {
      ctx.addIssue({ code: 'custom', message: `expected extension names such as postgis, vector or pg_trgm, got '${bad}'` });
      return z.NEVER;
    }
    return [...new Set(items.map(canonicalExtensionName))];
  });

/** The options that make extensions available on the gate's servers (docs/extensions.md). */
export const extensionOptions = {
  extensions: {
    shape: 'list',
    placeholder: 'NAME',
    help:
      'extensions the migrations create, made available before they run (docs/extensions.md): local installs their packages ' +
      '(postgis, vector, timescaledb, …) with apt, docker needs an --image with them, embedded has contrib only; e.g. postgis,vector',
    schema: extensionsValue,
  },
  image: {
    shape: 'value',
    placeholder: 'IMAGE',
    help: 'provision docker: the image to run instead of postgres:<major>, e.g. postgis/postgis:16-3.5, pgvector/pgvector:pg16, timescale/timescaledb:latest-pg16',
    schema: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._/:@-]*$/, 'expected a Docker image such as postgis/postgis:16-3.5')
      .optional(),
  },
} as const satisfies OptionDefs;

/** Base's server, and head's when it is another one (null: head replays on base's server). */
export interface ServerPlan {
  base: ServerSpec;
  head: ServerSpec | null;
}

/** The options that give head (or base) a server of its own. */
export const headServerOptions = {
  'base-database-url': {
    shape: 'value',
    placeholder: 'URL',
    help: "base's server when head runs on another one (--head-database-url, or --database-url for head); the user needs CREATEDB",
    schema: postgresUrl.optional(),
  },
  'head-database-url': {
    shape: 'value',
    placeholder: 'URL',
    help: "replay head on this server instead of base's, e.g. a connection pooler in front of it; base's migrations, the seed and head's migrations are built there too (the user needs CREATEDB)",
    schema: postgresUrl.optional(),
  },
  'head-postgres-version': {
    shape: 'value',
    placeholder: 'MAJOR',
    help: `start a second server of this major for head (${majors}), to gate an upgrade; base keeps --postgres-version`,
    schema: numberValue(
      `a PostgreSQL major version: ${majors}`,
      (n) => (SUPPORTED_MAJORS as readonly number[]).includes(n),
      true,
    ).optional(),
  },
  'head-postgres-config': {
    shape: 'list',
    placeholder: 'NAME=VALUE',
    help: 'start a second server for head with these settings on top of --postgres-config, to gate a settings change, e.g. work_mem=1MB',
    schema: settingsValue,
  },
  'base-postgres-config': {
    shape: 'list',
    placeholder: 'NAME=VALUE',
    help: "settings of base's server only, on top of --postgres-config (head runs on a server of its own without them): base's settings file when the PR changes it",
    schema: settingsValue,
  },
} as const satisfies OptionDefs;

/** The raw values the plan is made from. */
export interface RawServerOptions {
  'database-url'?: string;
  'base-database-url'?: string;
  'head-database-url'?: string;
  provision?: ProvisionKind;
  'postgres-version'?: number;
  'postgres-config': Record<string, string>;
  'head-postgres-version'?: number;
  'head-postgres-config': Record<string, string>;
  'base-postgres-config': Record<string, string>;
  extensions?: string[];
  image?: string;
}

/**
 * The problems with a combination of server options, as (option, message) pairs.
 * @param raw parsed values
 * @returns nothing when the combination is valid
 */
export function serverOptionIssues(raw: RawServerOptions): [option: string, message: string][] {
  const issues: [string, string][] = [];
  const startsHead = raw['head-postgres-version'] !== undefined || Object.keys(raw['head-postgres-config']).length > 0;
  if (raw['database-url'] !== undefined && raw['base-database-url'] !== undefined && raw['head-database-url'] !== undefined) {
    issues.push(['database-url', 'is not used when --base-database-url and --head-database-url are both given; drop it']);
  }
  const headUrl = raw['head-database-url'] ?? raw['database-url'];
  if (Object.keys(raw['base-postgres-config']).length > 0 && (raw['base-database-url'] ?? raw['database-url']) !== undefined) {
    issues.push(['base-postgres-config', "applies to a base server the gate starts; set these on base's server behind the URL yourself"]);
  }
  if (startsHead && headUrl !== undefined) {
    const name = raw['head-postgres-version'] !== undefined ? 'head-postgres-version' : 'head-postgres-config';
    issues.push([
      name,
      raw['head-database-url'] !== undefined
        ? 'applies to a head server the gate starts; it cannot be combined with --head-database-url'
        : "applies to a head server the gate starts, and --database-url is head's server too; give base's server as --base-database-url instead",
    ]);
  }
  const plan = planServers(raw);
  const starts = [plan.base, plan.head].some((spec) => spec !== null && spec.kind !== 'database-url');
  if (starts && raw.image !== undefined && raw.provision !== 'docker') {
    // Under auto, local would come first and the image would be silently left unused.
    issues.push(['image', `is the docker provisioner's: add --provision docker${raw.provision ? ` instead of ${raw.provision}` : ''}`]);
  }
  if (!starts) {
    if (raw.image !== undefined) issues.push(['image', 'applies to a server the gate starts; it cannot be combined with --database-url']);
    for (const name of ['provision', 'postgres-version'] as const) {
      if (raw[name] !== undefined) issues.push([name, 'applies to a server the gate starts; it cannot be combined with --database-url']);
    }
    if (Object.keys(raw['postgres-config']).length > 0) {
      issues.push(['postgres-config', 'applies to a server the gate starts; set these on the server behind --database-url yourself']);
    }
  }
  return issues;
}

/**
 * Which server each side replays on.
 * @param raw parsed values (valid: see {@link serverOptionIssues})
 * @returns base's server, and head's when it differs
 */
export function planServers(raw: RawServerOptions): ServerPlan {
  const extensions = raw.extensions ?? [];
  const started = (major: number | undefined, settings: Record<string, string>): ServerSpec => ({
    kind: raw.provision ?? 'auto',
    major,
    settings,
    ...(extensions.length > 0 ? { extensions } : {}),
    ...(raw.image !== undefined ? { image: raw.image } : {}),
  });
  const user = (url: string): ServerSpec => ({ kind: 'database-url', url, ...(extensions.length > 0 ? { extensions } : {}) });
  const baseUrl = raw['base-database-url'] ?? raw['database-url'];
  const base =
    baseUrl !== undefined ? user(baseUrl) : started(raw['postgres-version'], { ...raw['postgres-config'], ...raw['base-postgres-config'] });
  const separate =
    raw['base-database-url'] !== undefined ||
    Object.keys(raw['base-postgres-config']).length > 0 ||
    raw['head-database-url'] !== undefined ||
    raw['head-postgres-version'] !== undefined ||
    Object.keys(raw['head-postgres-config']).length > 0;
  if (!separate) return { base, head: null };
  // With base-database-url, database-url is head's server.
  const headUrl = raw['head-database-url'] ?? raw['database-url'];
  const head =
    headUrl !== undefined
      ? user(headUrl)
      : started(raw['head-postgres-version'] ?? raw['postgres-version'], { ...raw['postgres-config'], ...raw['head-postgres-config'] });
  return { base, head };
}
