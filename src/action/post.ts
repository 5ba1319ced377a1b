// Entry point of the action's post step (action.yml `post:`): clean up after the main step.
// It never loads the engine, and never fails the job.
import * as core from '@actions/core';
import { cleanupRun } from './cleanup.js';
import { savedState } from './state.js';

const { runDir, startedAt } = savedState();
const report = await cleanupRun(runDir, startedAt, process.env.GITHUB_WORKSPACE);
for (const warning of report.warnings) core.warning(warning);
if (report.stoppedServers.length)
  core.info(
    `stopped ${report.stoppedServers.length} PostgreSQL server(s) the main step left running (pid ${report.stoppedServers.join(', ')})`,
  );
if (report.removedContainers.length)
  core.info(`removed Docker container(s) ${report.removedContainers.map((id) => id.slice(0, 12)).join(', ')}`);
if (!report.stoppedServers.length && !report.removedContainers.length) core.info('nothing left running from the main step');
