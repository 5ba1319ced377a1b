// Entry point of the action's main step (action.yml `main:`): run it and exit with its status.
// An explicit exit, because nothing may keep the step alive once the report is out.
import { run } from './main.js';

process.exit(await run());
