// The GitLab and Jenkins examples (examples/gitlab, examples/jenkins) are checked for what can be
// checked without those systems: GitLab's file is valid YAML with the structure GitLab requires
// of a job (stage, script, rules on merge request pipelines, the JUnit report wired to the file the
// gate writes), and every gate option both examples use is one the gate has.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
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
