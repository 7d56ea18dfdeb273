// The runnable transcripts of README.md and docs/*.md (marked `<!-- runnable -->`, see docs-blocks.mjs) are run
// against the built CLI in a scratch /tmp and compared with what the docs show. Regenerate: `pnpm docs:update`.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describeNeeds } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import * as docs from '../docs-blocks.mjs';

interface Block {
  file: string;
  line: number;
  bodyLine: number;
  body: string;
  session: string;
}
interface Drift {
  line: number;
  expected: string;
  actual: string;
}
const { ROOT, documentedFiles, findBlocks, firstDrift, normalise, runBlocks } = docs as unknown as {
  ROOT: string;
  documentedFiles: () => string[];
  findBlocks: (file: string, text: string) => Block[];
  firstDrift: (expected: string, actual: string) => Drift | undefined;
  normalise: (text: string) => string;
  runBlocks: (blocks: readonly Block[]) => string[];
};

/** Every drift as `file:line: docs … actual …`, the way the test reports it. */
function drifts(blocks: readonly Block[], bodies: readonly string[]): string[] {
  return blocks.flatMap((block, i) => {
    const drift = firstDrift(block.body, bodies[i] ?? '');
    return drift === undefined ? [] : [`${block.file}:${String(block.bodyLine + drift.line - 1)}: docs: ${drift.expected} | actual: ${drift.actual}`];
  });
}

describe('finding and normalising transcripts', () => {
  it('finds a marked block with its line, session and setup, and ignores unmarked ones', () => {
    const text = ['# t', '```', '$ echo unmarked', '```', '<!-- runnable session=s setup="true" -->', '```', '$ echo hi', 'hi', '[exit 0]', '```', ''].join('\n');
    const blocks = findBlocks('t.md', text);
    expect(blocks.map((b) => [b.line, b.bodyLine, b.session, b.body])).toEqual([[6, 7, 's', '$ echo hi\nhi\n[exit 0]']]);
  });

  it('refuses a marker without a block, naming the line', () => {
    expect(() => findBlocks('t.md', 'a\n<!-- runnable -->\ntext\n')).toThrow('t.md:2: a runnable marker must be followed by a fenced block on the next line');
  });

  it('normalises durations, ages, sizes, dates and process ids, and nothing else', () => {
    expect(normalise('scanned 5 directories in 8 ms, oldest 3s; 632 B, 1.3 KiB; limits 10000 files / 256 MiB; mode 0700')).toBe(
      'scanned 5 directories in <N> ms, oldest <N>s; <N> B, <N> KiB; limits 10000 files / 256 MiB; mode 0700',
    );
    expect(normalise('hermes_conversation_20261130_080938.json at 2026-11-30T16:32:18.783Z, "pid": 12928, "ts": 1796056338.783')).toBe(
      'hermes_conversation_<YYYYMMDD_HHMMSS>.json at <ISO-TIME>, "pid": <PID>, "ts": <TS>',
    );
    // The doctor's anchor line depends on whether the addon is built here; only that whole line is replaced.
    expect(normalise('uid 0\nanchor mode procfd: HERMES_FS_ANCHOR=procfd\nthe anchor mode native: x')).toBe('uid 0\nanchor mode <MODE>: <WHY>\nthe anchor mode native: x');
  });
});

describeNeeds(['root', 'mount', 'unshare'], 'the runnable transcripts of README.md and docs/*.md', () => {
  it('print today what the docs show (regenerate: pnpm docs:update)', () => {
    const all = documentedFiles().flatMap((rel) => findBlocks(rel, fs.readFileSync(path.join(ROOT, rel), 'utf8')));
    const bodies = runBlocks(all);
    const found = drifts(all, bodies);
    const files = new Set(all.map((b) => b.file));
    console.log(`docs transcripts: ${String(all.length)} blocks in ${String(files.size)} files run, ${String(all.length - found.length)} passed, ${String(found.length)} drifted`);
    expect(found).toEqual([]);
    expect(all.length).toBeGreaterThanOrEqual(3);
  }, 600_000);

  it('fails on a planted drift, naming the file and the line', () => {
    // A copy of a real transcript with one word changed: the block runs for real and the changed line is named.
    const source = findBlocks('README.md', fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8'))[0];
    if (source === undefined) throw new Error('README.md has no runnable block');
    const planted = { ...source, file: 'planted.md', session: 'planted', body: source.body.replace('findings:', 'problems:') };
    expect(planted.body).not.toBe(source.body);
    const bodies = runBlocks([planted]);
    const found = drifts([planted], bodies);
    const line = planted.bodyLine + planted.body.split('\n').indexOf('problems:');
    console.log(`docs transcripts, planted drift: ${found.join('; ')}`);
    expect(found).toEqual([`planted.md:${String(line)}: docs: problems: | actual: findings:`]);
  }, 300_000);
});
