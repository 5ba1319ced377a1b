/**
 * Ctrl-C and SIGTERM (a CI job being cancelled) become an AbortSignal, so that the command can
 * stop the replay and the server it started, in that order, and exit 130. A second signal
 * means "now": we exit at once, and the server's supervisor process, which notices that we are
 * gone, still stops it and removes its directory.
 */
import { ExitCode } from '../exit-codes.js';

export interface Interrupt {
  signal: AbortSignal;
  /** Removes the handlers. */
  dispose(): void;
}

/**
 * Installs SIGINT/SIGTERM handlers for the duration of a command.
 * @param onFirst called on the first signal, with its name (to say what happens next)
 * @returns the signal and a dispose function
 */
export function trapInterrupts(onFirst: (name: string) => void): Interrupt {
  const controller = new AbortController();
  const handler = (name: NodeJS.Signals) => {
    if (controller.signal.aborted) process.exit(ExitCode.Interrupted);
    onFirst(name);
    controller.abort(new Error(`received ${name}`));
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return {
    signal: controller.signal,
    dispose() {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
    },
  };
}
