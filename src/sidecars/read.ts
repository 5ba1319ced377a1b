/** Reading a JSON sidecar a command wrote next to a workload (`W.wkl.capture.json`, `W.wkl.condense.json`). */
import fs from 'node:fs';
import type { z } from 'zod';
import { InputError } from '../exit-codes.js';

/**
 * The sidecar at `file`, if there is one.
 * @param file the sidecar's path
 * @param schema what it must look like
 * @param format its `format` and `version`, for the message
 * @param redo how to get a good one again ("capture again")
 * @returns its content, or undefined when there is none
 * @throws InputError when the file exists but is not such a sidecar
 */
export function readSidecar<T>(file: string, schema: z.ZodType, format: string, redo: string): T | undefined {
  if (!fs.existsSync(file)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    throw new InputError(`${file} is not valid JSON (${(error as Error).message}); delete it or ${redo}`);
  }
  if (!schema.safeParse(parsed).success) {
    throw new InputError(
      `${file} is not a ${format.replace('pg-retest-action ', '')} sidecar (format "${format}", version 1); delete it or ${redo}`,
    );
  }
  return parsed as T;
}
