/** Engine failures, mapped to the CLI's errors (and so to exit statuses) in one place. */
import { EngineError } from './index.js';
import { type CliError, InfraError, InputError, InterruptedError } from '../exit-codes.js';
import { passwordOf, redact } from '../provision/url.js';

/**
 * The CLI error for something the engine threw; anything else is returned unchanged.
 * @param error what was thrown
 * @param url the target's URL, whose password must not appear in the message
 * @returns the error to rethrow
 */
export function fromEngineError(error: unknown, url?: string): CliError | unknown {
  if (!(error instanceof EngineError)) return error;
  const message = redact(error.message, url ? passwordOf(url) : undefined);
  switch (error.code) {
    case 'E_WORKLOAD':
    case 'E_OPTIONS':
      return new InputError(message);
    case 'E_RESULTS_FILE':
      return new InputError(`${message}; check that the directory exists and is writable`);
    case 'E_CANCELLED':
      return new InterruptedError(message);
    case 'E_CONNECT':
    case 'E_ENGINE_UNAVAILABLE':
    case 'E_INTERNAL':
      return new InfraError(message);
  }
}
