// tooling/mutation/survivors.mjs, run as an operator runs it (a child process), on fabricated Stryker reports:
// the score per file, a later report overriding an earlier one mutant by mutant, reasons that apply only while
// their line still says what they say, and --check failing on a survivor without a reason.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempRoot } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';

const SCRIPT = path.resolve(import.meta.dirname, '..', '..', 'mutation', 'survivors.mjs');

const SOURCE = ['export function f(a) {', "  if (a > 1) return 'big';", "  return 'small';", '}'].join('\n');

interface Mutant {
  id: string;
  mutatorName: string;
  replacement: string;
  status: string;
  location: { start: { line: number; column: number }; end: { line: number; column: number } };
}

const mutant = (id: string, line: number, column: number, mutatorName: string, replacement: string, status: string): Mutant => ({
  id,
  mutatorName,
  replacement,
  status,
  location: { start: { line, column }, end: { line, column: column + 5 } },
});

function report(mutants: Mutant[], source = SOURCE): unknown {
  return { schemaVersion: '1', thresholds: { high: 85, low: 70 }, files: { 'src/f.ts': { language: 'typescript', source, mutants } } };
}

function run(args: string[], files: Record<string, unknown>): { status: number | null; stdout: string; stderr: string } {
  const dir = tempRoot('hermes-survivors-');
  try {
    for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), JSON.stringify(content));
    const r = spawnSync(process.execPath, [SCRIPT, ...args], { cwd: dir, encoding: 'utf8' });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const FIRST = [
  mutant('1', 2, 7, 'ConditionalExpression', 'true', 'Survived'),
  mutant('2', 2, 9, 'EqualityOperator', 'a >= 1', 'Survived'),
  mutant('3', 2, 22, 'StringLiteral', '""', 'Killed'),
  mutant('4', 3, 10, 'StringLiteral', '""', 'NoCoverage'),
  mutant('5', 1, 20, 'BlockStatement', '{}', 'Timeout'),
];

describe('survivors.mjs', () => {
  it('one report: the score per file counts killed and timed-out mutants as detected, survived and uncovered as not', () => {
    const r = run(['a.json'], { 'a.json': report(FIRST) });
    expect(r.status).toBe(0);
    expect(r.stdout.split('\n')).toEqual([
      'src/f.ts: 40.00 % (5 mutants: 1 killed, 1 timed out, 2 survived, 1 no coverage; 3 without a reason)',
      "  2:7 Survived ConditionalExpression | if (a > 1) return 'big'; => true",
      "  2:9 Survived EqualityOperator | if (a > 1) return 'big'; => a >= 1",
      "  3:10 NoCoverage StringLiteral | return 'small'; => \"\"",
      'all files: 40.00 %, 3 survivor(s), 3 without a reason',
      '',
    ]);
  });

  it('a later report overrides the same mutants only; reasons apply while their line still says what they say; --check passes when all have one', () => {
    const later = [mutant('1', 2, 7, 'ConditionalExpression', 'true', 'Killed'), mutant('4', 3, 10, 'StringLiteral', '""', 'Survived')];
    const reasons = {
      'src/f.ts': [
        { lines: '2', contains: 'a > 1', mutators: ['EqualityOperator'], why: 'f is only called with whole numbers >= 2 or <= 0' },
        { lines: '3-3', contains: "'small'", why: 'the word is for people' },
        { lines: '2', contains: 'a > 7', why: 'stale: the line no longer says this' },
      ],
    };
    const r = run(['--check', '--reasons', 'reasons.json', 'a.json', 'b.json'], { 'a.json': report(FIRST), 'b.json': report(later), 'reasons.json': reasons });
    expect([r.status, r.stderr]).toEqual([0, '']);
    expect(r.stdout.split('\n')).toEqual([
      'src/f.ts: 60.00 % (5 mutants: 2 killed, 1 timed out, 2 survived, 0 no coverage; 0 without a reason)',
      "  2:9 Survived EqualityOperator | if (a > 1) return 'big'; => a >= 1  [f is only called with whole numbers >= 2 or <= 0]",
      "  3:10 Survived StringLiteral | return 'small'; => \"\"  [the word is for people]",
      'all files: 60.00 %, 2 survivor(s), 0 without a reason',
      '',
    ]);
  });

  it('--check fails naming how many survivors have no reason; a stale reason does not count', () => {
    const reasons = { 'src/f.ts': [{ lines: '2', contains: 'a > 7', why: 'stale' }] };
    const r = run(['--check', '--reasons', 'reasons.json', 'a.json'], { 'a.json': report(FIRST), 'reasons.json': reasons });
    expect([r.status, r.stderr]).toEqual([1, 'survivors: 3 survivor(s) without a reason\n']);
  });

  it('--markdown: a table per file, the survivor without a reason marked', () => {
    const r = run(['--markdown', 'a.json'], { 'a.json': report([mutant('1', 2, 7, 'ConditionalExpression', 'true', 'Survived'), mutant('3', 2, 22, 'StringLiteral', '""', 'Killed')]) });
    expect(r.stdout.split('\n')).toEqual([
      '### `src/f.ts`: 50.00 %',
      '',
      '2 mutants: 1 killed, 0 timed out, 1 survived, 0 without coverage; 1 survivor(s) without a reason.',
      '',
      '| line | mutator | code | mutated to | why it is accepted |',
      '|---|---|---|---|---|',
      "| 2:7 | ConditionalExpression | `if (a > 1) return 'big';` | `true` | **no reason given** |",
      '',
      '**All files**: 50.00 %, 1 survivor(s), 1 without a reason',
      '',
    ]);
  });

  it('refuses reports of different sources, something that is not a report, and no report at all', () => {
    expect(run(['a.json', 'b.json'], { 'a.json': report(FIRST), 'b.json': report(FIRST, `${SOURCE}\n// changed`) })).toEqual({
      status: 2,
      stdout: '',
      stderr: 'survivors: src/f.ts: the reports were made from different sources; merge only runs of the same tree\n',
    });
    expect(run(['a.json'], { 'a.json': { results: [] } })).toEqual({ status: 2, stdout: '', stderr: 'survivors: not a Stryker mutation report (no "files")\n' });
    expect(run([], {}).status).toBe(2);
    expect(run(['--frobnicate'], {})).toEqual({ status: 2, stdout: '', stderr: 'survivors: unknown option --frobnicate\n' });
  });
});
