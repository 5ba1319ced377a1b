/**
 * A run's report files, written one way for every command and the action: the directories are
 * checked before a long run starts, and at its end each file asked for is rendered and written.
 * A file that cannot be written is the user's to fix (exit 2), named the way they asked for it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { InputError } from '../exit-codes.js';
import type { Io } from './io.js';

/** One file a report can be written to. */
export interface ReportFile<R> {
  /** How the user asked for the file, for messages: `option --json`, `[output] junit_xml`. */
  askedAs: string;
  /** Where it goes; undefined when it was not asked for. */
  path: string | undefined;
  /**
   * Its content, rendered only when the file is asked for; undefined when this report has none
   * (a chart of a sweep that swept nothing), and the file is then not written.
   */
  render: (report: R) => string | undefined;
}

/**
 * Fails early (exit 2) when a report could not be written at the end of a long run.
 * @param files the files, those not asked for included
 * @throws InputError naming the first whose directory does not exist
 */
export function checkReportDirs(files: readonly Pick<ReportFile<unknown>, 'askedAs' | 'path'>[]): void {
  for (const file of files) {
    if (file.path === undefined) continue;
    const dir = path.dirname(path.resolve(file.path));
    if (!fs.existsSync(dir)) throw new InputError(`${file.askedAs}: directory ${dir} does not exist; create it first`);
  }
}

/**
 * Writes each file asked for.
 * @param files the files, those not asked for included
 * @param report what they are rendered from
 * @throws InputError naming the first that cannot be written, and why
 */
export function writeReportFiles<R>(files: readonly ReportFile<R>[], report: R): void {
  for (const file of files) {
    if (file.path === undefined) continue;
    try {
      const content = file.render(report);
      if (content !== undefined) fs.writeFileSync(file.path, content);
    } catch (error) {
      throw new InputError(`${file.askedAs}: cannot write ${file.path}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}

/**
 * Prints a report's text on stdout, then writes its files.
 * @param io where stdout goes
 * @param report the report
 * @param print its text for stdout (a newline is added when it lacks one)
 * @param files the files, those not asked for included
 */
export function printAndWriteReport<R>(io: Io, report: R, print: (report: R) => string, files: readonly ReportFile<R>[]): void {
  const text = print(report);
  io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  writeReportFiles(files, report);
}
