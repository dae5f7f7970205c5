/**
 * The rule of docs/architecture.md's walkthrough "Follow one order" (issue 33: a newcomer follows one
 * order opening at most 12 files, every decision in a pure file): it follows one order through at most
 * 12 files, numbered in order, each existing, the pure ones with a spec beside them; every file the
 * section names is one of them or in its table of files off the path, and the counts its text gives are
 * the tables' (walkthroughProblems).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { ROOT, SRC, IMPURE_IMPORT, sourceFiles } from './support/source-files.js';

/** One order's path in the walkthrough: the numbered files (src/-relative), the files off it, every file the section names. */
export interface Walkthrough {
  path: Array<{ n: number; file: string; pure: boolean }>;
  off: string[];
  /** The base names of the `.ts` files (specs left out) named anywhere in the section. */
  named: string[];
  /** The numbers the text gives: "follows it in the N files", "names the N files". */
  claimed: { path: number | null; off: number | null };
}

/** The largest number of files the walkthrough of one order may follow (issue 33: a newcomer opens at most 12). */
export const MAX_PATH_FILES = 12;

/** docs/architecture.md's section "Follow one order", read. */
export function readWalkthrough(doc: string): Walkthrough {
  const start = doc.indexOf('\n## Follow one order\n');
  if (start < 0) return { path: [], off: [], named: [], claimed: { path: null, off: null } };
  const end = doc.indexOf('\n## ', start + 1);
  const section = doc.slice(start, end < 0 ? undefined : end);
  const path: Walkthrough['path'] = [];
  const off: string[] = [];
  for (const line of section.split('\n')) {
    const step = /^\|\s*(\d+)\s*\|\s*`([\w/.-]+\.ts)`\s*\|([^|]*)\|/.exec(line);
    if (step) path.push({ n: Number(step[1]), file: step[2], pure: /^\s*pure\b/.test(step[3]) });
    const aside = /^\|\s*`([\w/.-]+\.ts)`\s*\|/.exec(line);
    if (aside) off.push(aside[1]);
  }
  const named = [...new Set([...section.matchAll(/[\w.-]+\.ts\b/g)].map((m) => m[0]).filter((f) => !f.endsWith('.spec.ts')))];
  const count = (re: RegExp) => (re.exec(section) ? Number(re.exec(section)![1]) : null);
  return { path, off, named, claimed: { path: count(/follows it in the (\d+) files/), off: count(/names the (\d+) files/) } };
}

/** What is wrong with the walkthrough, given the src/-relative paths of the source files. */
export function walkthroughProblems(w: Walkthrough, sources: readonly string[]): string[] {
  const problems: string[] = [];
  if (w.path.length === 0) problems.push('no numbered path files');
  if (w.path.length > MAX_PATH_FILES) problems.push(`${w.path.length} files on the path, more than ${MAX_PATH_FILES}`);
  w.path.forEach((p, i) => {
    if (p.n !== i + 1) problems.push(`${p.file}: numbered ${p.n}, at place ${i + 1}`);
  });
  if (w.claimed.path !== w.path.length) problems.push(`the text says ${w.claimed.path} files on the path, the table has ${w.path.length}`);
  if (w.claimed.off !== w.off.length) problems.push(`the text says ${w.claimed.off} files off the path, the table has ${w.off.length}`);
  const listed = [...w.path.map((p) => p.file), ...w.off];
  for (const f of listed) if (!sources.includes(f)) problems.push(`${f}: no such file under src/`);
  for (const f of new Set(listed.filter((f, i) => listed.indexOf(f) !== i))) problems.push(`${f}: listed twice`);
  const bases = new Set(listed.map((f) => basename(f)));
  for (const f of w.named) if (!bases.has(f)) problems.push(`${f}: named in the section, in neither table`);
  return problems;
}

describe('the walkthrough of one order in docs/architecture.md', () => {
  const files = sourceFiles(SRC);
  const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');

  it('follows one order through at most 12 files, the pure ones with a spec, and names no file it does not list', () => {
    const w = readWalkthrough(doc);
    expect(
      walkthroughProblems(
        w,
        files.map((f) => relative(SRC, f)),
      ),
    ).toEqual([]);
    const problems: string[] = [];
    for (const { file } of w.path.filter((p) => p.pure)) {
      const text = readFileSync(join(SRC, file), 'utf8');
      for (const m of text.matchAll(IMPURE_IMPORT)) problems.push(`${file}: imports ${m[1]}`);
      if (!readdirSync(join(SRC, dirname(file))).includes(basename(file).replace(/\.ts$/, '.spec.ts')))
        problems.push(`${file}: no spec beside it`);
    }
    expect(problems).toEqual([]);
    expect(w.path.filter((p) => p.pure).map((p) => basename(p.file))).toEqual([
      'place-plan.ts',
      'attempt-plan.ts',
      'report-plan.ts',
      'callback-plan.ts',
    ]);
  });

  it('reads the walkthrough and tells what is wrong with it', () => {
    const rows = Array.from({ length: 13 }, (_, i) => `| ${i + 1} | \`a/f${i}.ts\` | ${i === 2 ? 'pure: x' : 'y'} |`);
    const section = [
      '## Follow one order',
      'A newcomer follows it in the 12 files below; the section names the 1 files off it, and `g.ts`, `z.spec.ts`.',
      '| # | file | role |',
      '|---|---|---|',
      ...rows,
      '',
      '| file off the path | does | why |',
      '|---|---|---|',
      '| `b/g.ts` | x | y |',
      '',
      '## Next',
      '`h.ts`',
    ].join('\n');
    const w = readWalkthrough(`# Doc\n\n${section}`);
    expect(w.path).toHaveLength(13);
    expect(w.path[2]).toEqual({ n: 3, file: 'a/f2.ts', pure: true });
    expect(w.off).toEqual(['b/g.ts']);
    expect(w.claimed).toEqual({ path: 12, off: 1 });
    expect(w.named).not.toContain('h.ts');
    expect(w.named).not.toContain('z.spec.ts');
    const sources = [...rows.map((_, i) => `a/f${i}.ts`), 'b/g.ts'];
    expect(walkthroughProblems(w, sources)).toEqual([
      '13 files on the path, more than 12',
      'the text says 12 files on the path, the table has 13',
    ]);
    const twelve = { ...w, path: w.path.slice(0, 12), named: w.named.filter((f) => f !== 'f12.ts') };
    expect(walkthroughProblems(twelve, sources)).toEqual([]);
    expect(walkthroughProblems({ ...twelve, named: [...twelve.named, 'x.ts'] }, sources.slice(1))).toEqual([
      'a/f0.ts: no such file under src/',
      'x.ts: named in the section, in neither table',
    ]);
    expect(walkthroughProblems({ ...twelve, path: [twelve.path[1], ...twelve.path.slice(1)] }, sources)).toEqual([
      'a/f1.ts: numbered 2, at place 1',
      'a/f1.ts: listed twice',
      'f0.ts: named in the section, in neither table',
    ]);
  });
});
