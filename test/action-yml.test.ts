// action.yml against the code: its inputs are exactly the gate's options plus the action's
// own, its outputs exactly the ones the action sets, and inputs are read and validated the way
// the runner passes them (INPUT_<NAME>), with errors naming the input.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { gateOptions } from '../src/gate/options.js';
import { actionOptions, inputNames, readActionOptions, readGateConfig } from '../src/action/inputs.js';
import { Output } from '../src/action/names.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const action = parse(fs.readFileSync(`${root}/action.yml`, 'utf8')) as {
  inputs: Record<string, { description: string; default?: string }>;
  outputs: Record<string, { description: string }>;
  runs: Record<string, string>;
};

/** Reads inputs from a plain object, as core.getInput reads them from the environment. */
const reader = (inputs: Record<string, string>) => (name: string) => inputs[name] ?? '';

describe('action.yml', () => {
  it('declares every gate option and every action-only input, and nothing else', () => {
    const declared = Object.keys(action.inputs);
    const missing = inputNames().filter((name) => !declared.includes(name));
    const unknown = declared.filter((name) => !inputNames().includes(name));
    // A gate option added to src/gate/options.ts must be added to action.yml's inputs too.
    expect({ missing, unknown }, 'action.yml inputs vs the gate schema plus src/action/inputs.ts').toEqual({ missing: [], unknown: [] });
    expect(inputNames()).toEqual(expect.arrayContaining(Object.keys(gateOptions)));
    for (const [name, input] of Object.entries(action.inputs)) expect(input.description, name).toBeTruthy();
  });

  it('declares exactly the outputs the action sets', () => {
    expect(Object.keys(action.outputs).sort()).toEqual(Object.values(Output).sort());
  });

  it('runs on node24 with a post step, from dist/', () => {
    expect(action.runs).toEqual({ using: 'node24', main: 'dist/index.js', post: 'dist/post.js' });
  });

  it('gives the action-only inputs defaults the code agrees with', () => {
    expect(action.inputs['github-token']!.default).toBe('${{ github.token }}');
    const fromYml = readActionOptions(
      reader(Object.fromEntries(Object.keys(actionOptions).map((n) => [n, action.inputs[n]!.default ?? '']))),
    );
    const fromCode = readActionOptions(reader({ 'github-token': '${{ github.token }}' }));
    expect(fromYml).toEqual(fromCode);
    expect(fromCode).toMatchObject({ mode: 'gate', comment: 'always', 'comment-id': 'default', 'fail-on-regression': true });
  });
});

describe('inputs', () => {
  it('builds the gate config from input strings, lists one per line', () => {
    const config = readGateConfig(
      reader({
        workload: 'db/w.wkl',
        migrations: 'db/migrations/*.sql\n db/extra.sql \n',
        'p95-threshold': '15%',
        'postgres-config': 'work_mem=16MB\nshared_buffers=256MB',
        'head-postgres-version': '17',
        'head-postgres-config': 'work_mem=1MB',
      }),
    );
    expect(config.schema).toEqual({ kind: 'files', head: ['db/migrations/*.sql', 'db/extra.sql'], base: undefined });
    expect(config.thresholds.p95Threshold).toBeCloseTo(0.15);
    expect(config.servers).toEqual({
      base: { kind: 'auto', major: undefined, settings: { work_mem: '16MB', shared_buffers: '256MB' } },
      head: { kind: 'auto', major: 17, settings: { work_mem: '1MB', shared_buffers: '256MB' } },
    });
  });

  it.each([
    [{ workload: 'w.wkl', migrations: 'm.sql', 'p95-threshold': '20' }, /^input `p95-threshold`: expected a percentage such as 20%/],
    [{ workload: 'w.wkl' }, /^input `migrations`: is required: .*give input `migrate-command`/],
    [
      { workload: 'w.wkl', migrations: 'm.sql', 'database-url': 'mysql://u:hunter22@h/db' },
      /^input `database-url`: expected a URL such as postgres:/,
    ],
  ])('names the input in a one-line error: %j', (inputs, message) => {
    expect(() => readGateConfig(reader(inputs))).toThrow(message);
  });

  it('rejects a bad comment policy and comment-id in one line each', () => {
    expect(() => readActionOptions(reader({ comment: 'sometimes' }))).toThrow(
      "input `comment`: expected one of always, on-regression, never, got 'sometimes'",
    );
    expect(() => readActionOptions(reader({ 'comment-id': 'a b' }))).toThrow(/^input `comment-id`: expected up to 64 letters/);
    expect(() => readActionOptions(reader({ 'fail-on-regression': 'maybe' }))).toThrow(
      /^input `fail-on-regression`: expected true or false/,
    );
  });

  it('never repeats a password from a bad database-url', () => {
    expect(() => readGateConfig(reader({ workload: 'w.wkl', migrations: 'm.sql', 'database-url': 'mysql://u:hunter22@h/db' }))).not.toThrow(
      /hunter22/,
    );
  });
});
