// Loads a .wkl through the engine the action ships (its Node addon), in this process, and prints
// one JSON line: statements, warnings, wall and CPU milliseconds, RSS before loading and peak RSS.
// The bench runs it in a fresh Node process per file, so the peak is this load's alone.
//
//   node scripts/bench/addon-load.mjs ENGINE.node FILE.wkl
import { createRequire } from 'node:module';

const [enginePath, file] = process.argv.slice(2);
if (!enginePath || !file) {
  console.error('usage: node scripts/bench/addon-load.mjs ENGINE.node FILE.wkl');
  process.exit(2);
}
const engine = createRequire(import.meta.url)(enginePath);
const rssBefore = process.memoryUsage().rss;
const cpuBefore = process.cpuUsage();
const started = process.hrtime.bigint();
const workload = await engine.loadWorkload(file);
const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
const cpu = process.cpuUsage(cpuBefore);
console.log(
  JSON.stringify({
    statements: workload.statements,
    warnings: workload.warnings,
    wall_ms: wallMs,
    cpu_ms: (cpu.user + cpu.system) / 1000,
    rss_before_load_kb: Math.round(rssBefore / 1024),
    // maxRSS is in KiB, like ru_maxrss.
    peak_rss_kb: process.resourceUsage().maxRSS,
  }),
);
