// The one writer of report files (src/runtime/report-files.ts) that every command and the action
// use: only the files asked for are rendered and written, and a file that cannot be written is
// bad input (exit 2) named the way the user asked for it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ExitCode, exitCodeOf } from '../src/exit-codes.js';
import { checkReportDirs, type ReportFile, writeReportFiles } from '../src/runtime/report-files.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-report-files-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('report files', () => {
  it('renders and writes only the files asked for, and none a report has no content for', () => {
    const rendered: string[] = [];
    const file = (name: string, where: string | undefined, content?: string): ReportFile<{ n: number }> => ({
      askedAs: `option --${name}`,
      path: where,
      render: (report) => {
        rendered.push(name);
        return content === undefined ? undefined : `${content} ${report.n}`;
      },
    });
    const files = [file('json', path.join(tmp, 'r.json'), 'json'), file('junit', undefined, 'junit'), file('svg', path.join(tmp, 'r.svg'))];
    writeReportFiles(files, { n: 7 });
    expect(rendered).toEqual(['json', 'svg']);
    expect(fs.readFileSync(path.join(tmp, 'r.json'), 'utf8')).toBe('json 7');
    expect(fs.existsSync(path.join(tmp, 'r.svg'))).toBe(false);
  });

  it('names the option of a file whose directory is missing, before a run and when writing (exit 2)', () => {
    const missing = path.join(tmp, 'no-such-dir', 'report.json');
    const files: ReportFile<object>[] = [{ askedAs: '[output] json_report', path: missing, render: () => '{}' }];
    expect(() => checkReportDirs(files)).toThrow(
      `[output] json_report: directory ${path.dirname(missing)} does not exist; create it first`,
    );
    let thrown: unknown;
    try {
      writeReportFiles(files, {});
    } catch (error) {
      thrown = error;
    }
    expect((thrown as Error).message).toMatch(new RegExp(`^\\[output\\] json_report: cannot write ${missing}: ENOENT`));
    expect(exitCodeOf(thrown)).toBe(ExitCode.BadInput);
  });
});
