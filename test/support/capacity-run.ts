// `capacity` as users run it (dist/cli.js) on the example shop, with its report, for the files
// that sweep: those that compare throughput (capacity.test.ts, alone) and those that check only
// counts and structure (capacity-counts.test.ts, beside the others).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { CapacityReport } from '../../src/capacity/report-types.js';
import { startPostgres } from './postgres.js';
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

/** A file's own server (max_connections = 100) and directory, and `capacity` on them. */
export interface CapacityFixture {
  readonly url: string;
  readonly tmp: string;
  capacity(name: string, args: string[], options?: { seed?: boolean }): Promise<CapacityRun>;
}

/**
 * Registers the file's hooks: a directory and a server of its own (global setup bundles the CLI), both removed
 * after the file.
 */
export function useCapacityServer(): CapacityFixture {
  let tmp: string | undefined;
  let server: Awaited<ReturnType<typeof startPostgres>> | undefined;
  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-capacity-'));
    server = await startPostgres({ settings: { max_connections: '100' } });
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });
  return {
    get url() {
      return server!.url;
    },
    get tmp() {
      return tmp!;
    },
    capacity: (name, args, options) => runCapacity(server!.url, tmp!, name, args, options),
  };
}
