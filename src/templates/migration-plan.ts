/**
 * How head's schema is built from base's (the rule): a copy of the populated base
 * database plus the files whose names are new in head — what a migration tool would apply to
 * production. When that would not reproduce head's schema (a file base applied was edited or
 * removed), or when asked, head is built from scratch instead, and the report says why.
 */
import type { MigrationFile } from './sql-files.js';

export type HeadPlan = { mode: 'copy'; newFiles: MigrationFile[] } | { mode: 'scratch'; reason: string };

/**
 * Decides how to build head.
 * @param base the base commit's files
 * @param head the working tree's files
 * @param fromScratch the user asked for a build from scratch
 * @returns the plan
 */
export function planHead(base: MigrationFile[], head: MigrationFile[], fromScratch: boolean): HeadPlan {
  if (fromScratch) return { mode: 'scratch', reason: 'head-from-scratch was requested' };
  const headByName = new Map(head.map((file) => [file.name, file]));
  const edited = base.filter((file) => headByName.has(file.name) && headByName.get(file.name)!.digest !== file.digest);
  const removed = base.filter((file) => !headByName.has(file.name));
  if (edited.length > 0 || removed.length > 0) {
    const parts = [];
    if (edited.length > 0) parts.push(`edited in place: ${edited.map((f) => f.name).join(', ')}`);
    if (removed.length > 0) parts.push(`removed: ${removed.map((f) => f.name).join(', ')}`);
    return { mode: 'scratch', reason: `migrations the base already applied changed (${parts.join('; ')})` };
  }
  const baseNames = new Set(base.map((file) => file.name));
  return { mode: 'copy', newFiles: head.filter((file) => !baseNames.has(file.name)) };
}
