/** What a run reports as it goes: the CLI prints it, the action groups it. */
export interface Logger {
  info(message: string): void;
  debug(message: string): void;
}

/** A logger that drops everything (tests, library use). */
export const silentLogger: Logger = { info() {}, debug() {} };
