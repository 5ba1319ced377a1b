/** `inspect <file.wkl>`: what a workload holds, as text or JSON. Replays nothing. */
import { z } from 'zod';
import { inspectWorkload } from '../engine.js';
import { ExitCode } from '../exit-codes.js';
import { renderWorkloadSummary } from '../format/workload-summary.js';
import type { CommandSpec } from './argv.js';
import { readCaptureSidecar } from './capture-sidecar.js';
import { fromEngineError } from './engine-errors.js';
import type { Io } from './io.js';
import { filePath, flag, numberValue } from './option-types.js';

const DEFAULT_TOP = 10;

const options = {
  file: {
    shape: 'positional',
    placeholder: '<file.wkl>',
    help: 'the workload profile',
    schema: filePath('the .wkl workload to inspect'),
  },
  json: { shape: 'flag', help: 'print the summary as JSON instead of text', schema: flag },
  top: {
    shape: 'value',
    placeholder: 'N',
    help: `list the N most frequent fingerprints (default ${DEFAULT_TOP})`,
    schema: numberValue('a whole number of fingerprints, 0 or more', (n) => n >= 0, true).optional(),
  },
} as const;

const schema = z
  .object({ file: options.file.schema, json: options.json.schema, top: options.top.schema })
  .transform((raw) => ({ file: raw.file, json: raw.json, top: raw.top ?? DEFAULT_TOP }));

export type InspectConfig = z.output<typeof schema>;

export const inspectCommand: CommandSpec<InspectConfig> = {
  name: 'inspect',
  summary:
    'Summarise a captured workload (.wkl): sessions, statements by kind, transactions, duration, classification, top fingerprints ' +
    'by calls and by time, and what its capture sidecar (W.wkl.capture.json) says: failed statements, left out, incomplete capture.',
  options,
  schema,
};

/**
 * Runs `inspect`.
 * @param config validated options
 * @param io where to print
 * @returns the exit status
 */
export async function runInspect(config: InspectConfig, io: Io): Promise<ExitCode> {
  let inspection;
  try {
    inspection = await inspectWorkload(config.file, config.top);
  } catch (error) {
    throw fromEngineError(error);
  }
  const capture = readCaptureSidecar(config.file);
  io.stdout.write(
    config.json
      ? `${JSON.stringify({ file: config.file, ...inspection, ...(capture ? { capture } : {}) }, null, 2)}\n`
      : renderWorkloadSummary(config.file, inspection, capture),
  );
  return ExitCode.Ok;
}
