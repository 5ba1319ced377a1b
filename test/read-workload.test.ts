// readWorkload (the binding's whole-profile reader, used by the calibration bench to rewrite a
// workload) gives back exactly what writeWorkload takes: reading a file and writing it again
// gives the same bytes, response_values and all.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readWorkload, writeWorkload } from '../src/engine/index.js';

const shop = (file: string): string => fileURLToPath(new URL(`../examples/shop/${file}`, import.meta.url));

describe('readWorkload', () => {
  for (const file of ['workload.wkl', 'checkout.wkl']) {
    it(`${file}: read and written again, byte for byte`, async () => {
      const profile = await readWorkload(shop(file));
      const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-read-')), file);
      await writeWorkload(out, profile);
      expect(fs.readFileSync(out).equals(fs.readFileSync(shop(file)))).toBe(true);
      fs.rmSync(path.dirname(out), { recursive: true, force: true });
    });
  }

  it('a file that is not a workload: rejected with E_WORKLOAD', async () => {
    const bad = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-read-')), 'bad.wkl');
    fs.writeFileSync(bad, 'not msgpack at all');
    await expect(readWorkload(bad)).rejects.toMatchObject({ code: 'E_WORKLOAD' });
  });
});
