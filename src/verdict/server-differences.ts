/**
 * What differs between base's and head's servers, for the report: the versions, the settings
 * as the servers themselves report them (pg_settings), where each is, and whether each keeps a
 * client on one server connection. Pure functions of what was read; reading is gate/server-facts.ts.
 */
import type { ServersReport, SettingDifference } from './report-types.js';

/**
 * Settings that differ between any two servers of one machine whatever the change under test:
 * where the instance keeps its files and listens, and the version (reported on its own).
 */
const INSTANCE_SETTINGS = new Set([
  'port',
  'listen_addresses',
  'unix_socket_directories',
  'data_directory',
  'config_file',
  'hba_file',
  'ident_file',
  'external_pid_file',
  'krb_server_keyfile',
  'stats_temp_directory',
  'server_version',
  'server_version_num',
  'application_name',
  'cluster_name',
]);

/**
 * The settings that differ.
 * @param base name → value on base's server
 * @param head name → value on head's server
 * @returns values that differ (by name), and names only one side has
 */
export function diffSettings(
  base: ReadonlyMap<string, string>,
  head: ReadonlyMap<string, string>,
): { settings: SettingDifference[]; only_base: string[]; only_head: string[] } {
  const settings: SettingDifference[] = [];
  const onlyBase: string[] = [];
  for (const [name, value] of base) {
    if (INSTANCE_SETTINGS.has(name)) continue;
    const other = head.get(name);
    if (other === undefined) onlyBase.push(name);
    else if (other !== value) settings.push({ name, base: value, head: other });
  }
  const onlyHead = [...head.keys()].filter((name) => !base.has(name) && !INSTANCE_SETTINGS.has(name));
  const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return { settings: settings.sort((a, b) => byName(a.name, b.name)), only_base: onlyBase.sort(byName), only_head: onlyHead.sort(byName) };
}

/** Settings named in full in one line before "and N more". */
const SETTINGS_IN_LINE = 4;

/**
 * What differs, in one line, for the headline: `PostgreSQL 15.14 → 17.6; work_mem 4MB → 64kB;
 * head through postgres://app:****@pooler:6432/app, which does not keep sessions`.
 * @param servers the servers part of the report
 * @returns the line; `same version and settings` when nothing was found to differ
 */
export function serverDifferenceLine(servers: ServersReport): string {
  const parts: string[] = [];
  const { base, head } = servers;
  if (base.version !== head.version) parts.push(`PostgreSQL ${base.version} → ${head.version}`);
  const shown = servers.settings.slice(0, SETTINGS_IN_LINE).map((s) => `${s.name} ${s.base} → ${s.head}`);
  const more = servers.settings.length - shown.length;
  if (shown.length > 0) parts.push(shown.join(', ') + (more > 0 ? ` and ${more} more setting${more === 1 ? '' : 's'}` : ''));
  const only = servers.only_base.length + servers.only_head.length;
  if (only > 0) parts.push(`${only} setting${only === 1 ? '' : 's'} on one side only`);
  if (head.url !== null && head.url !== base.url) parts.push(`head through ${head.url}`);
  if (servers.sessions_lost_on_head) parts.push("head's server does not keep a client on one server connection");
  if (servers.settings_error !== null) parts.push(`settings not compared: ${servers.settings_error}`);
  return parts.length > 0 ? parts.join('; ') : 'same version and settings';
}
