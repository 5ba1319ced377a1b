#!/usr/bin/env node
// Entry point of the `pg-retest-action` command: run the CLI, exit with its status.
// All logic lives in src/cli/; see src/exit-codes.ts for the statuses.
import { run } from './cli/main.js';

process.exit(await run(process.argv.slice(2)));
