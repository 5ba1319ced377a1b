/**
 * The action's inputs → one typed {@link ActionSettings}. The gate's inputs go through the gate's
 * own option schema (src/gate/options.ts, whose option names are the input names), so
 * the CLI and the action cannot drift apart; the inputs only the action has are declared here.
 * Nothing else in the action reads an input.
 */
import { z } from 'zod';
import { booleanValue, choice, filePath, listValue } from '../options/values.js';
import { capacityCommand, type CapacityConfig, capacityOptions } from '../capacity/options.js';
import { type GateConfig, gateCommand, gateOptions } from '../gate/options.js';
import { InputError } from '../exit-codes.js';
import { ActionInput } from './names.js';

export const MODES = ['gate', 'comment', 'capacity', 'aggregate'] as const;
export const COMMENT_POLICIES = ['always', 'on-regression', 'never'] as const;

/** Inputs of the action only (the gate's are `gateOptions`), with the help action.yml repeats. */
export const actionOptions = {
  [ActionInput.Mode]: {
    help: 'gate: run the gate (the default; with `shard`, one part of a sharded run); comment: post the report of an earlier run (`report`), for a workflow_run workflow; capacity: sweep concurrency and gate on lost headroom (docs/capacity.md); aggregate: pool the partial reports of a sharded run (`partials`) into one verdict (docs/scale-out.md)',
    schema: choice(MODES)
      .optional()
      .transform((mode) => mode ?? 'gate'),
  },
  [ActionInput.GithubToken]: {
    help: 'the token that writes the PR comment (needs pull-requests: write)',
    schema: z.string().optional(),
  },
  [ActionInput.Comment]: {
    help: 'always (the default), on-regression (create a comment only for a regression or an error; an existing one is always updated), never',
    schema: choice(COMMENT_POLICIES)
      .optional()
      .transform((policy) => policy ?? 'always'),
  },
  [ActionInput.CommentId]: {
    help: 'tells this gate\'s comment from other gates\' in the same repository (letters, digits, ".", "_", "-")',
    schema: z
      .string()
      .optional()
      .transform((id, ctx) => {
        const value = id ?? 'default';
        if (/^[A-Za-z0-9._-]{1,64}$/.test(value)) return value;
        ctx.addIssue({ code: 'custom', message: `expected up to 64 letters, digits, '.', '_' or '-', got '${value}'` });
        return z.NEVER;
      }),
  },
  [ActionInput.FailOnRegression]: {
    help: 'fail the step on a regression (default true); errors always fail it',
    schema: booleanValue(true),
  },
  [ActionInput.Report]: {
    help: 'mode comment: the JSON report (json-report-path) of the gate run to post',
    schema: filePath('the JSON report to post').optional(),
  },
  [ActionInput.BaselineReport]: {
    help: 'without a pull request and without base-ref: the JSON report of an earlier run to compare this commit with (weaker than a base commit: see docs/action.md)',
    schema: filePath('the baseline JSON report').optional(),
  },
  [ActionInput.ReportDir]: {
    help: 'where the report files are written (default: a directory under RUNNER_TEMP)',
    schema: filePath('the report directory').optional(),
  },
  [ActionInput.Partials]: {
    help: 'mode aggregate: the partial reports of the shards (json-report-path of each `shard` job, downloaded as artifacts), paths or globs, one per line',
    schema: listValue('partial report file'),
  },
  [ActionInput.AllowUntrustedPrCode]: {
    help: "run mode gate or capacity on pull_request_target or workflow_run, where the checked-out code (migrations, migrate-command, seed-command) runs with the workflow's write token and secrets in reach (default false: refused)",
    schema: booleanValue(false),
  },
} as const;

const actionSchema = z.object(
  Object.fromEntries(Object.entries(actionOptions).map(([name, def]) => [name, def.schema])) as {
    [K in keyof typeof actionOptions]: (typeof actionOptions)[K]['schema'];
  },
);

export type ActionOptions = z.output<typeof actionSchema>;

/** The sweep's options that are inputs (report files are the action's business). */
const capacityInputNames = Object.keys(capacityOptions).filter((name) => !['markdown', 'json', 'svg'].includes(name));

/** Inputs of `mode: capacity` that the gate does not have. */
export function capacityOnlyInputs(): string[] {
  return capacityInputNames.filter((name) => !(name in gateOptions));
}

/** Every input name the action accepts: the gate's options, the sweep's own, then the action's own. */
export function inputNames(): string[] {
  return [...Object.keys(gateOptions), ...capacityOnlyInputs(), ...Object.keys(actionOptions)];
}

/** Reads one input as the runner passes it (`INPUT_<NAME>`, name upper-cased, spaces as `_`). */
export type InputReader = (name: string) => string;

/**
 * Reads inputs from a copy of the environment taken now, as `core.getInput` reads them: the
 * `INPUT_*` variables are then removed from the environment that commands inherit
 * (src/action/child-env.ts), and the inputs stay readable.
 * @param env the runner's environment
 * @returns the reader ('' for an input not given; values trimmed)
 */
export function inputReader(env: NodeJS.ProcessEnv): InputReader {
  const inputs = { ...env };
  return (name) => (inputs[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] ?? '').trim();
}

/**
 * The action's own inputs, validated.
 * @param read reads an input ('' when not given)
 * @returns the settings
 * @throws InputError naming the input
 */
export function readActionOptions(read: InputReader): ActionOptions {
  return parse(actionSchema, rawInputs(read, Object.keys(actionOptions)));
}

/**
 * The gate's inputs, validated by the gate's schema into the gate's config.
 * @param read reads an input ('' when not given)
 * @returns the gate config (report files are the action's business: `outputs` stays empty)
 * @throws InputError naming the input
 */
export function readGateConfig(read: InputReader): GateConfig {
  return parse(gateCommand.schema, rawInputs(read, Object.keys(gateOptions)));
}

/**
 * `mode: capacity`'s inputs, validated by the sweep's schema (the same as `capacity`'s flags).
 * @param read reads an input ('' when not given)
 * @returns the capacity config (its report files stay unset)
 * @throws InputError naming the input
 */
export function readCapacityConfig(read: InputReader): CapacityConfig {
  return parse(capacityCommand.schema, rawInputs(read, capacityInputNames));
}

/** An input's raw value, or undefined when empty (the runner passes every declared input, '' when unset). */
function rawInputs(read: InputReader, names: string[]): Record<string, string> {
  const raw: Record<string, string> = {};
  for (const name of names) {
    const value = read(name);
    if (value.trim() !== '') raw[name] = value;
  }
  return raw;
}

function parse<T>(schema: z.ZodType<T>, raw: Record<string, string>): T {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const name = typeof issue.path[0] === 'string' ? issue.path[0] : undefined;
  // The shared schema speaks of CLI flags (`--base-ref`); here they are inputs.
  const message = issue.message.replace(/--([a-z0-9][a-z0-9-]*)/g, 'input `$1`');
  throw new InputError(name === undefined ? message : `input \`${name}\`: ${message}`);
}
