/** `proxy --listen HOST:PORT --target URL --output W.wkl`: a recording proxy, until a signal or --duration. */
import fs from 'node:fs';
import path from 'node:path';
import { type ProxySummary, startProxy } from '../engine/index.js';
import { fromEngineError } from '../engine/errors.js';
import { ExitCode, InputError } from '../exit-codes.js';
import { fields } from '../format/table.js';
import { count, plural, span } from '../format/units.js';
import type { Io } from '../runtime/io.js';
import { trapInterrupts } from '../runtime/interrupt.js';
import { byReason, warningLines } from './capture.js';
import type { ProxyConfig } from './proxy-options.js';

/**
 * Runs `proxy`. SIGINT or SIGTERM is the normal way to end it: the workload is written and the
 * status is 0; a second signal exits at once (nothing written).
 * @param config validated options
 * @param io where to print
 * @returns the exit status (0; failures are thrown)
 */
export async function runProxy(config: ProxyConfig, io: Io): Promise<ExitCode> {
  const outDir = path.dirname(path.resolve(config.output));
  if (!fs.existsSync(outDir)) throw new InputError(`option --output: the directory ${outDir} does not exist; create it first`);
  for (const [option, file] of [
    ['--tls-cert', config.tlsCert],
    ['--tls-key', config.tlsKey],
  ] as const) {
    if (file !== undefined && !fs.existsSync(file)) throw new InputError(`option ${option}: ${file} does not exist; give a PEM file`);
  }
  const interrupt = trapInterrupts((name) =>
    io.stderr.write(
      `proxy: ${name} received, no new clients; writing ${config.output} once open sessions end (a second signal exits at once)\n`,
    ),
  );
  try {
    let summary: ProxySummary;
    try {
      const proxy = await startProxy({
        listen: config.listen,
        target: config.target,
        output: config.output,
        durationMs: config.durationMs,
        graceMs: config.graceMs,
        includeNoise: config.includeNoise,
        tlsCert: config.tlsCert,
        tlsKey: config.tlsKey,
      });
      io.stderr.write(
        `proxy: listening on ${proxy.address}; point clients there. ${config.durationMs ? `Stops after ${span(config.durationMs * 1000)}, or on` : 'Stops on'} Ctrl-C or SIGTERM and writes ${config.output}\n`,
      );
      if (interrupt.signal.aborted) proxy.stop();
      interrupt.signal.addEventListener('abort', () => proxy.stop(), { once: true });
      summary = await proxy.result();
    } catch (error) {
      throw fromEngineError(error, config.target);
    }
    io.stdout.write(config.json ? `${JSON.stringify(summary, null, 2)}\n` : renderProxySummary(summary));
    return ExitCode.Ok;
  } finally {
    interrupt.dispose();
  }
}

/**
 * The text summary of a proxy capture.
 * @param s the summary
 * @returns text ending in a newline
 */
export function renderProxySummary(s: ProxySummary): string {
  const lines = fields([
    ['workload', `${s.workload} (sidecar ${s.sidecar})`],
    ['relayed', `${plural(s.connections, 'connection')} from ${s.listen} to ${s.target}`],
    ['sessions', count(s.sessions)],
    ['statements', `${count(s.statements)}${s.failed_statements > 0 ? ` (${count(s.failed_statements)} failed at capture time)` : ''}`],
    ['returned rows', `${plural(s.statements_with_returned_rows, 'statement')} with the rows RETURNING or a sequence call gave back`],
    ['time span', `${s.first_statement_at ?? '–'}, ${span(s.duration_us)}`],
    ['left out', byReason(s.excluded)],
    ['not replayable', byReason(s.not_replayable)],
  ]);
  lines.push(...warningLines(s));
  return `${lines.join('\n')}\n`;
}
