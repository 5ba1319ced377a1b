/** `inspect <file.wkl>`: what a workload holds, as text or JSON. Replays nothing. */
import { z } from 'zod';
import { compareWorkloads, inspectWorkload, type WorkloadComparison } from '../engine/index.js';
import { ExitCode } from '../exit-codes.js';
import { renderComparison, renderCondenseSummary } from '../format/workload-comparison.js';
import { renderWorkloadSummary } from '../format/workload-summary.js';
import type { CommandSpec } from '../options/argv.js';
import { readCaptureSidecar } from '../sidecars/capture.js';
import { CONDENSE_DEFAULTS, keepOptions } from './condense-options.js';
import { readCondenseSidecar } from '../sidecars/condense.js';
import { fromEngineError } from '../engine/errors.js';
import type { Io } from '../runtime/io.js';
import type { WorkloadInspection } from '../types.js';
import { filePath, flag, numberValue } from '../options/values.js';

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
  against: {
    shape: 'value',
    placeholder: 'FILE',
    help: 'the workload this one was condensed from: compare the fingerprint mix, calls per fingerprint, concurrency and duration, and say what was dropped',
    schema: z.string().min(1).optional(),
  },
  'min-share': { ...keepOptions['min-share'], help: "with --against: the hot share (default: the condense sidecar's, else 1%)" },
  'min-calls': {
    ...keepOptions['min-calls'],
    help: "with --against: calls a hot fingerprint needs to be gated (default: the condense sidecar's, else 20)",
  },
} as const;

const schema = z
  .object({
    file: options.file.schema,
    json: options.json.schema,
    top: options.top.schema,
    against: options.against.schema,
    'min-share': options['min-share'].schema,
    'min-calls': options['min-calls'].schema,
  })
  .transform((raw) => ({
    file: raw.file,
    json: raw.json,
    top: raw.top ?? DEFAULT_TOP,
    against: raw.against,
    minShare: raw['min-share'],
    minCalls: raw['min-calls'],
  }));

export type InspectConfig = z.output<typeof schema>;

export const inspectCommand: CommandSpec<InspectConfig> = {
  name: 'inspect',
  summary:
    'Summarise a captured workload (.wkl): sessions, statements by kind, transactions, duration, classification, top fingerprints ' +
    'by calls and by time, and what its capture sidecar (W.wkl.capture.json) says: failed statements, left out, incomplete capture; ' +
    'for a condensed workload, what condense kept and dropped (W.wkl.condense.json, or --against the original).',
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
  let inspection: WorkloadInspection;
  try {
    inspection = await inspectWorkload(config.file, config.top);
  } catch (error) {
    throw fromEngineError(error);
  }
  const capture = readCaptureSidecar(config.file);
  const condensed = readCondenseSidecar(config.file);
  let comparison: WorkloadComparison | undefined;
  if (config.against !== undefined) {
    const minShare = config.minShare ?? condensed?.comparison.min_share ?? CONDENSE_DEFAULTS.minShare;
    const minCalls = config.minCalls ?? condensed?.comparison.min_calls ?? CONDENSE_DEFAULTS.minCalls;
    try {
      comparison = await compareWorkloads(config.file, config.against, minShare, minCalls);
    } catch (error) {
      throw fromEngineError(error);
    }
  }
  if (config.json) {
    const extra = { ...(capture ? { capture } : {}), ...(condensed ? { condense: condensed } : {}), ...(comparison ? { comparison } : {}) };
    io.stdout.write(`${JSON.stringify({ file: config.file, ...inspection, ...extra }, null, 2)}\n`);
    return ExitCode.Ok;
  }
  let text = renderWorkloadSummary(config.file, inspection, capture);
  // What condense recorded; a fresh comparison (--against) takes the place of the recorded one.
  if (condensed) text += `\n${renderCondenseSummary(comparison ? { ...condensed, comparison } : condensed)}`;
  else if (comparison) text += `\ncompared with ${config.against}:\n${renderComparison(comparison).join('\n')}\n`;
  io.stdout.write(text);
  return ExitCode.Ok;
}
