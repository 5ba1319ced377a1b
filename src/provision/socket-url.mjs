// A server's Unix-domain socket as a URL's host. Plain JavaScript with no imports, so that the
// provisioning code (url.ts) and the scripts that run without a build (calibrate.mjs) share it.

/**
 * `url` with a socket directory as its host, percent-encoded as libpq and the engine read it
 * (`postgres://user@%2Ftmp%2Fdir:port/db`); `url` itself when there is no directory.
 * @param {string} url a postgres:// URL
 * @param {string | undefined} socketDir
 * @returns {string}
 */
export function urlOverSocket(url, socketDir) {
  if (!socketDir) return url;
  const parsed = new URL(url);
  parsed.hostname = encodeURIComponent(socketDir);
  return parsed.toString();
}
