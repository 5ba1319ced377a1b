/**
 * The gate's {@link Logger} on the runner's log, with every registered secret replaced before a
 * line is written. The runner masks registered secrets itself; this keeps the promise also where
 * the raw output is read without the runner (a local run, the end-to-end test).
 */
import * as core from '@actions/core';
import type { Logger } from '../runtime/logger.js';
import type { Output } from '../runtime/io.js';
import { redact } from '../provision/url.js';
import { encodedForms } from './secret-forms.js';

/** Secrets as written, found however a URL percent-encodes them. */
const secrets = new Set<string>();
/** Their base64 and hex forms, found as they are (they have no URL form worth looking for). */
const encoded = new Set<string>();

/**
 * Registers a secret, and its encoded forms, with the runner (`::add-mask::`) and with the
 * action's own output.
 * @param secret a password or token; empty values are ignored
 */
export function addSecret(secret: string | undefined): void {
  if (!secret) return;
  for (const form of new Set([secret, encodeURIComponent(secret)])) {
    core.setSecret(form);
    secrets.add(form);
  }
  for (const form of encodedForms(secret)) {
    core.setSecret(form);
    encoded.add(form);
  }
}

/**
 * The text with every registered secret masked.
 * @param text anything about to be written
 * @returns the safe text
 */
export function scrub(text: string): string {
  let out = text;
  for (const secret of secrets) out = redact(out, secret);
  for (const form of encoded) out = out.replaceAll(form, '****');
  return out;
}

/**
 * A value (a report) with every string in it scrubbed, for files a later step uploads.
 * @param value JSON-like data
 * @returns a scrubbed copy
 */
export function scrubDeep<T>(value: T): T {
  if (typeof value === 'string') return scrub(value) as T;
  if (Array.isArray(value)) return value.map((item) => scrubDeep(item)) as T;
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, scrubDeep(item)])) as T;
  return value;
}

/** The logger the gate writes through. */
export const actionLogger: Logger = {
  info: (message) => core.info(scrub(message)),
  debug: (message) => core.debug(scrub(message)),
};

/** Progress lines of the replays, on the log. */
export const progressOutput: Output = {
  write: (text: string) => process.stdout.write(scrub(text)),
  isTTY: false,
};
