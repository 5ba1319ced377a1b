/** Types of socket-url.mjs. */

/** `url` with `socketDir` as its (percent-encoded) host; `url` itself when there is no directory. */
export function urlOverSocket(url: string, socketDir: string | undefined): string;
