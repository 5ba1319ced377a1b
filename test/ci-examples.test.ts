// The GitLab and Jenkins examples (examples/gitlab, examples/jenkins) are checked for what can be
// checked without those systems: GitLab's file is valid YAML with the structure GitLab requires
// of a job (stage, script, rules on merge request pipelines, the JUnit report wired to the file the
// gate writes), and every gate option both examples use is one the gate has.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { aggregateCommand } from '../src/cli/aggregate-options.js';
import { gateCommand } from '../src/gate/options.js';

const read = (file: string): string => fs.readFileSync(fileURLToPath(new URL(`../examples/${file}`, import.meta.url)), 'utf8');

/** The `--options` of the gate command lines in a text. */
function gateFlags(text: string): string[] {
  const commands = text.split(/dist\/cli\.js gate/).slice(1);
  expect(commands.length).toBeGreaterThan(0);
  return commands.flatMap((c) => [...c.split(/\n\s*(?:-\s|\S+:|'''|\}|sh )/)[0]!.matchAll(/--([a-z0-9-]+)/g)].map((m) => m[1]!));
}

/** The parts of the GitLab example these tests read; the tests check that they are there. */
interface GitlabCi {
  stages: string[];
  'db-regression': {
    stage: string;
    script: string[];
    after_script: string[];
    rules: { if?: string }[];
    variables: Record<string, string>;
    artifacts: { reports: { junit: string }; when: string };
  };
}

describe('examples/gitlab/.gitlab-ci.yml', () => {
  const ci = parse(read('gitlab/.gitlab-ci.yml')) as GitlabCi;
  const job = ci['db-regression'];

  it('is a job GitLab accepts: a declared stage, a script, merge request rules', () => {
    expect(ci.stages).toContain(job.stage);
    expect(Array.isArray(job.script) && job.script.length).toBeTruthy();
    expect(job.rules.some((r) => r.if?.includes('"merge_request_event"'))).toBe(true);
    // The base commit must be in the clone.
    expect(job.variables.GIT_DEPTH).toBe('0');
  });

  it('wires the JUnit report GitLab shows to the file the gate writes', () => {
    const script = job.script.join('\n');
    const junit = /--junit (\S+)/.exec(script)![1];
    expect(job.artifacts.reports.junit).toBe(junit);
    expect(job.artifacts.when).toBe('always');
  });

  it('posts the note with a masked token variable, never echoing it', () => {
    const after = job.after_script.join('\n');
    expect(after).toContain('PRIVATE-TOKEN');
    expect(after).toContain('$PG_RETEST_NOTE_TOKEN');
    expect(after).not.toMatch(/echo .*TOKEN/);
  });

  it('uses only options the gate has', () => {
    for (const flag of gateFlags(read('gitlab/.gitlab-ci.yml'))) expect(Object.keys(gateCommand.options), flag).toContain(flag);
  });
});

describe('examples/jenkins/Jenkinsfile', () => {
  const text = read('jenkins/Jenkinsfile');

  it('runs on change requests, fetches the target branch and publishes the JUnit report', () => {
    expect(text).toMatch(/when \{ changeRequest\(\) \}/);
    expect(text).toContain('refs/remotes/origin/${CHANGE_TARGET}');
    const junit = /--junit (\S+)/.exec(text)![1];
    expect(text).toContain(`junit allowEmptyResults: false, testResults: '${junit}'`);
  });

  it('uses only options the gate has', () => {
    for (const flag of gateFlags(text)) expect(Object.keys(gateCommand.options), flag).toContain(flag);
  });
});

/** The `--options` of the aggregate command lines in a text. */
function aggregateFlags(text: string): string[] {
  return text
    .split(/dist\/cli\.js aggregate/)
    .slice(1)
    .flatMap((c) => [...c.split(/\n\s*(?:-\s|\S+:|'''|\}|sh )/)[0]!.matchAll(/--([a-z0-9-]+)/g)].map((m) => m[1]!));
}

describe('the sharded examples (gitlab/sharded.gitlab-ci.yml, jenkins/Jenkinsfile.sharded)', () => {
  const gitlab = read('gitlab/sharded.gitlab-ci.yml');
  const jenkins = read('jenkins/Jenkinsfile.sharded');

  it('GitLab: parallel shards, each its partial kept whatever happened, then one aggregate job in a later stage that runs always', () => {
    const ci = parse(gitlab) as Record<string, Record<string, unknown>> & { stages: string[] };
    const shard = ci['db-regression-shard']!;
    const aggregate = ci['db-regression']!;
    expect(shard.parallel).toBe(4);
    expect((shard.script as string[]).join('\n')).toContain('--shard "$CI_NODE_INDEX/$CI_NODE_TOTAL"');
    expect(shard.artifacts).toMatchObject({ when: 'always' });
    expect(ci.stages.indexOf(aggregate.stage as string)).toBeGreaterThan(ci.stages.indexOf(shard.stage as string));
    expect(aggregate.rules).toEqual([expect.objectContaining({ when: 'always' })]);
    expect(aggregate.needs).toEqual([{ job: 'db-regression-shard', artifacts: true }]);
    const junit = /--junit (\S+)/.exec((aggregate.script as string[]).join('\n'))![1];
    expect(aggregate.artifacts).toMatchObject({ reports: { junit } });
  });

  it('Jenkins: a matrix of shards that stash their partials, then the aggregate stage publishes the JUnit report', () => {
    expect(jenkins).toMatch(/values '1', '2', '3', '4'/);
    expect(jenkins).toContain('--shard "$SHARD/$SHARDS"');
    expect(jenkins).toMatch(/catchError\(buildResult: 'FAILURE', stageResult: 'FAILURE'\)/);
    expect(jenkins).toContain('stash name: "partial-${SHARD}"');
    const junit = /--junit (\S+)/.exec(jenkins)![1];
    expect(jenkins).toContain(`junit allowEmptyResults: false, testResults: '${junit}'`);
  });

  it('use only options the gate and aggregate have', () => {
    for (const text of [gitlab, jenkins]) {
      for (const flag of gateFlags(text)) expect(Object.keys(gateCommand.options), flag).toContain(flag);
      const flags = aggregateFlags(text);
      expect(flags).toContain('partial');
      for (const flag of flags) expect(Object.keys(aggregateCommand.options), flag).toContain(flag);
    }
  });
});
