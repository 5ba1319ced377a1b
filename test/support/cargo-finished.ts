import fs from 'node:fs';

/**
 * Waits for the file `npm test` writes once the Rust tests have ended (PG_RETEST_CARGO_DONE):
 * files that compare timings between replays must not share the two cores with cargo. Unset
 * (vitest run on its own), there is nothing to wait for.
 */
export async function cargoFinished(): Promise<void> {
  const marker = process.env.PG_RETEST_CARGO_DONE;
  if (!marker) return;
  while (!fs.existsSync(marker)) await new Promise((resolve) => setTimeout(resolve, 1000));
}
