// `capacity` as users run it (dist/cli.js) on the example shop, with its report, for the files
// that sweep: those that compare throughput (capacity.test.ts, alone) and those that check only
// counts and structure (capacity-counts.test.ts, beside the others).
import fs from 'node:fs';
import path from 'node:path';
import type { CapacityReport } from '../../src/capacity/report-types.js';
import { runCli, shop } from './shop-gate.js';

export interface CapacityRun {
  code: number | null;
  stdout: string;
  stderr: string;
  report: CapacityReport;
  svg: string;
}

/**
 * Runs `capacity` on `serverUrl` with the shop's workload and seed, unless `args` name another
 * server or workload; `seed: false` leaves the seed out (an existing database as it is). The
 * reports go to `dir`, named after `name`.
 */
export async function runCapacity(
  serverUrl: string,
  dir: string,
  name: string,
  args: string[],
  { seed = true }: { seed?: boolean } = {},
): Promise<CapacityRun> {
  const json = path.join(dir, `${name}.json`);
  const svg = path.join(dir, `${name}.svg`);
  const full = [
    'capacity',
    ...(args.includes('--database-url') ? [] : ['--database-url', serverUrl]),
    ...(args.includes('--workload') ? [] : ['--workload', shop('workload.wkl')]),
    ...(seed ? ['--seed', shop('seed.sql')] : []),
    ...(args.includes('--scale') ? [] : ['--scale', '5']),
    ...args,
    '--json',
    json,
    '--svg',
    svg,
  ];
  const run = await runCli(full);
  if (!fs.existsSync(json)) throw new Error(`no JSON report (exit ${run.code}):\n${run.stderr}`);
  const report = JSON.parse(fs.readFileSync(json, 'utf8')) as CapacityReport;
  return { ...run, report, svg: fs.existsSync(svg) ? fs.readFileSync(svg, 'utf8') : '' };
}
