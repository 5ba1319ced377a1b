// The markdown building blocks on GitHub: text a report quotes (error messages, statements,
// names, anything a PR's artifact may decide) must not act there. Mentions notify, references
// link into other issues, bare URLs become links; each is broken by an invisible U+2060 (word
// joiner) so that it reads the same. Golden strings, so that a change of the rule shows.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { reportMarkdown } from '../src/action/report-files.js';
import { code, codeBlock, inert, prose, text } from '../src/report/markdown-text.js';
import { parseReport } from '../src/report/index.js';

const J = '\u2060';

/** What GitHub would act on in markdown outside code spans and blocks. */
function live(markdown: string): string[] {
  const outside = markdown.replace(/^(`{3,})[^\n]*\n[\s\S]*?\n\1$/gm, '').replace(/(`+)[\s\S]*?\1/g, '');
  const patterns = [/(^|[^A-Za-z0-9_])@[A-Za-z0-9][\w-]*(\/[\w-]+)?/g, /#[0-9]+/g, /\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, /\bwww\.\S+/gi];
  return patterns.flatMap((pattern) => Array.from(outside.matchAll(pattern), (m) => m[0].trim()));
}

describe('text', () => {
  it('mentions and team mentions', () => {
    expect(text('ask @alice or @acme/dba-team (@bob)')).toBe(`ask @${J}alice or @${J}acme/dba-team (@${J}bob)`);
    expect(text('@carol first')).toBe(`@${J}carol first`);
  });

  it('bare URLs of any scheme, and www.', () => {
    expect(text('see https://evil.example/x?a=1, http://a.example and ftp://f.example')).toBe(
      `see https:${J}//evil.example/x?a=1, http:${J}//a.example and ftp:${J}//f.example`,
    );
    expect(text('or WWW.evil.example/path')).toBe(`or WWW${J}.evil.example/path`);
  });

  it('issue references, here and in another repository', () => {
    expect(text('fixes #12 and acme/shop#3')).toBe(`fixes \\#${J}12 and acme/shop\\#${J}3`);
  });

  it('leaves e-mail addresses, a # before a word and plain words as they are', () => {
    expect(text('ann.lee@example.com wrote #tag at 10:30')).toBe('ann.lee@example.com wrote \\#tag at 10:30');
    expect(inert('nothing to do here')).toBe('nothing to do here');
  });

  it('code spans and blocks are left alone (GitHub does not act inside them)', () => {
    expect(code('@alice https://x.example')).toBe('`@alice https://x.example`');
    expect(codeBlock('@alice https://x.example')).toEqual(['```', '@alice https://x.example', '```']);
    expect(prose('`@alice` by @bob from https://x.example')).toBe(`\`@alice\` by @${J}bob from https:${J}//x.example`);
  });
});

describe('the PR comment of a report whose messages ping and link', () => {
  it('renders them inert wherever they appear', () => {
    const fixture = fileURLToPath(new URL('./fixtures/reports/new-errors.json', import.meta.url));
    const report = parseReport(fs.readFileSync(fixture, 'utf8'));
    const hostile = 'permission denied for table orders: ask @acme/dba or @alice, see https://evil.example/help and www.evil.example (#7)';
    report.comparison!.new_errors[0] = { ...report.comparison!.new_errors[0]!, sqlstate: '42501', message: hostile };
    report.headline = `regression: @alice broke it, see https://evil.example`;
    report.reasons = [`new error 42501 in \`SELECT 1\`: ${hostile}`];
    report.warnings = ['@alice: www.evil.example'];
    const markdown = reportMarkdown(report);
    expect(markdown).toContain(
      `permission denied for table orders: ask @${J}acme/dba or @${J}alice, see https:${J}//evil.example/help and www${J}.evil.example (\\#${J}7)`,
    );
    expect(markdown).toContain(`regression: @${J}alice broke it, see https:${J}//evil.example`);
    expect(live(markdown)).toEqual([]);
  });
});
