/**
 * The post step's work: stop whatever the main step started and did not stop, because it was
 * cancelled, timed out or killed. Normally the gate has already stopped its server (and a
 * server's supervisor stops it when its parent dies), so this finds nothing; it exists for the
 * case where both were killed. Idempotent, and it never fails the job: problems are warnings.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface CleanupReport {
  /** PIDs of servers that were still running and were stopped. */
  stoppedServers: number[];
  /** Docker containers removed. */
  removedContainers: string[];
  /** Whether the run directory existed and was removed. */
  removedRunDir: boolean;
  warnings: string[];
}

/** After SIGINT (fast shutdown), then SIGQUIT (immediate), how long before the next signal. */
const SHUTDOWN_STEPS: [NodeJS.Signals, number][] = [
  ['SIGINT', 15_000],
  ['SIGQUIT', 5_000],
  ['SIGKILL', 5_000],
];

/**
 * Stops leftover servers under the run directory, removes the directory, prunes git worktrees
 * that pointed into it, and removes Docker containers the gate labelled after `startedAt`.
 * @param runDir the main step's run directory
 * @param startedAt when the main step started (ISO 8601)
 * @param workspace the repository the base checkout was a worktree of
 * @returns what was done
 */
export async function cleanupRun(
  runDir: string | undefined,
  startedAt: string | undefined,
  workspace: string | undefined,
): Promise<CleanupReport> {
  const report: CleanupReport = { stoppedServers: [], removedContainers: [], removedRunDir: false, warnings: [] };
  if (runDir && fs.existsSync(runDir)) {
    for (const pid of leftoverPostmasters(runDir)) {
      try {
        await stopProcess(pid);
        report.stoppedServers.push(pid);
      } catch (error) {
        report.warnings.push(`could not stop PostgreSQL (pid ${pid}): ${(error as Error).message}`);
      }
    }
    try {
      fs.rmSync(runDir, { recursive: true, force: true });
      report.removedRunDir = true;
    } catch (error) {
      report.warnings.push(`could not remove ${runDir}: ${(error as Error).message}`);
    }
    if (workspace && fs.existsSync(path.join(workspace, '.git'))) {
      await run('git', ['-C', workspace, 'worktree', 'prune']).catch((error: Error) =>
        report.warnings.push(`git worktree prune: ${error.message}`),
      );
    }
  }
  if (startedAt) {
    try {
      report.removedContainers = await removeContainers(new Date(startedAt));
    } catch (error) {
      report.warnings.push(`could not remove Docker containers: ${(error as Error).message}`);
    }
  }
  return report;
}

/** Postmaster PIDs, from `postmaster.pid` files of data directories under the run directory, that are still alive. */
function leftoverPostmasters(runDir: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync(runDir)) {
    const pidFile = path.join(runDir, entry, 'data', 'postmaster.pid');
    let text: string;
    try {
      text = fs.readFileSync(pidFile, 'utf8');
    } catch {
      continue;
    }
    const pid = Number(text.split('\n')[0]);
    // Only a live process that is this data directory's server: a PID can be reused.
    if (Number.isInteger(pid) && pid > 1 && alive(pid) && commandLine(pid).includes(path.join(runDir, entry, 'data'))) pids.push(pid);
  }
  return pids;
}

/**
 * Whether a process exists (one of another user counts).
 * @param pid the process
 * @returns true while it runs
 */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function commandLine(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

async function stopProcess(pid: number): Promise<void> {
  for (const [signal, waitMs] of SHUTDOWN_STEPS) {
    try {
      process.kill(pid, signal);
    } catch {
      return; // gone
    }
    const deadline = Date.now() + waitMs;
    while (Date.now() < deadline) {
      if (!alive(pid)) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error('still running after SIGKILL');
}

/**
 * Containers with the label the docker provisioner sets, created since the main step started.
 * On a shared self-hosted runner another job's gate could have started one in that window too;
 * GitHub-hosted runners run one job per machine.
 */
async function removeContainers(since: Date): Promise<string[]> {
  let ids: string;
  try {
    ids = await run('docker', ['ps', '--all', '--quiet', '--filter', 'label=pg-retest-action=1']);
  } catch {
    return []; // no Docker here: nothing can have been started in it
  }
  const removed: string[] = [];
  for (const id of ids.split('\n').filter(Boolean)) {
    const created = new Date(await run('docker', ['inspect', '--format', '{{.Created}}', id]));
    if (!(created >= since)) continue;
    await run('docker', ['rm', '--force', '--volumes', id]);
    removed.push(id);
  }
  return removed;
}

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: 60_000, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error((stderr || error.message).trim().split('\n').pop() ?? error.message));
      else resolve(stdout.trim());
    });
  });
}
