/**
 * Every link of the README and the docs pages resolves: a relative link names a file of this
 * repository, and a `#fragment` names a heading of its target (GitHub's anchors: lower case, spaces
 * to dashes, punctuation dropped, a repeated heading numbered). Links to the web and to files
 * outside the repository (SPEC.md in ../shared, which this repository must not depend on) are not
 * followed. Code blocks and inline code are not read: a path there is an example, not a link.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

/** The text outside fenced code blocks and inline code spans. */
function prose(markdown: string): string {
  return markdown
    .replace(/^```[^\n]*\n[\s\S]*?^```\s*$/gm, '')
    .replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchor for a heading text. */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- _]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const match of prose(markdown).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(match[1] ?? '');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

interface Link {
  page: string;
  target: string;
}

function linksOf(page: string): Link[] {
  const text = prose(readFileSync(join(ROOT, page), 'utf8'));
  return [...text.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((match) => ({ page, target: match[1] ?? '' }));
}

/** Why a link does not resolve, or null when it does (or is not ours to follow). */
function problem({ page, target }: Link): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return null; // http:, https:, mailto:
  const [path = '', fragment] = target.split('#', 2);
  const file = path === '' ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), decodeURIComponent(path));
  if (relative(ROOT, file).startsWith('..')) return null; // outside the repository (../shared)
  if (!existsSync(file)) return `${target}: no file ${relative(ROOT, file)}`;
  if (fragment === undefined) return null;
  if (statSync(file).isDirectory() || !file.endsWith('.md')) return `${target}: a fragment on a file that has no headings`;
  return anchorsOf(readFileSync(file, 'utf8')).has(fragment) ? null : `${target}: no heading #${fragment} in ${relative(ROOT, file)}`;
}

describe('links of the README and the docs pages', () => {
  it('are found (the check reads the pages it should)', () => {
    const readme = linksOf('README.md').map((link) => link.target);
    expect(readme).toEqual(expect.arrayContaining(['docs/batch.md', 'docs/api.md', 'docs/development.md', 'docs/console.png']));
    expect(PAGES.length).toBeGreaterThan(15);
  });

  it.each(PAGES)('%s: every relative link and anchor resolves', (page) => {
    const broken = linksOf(page)
      .map(problem)
      .filter((found): found is string => found !== null);
    expect(broken).toEqual([]);
  });

  it('tells a broken file link and a broken anchor apart from good ones', () => {
    expect(problem({ page: 'README.md', target: 'docs/batch.md' })).toBeNull();
    expect(problem({ page: 'docs/api.md', target: 'batch.md#a-quick-tour' })).toBeNull();
    expect(problem({ page: 'README.md', target: 'docs/no-such-page.md' })).toMatch(/no file docs\/no-such-page\.md/);
    expect(problem({ page: 'README.md', target: '#no-such-heading' })).toMatch(/no heading #no-such-heading in README\.md/);
    expect(problem({ page: 'README.md', target: '../shared/SPEC.md' })).toBeNull();
  });
});
