import pc from 'picocolors';
import { describe, expect, it } from 'vitest';
import { colorEnabled } from '../src/lib/output.js';
import { renderTable } from '../src/lib/table.js';
import { displayWidth, termSafe, truncate, wrap } from '../src/lib/term.js';
import type { MatrixCell, MatrixReport } from '../src/matrix/run.js';
import { renderMatrix } from '../src/matrix/render.js';

const plain = pc.createColors(false);

describe('termSafe', () => {
  it('writes every control character, escape introducer and bidi control out as a visible escape', () => {
    expect(termSafe('a\u001b]0;pwned\u0007b\u001b[2Jc\r\nd\u0000e\u0009f\u007fg\u009bh\u202ei\u2066j\u2028k')).toBe(
      'a\\x1b]0;pwned\\x07b\\x1b[2Jc\\r\\nd\\x00e\\tf\\x7fg\\x9bh\\u{202e}i\\u{2066}j\\u{2028}k',
    );
  });

  it('leaves text without such characters identical: backslashes, Unicode, emoji', () => {
    for (const s of ['plain', 'C:\\path\\x1b (typed)', 'Grüße, 日本語, 👍🏽, العربية', '']) expect(termSafe(s)).toBe(s);
  });

  it('keeps LF for a multi-line dump (CR still escaped) and writes JSON-style escapes for JSON text', () => {
    expect(termSafe('a\nb\rc', { keepNewlines: true })).toBe('a\nb\\rc');
    expect(termSafe('"\u007f\u009b\u202e"', { json: true })).toBe('"\\u007f\\u009b\\u202e"');
  });
});

describe('layout by display width', () => {
  it('counts wide characters as two columns and combining marks as none', () => {
    expect(displayWidth('abc')).toBe(3);
    expect(displayWidth('日本')).toBe(4);
    expect(displayWidth('e\u0301')).toBe(1);
    expect(displayWidth('👍')).toBe(2);
    expect(displayWidth('✓ 0700')).toBe(6);
    // One grapheme, as a terminal draws it (string-width): a ZWJ family, a flag, a skin tone.
    expect(displayWidth('👨‍👩‍👧')).toBe(2);
    expect(displayWidth('🇫🇷')).toBe(2);
    expect(displayWidth('👍🏽')).toBe(2);
    expect(displayWidth('a👨‍👩‍👧b')).toBe(4);
  });

  it('never cuts or breaks inside a character: a ZWJ family stays whole', () => {
    const family = '👨‍👩‍👧';
    expect(truncate(`ab${family}cd`, 5)).toBe(`ab${family}…`);
    expect(truncate(`ab${family}cd`, 4)).toBe('ab…');
    expect(wrap(`${family}${family}${family}`, 4)).toEqual([`${family}${family}`, family]);
    const lines = renderTable([{ header: 'who', overflow: 'truncate' }], [[`${family} `.repeat(20)]], { maxWidth: 20 });
    for (const l of lines) expect(displayWidth(l), l).toBeLessThanOrEqual(20);
    console.log(`widths: ${family} = ${String(displayWidth(family))} columns; a 20-column table's widest line ${String(Math.max(...lines.map((l) => displayWidth(l))))}`);
  });

  it('truncates with … and wraps on words, breaking words longer than a line', () => {
    expect(truncate('abcdefgh', 5)).toBe('abcd…');
    expect(truncate('日本語です', 5)).toBe('日本…');
    expect(truncate('abc', 5)).toBe('abc');
    expect(wrap('the quick brown fox', 9)).toEqual(['the quick', 'brown fox']);
    expect(wrap('abcdefghijkl', 5)).toEqual(['abcde', 'fghij', 'kl']);
  });

  it('a table fits its width: long cells wrap or are cut, cells are escaped', () => {
    const lines = renderTable(
      [{ header: 'id' }, { header: 'text', overflow: 'truncate' }, { header: 'note', overflow: 'wrap', min: 8 }],
      [['a1', 'x'.repeat(200), 'one two three four five six seven eight nine ten'], ['b2', 'evil \u001b[2J', 'short']],
      { maxWidth: 40 },
    );
    for (const l of lines) expect(displayWidth(l), l).toBeLessThanOrEqual(40);
    expect(lines.join('\n')).toContain('evil \\x1b[2J');
    expect(lines.join('\n')).not.toContain('\u001b');
    expect(lines[0]).toMatch(/^┌─+┬─+┬─+┐$/);
    expect(lines.at(-1)).toMatch(/^└─+┴─+┴─+┘$/);
  });
});

describe('colour', () => {
  // Only isTTY is read: stand-ins for a terminal and a pipe.
  const tty = Object.create(null, { isTTY: { value: true } }) as NodeJS.WriteStream;
  const pipe = Object.create(null, { isTTY: { value: undefined } }) as NodeJS.WriteStream;

  it('follows --color/--no-color, then FORCE_COLOR, NO_COLOR, TERM=dumb, then whether it is a terminal', () => {
    expect(colorEnabled(tty, {}, undefined)).toBe(true);
    expect(colorEnabled(pipe, {}, undefined)).toBe(false);
    expect(colorEnabled(pipe, { CI: 'true' }, undefined)).toBe(false);
    expect(colorEnabled(tty, { NO_COLOR: '1' }, undefined)).toBe(false);
    expect(colorEnabled(tty, { NO_COLOR: '' }, undefined)).toBe(true);
    expect(colorEnabled(tty, { TERM: 'dumb' }, undefined)).toBe(false);
    expect(colorEnabled(pipe, { FORCE_COLOR: '1' }, undefined)).toBe(true);
    expect(colorEnabled(tty, { FORCE_COLOR: '0' }, undefined)).toBe(false);
    expect(colorEnabled(tty, { FORCE_COLOR: 'false' }, undefined)).toBe(false);
    expect(colorEnabled(pipe, { FORCE_COLOR: '1', NO_COLOR: '1' }, undefined)).toBe(true);
    expect(colorEnabled(pipe, { NO_COLOR: '1', TERM: 'dumb' }, true)).toBe(true);
    expect(colorEnabled(tty, { FORCE_COLOR: '3' }, false)).toBe(false);
  });
});

/** A report as runMatrix builds it, with the given cells. */
function report(cells: MatrixCell[], crossUid: Partial<MatrixReport['crossUid']> = {}): MatrixReport {
  const failed = cells.filter((c) => !c.ok).length;
  return {
    schemaVersion: 1,
    command: 'matrix',
    ok: failed === 0,
    durationMs: 1234,
    platform: 'linux',
    node: 'v20.20.2',
    uid: 0,
    artifacts: [...new Set(cells.map((c) => c.artifact))],
    scenarios: (['S1', 'S2', 'S3', 'S4', 'S5'] as const).map((id) => ({ id, title: `scenario ${id}`, umask: '0022', managed: false, homeMode: null, homeDirMode: null, preexistingDirMode: null, childMs: 1 })),
    cells,
    notes: [],
    crossUid: { ran: false, skipped: 'disabled with --no-cross-uid', users: [], group: null, rows: [], leftover: [], ...crossUid },
    summary: { cells: cells.length, passed: cells.length - failed, failed, crossUidFailed: 0 },
  };
}

const NATIVE =
  "Could not locate the bindings file. Tried: → /x/node_modules/better-sqlite3/build/Release/better_sqlite3.node";

function stateDbCells(error: string | null, measured: string | null): MatrixCell[] {
  const out: MatrixCell[] = [];
  for (const scenario of ['S1', 'S2', 'S3', 'S4', 'S5'] as const) {
    for (const cell of ['state.db', 'state.db-wal', 'state.db-shm'] as const) {
      const expected = scenario === 'S3' || scenario === 'S4' ? '0660' : '0600';
      out.push({ scenario, artifact: 'state-db', cell, target: 'file', path: null, expected, measured, ok: measured === expected, error });
    }
  }
  return out;
}

describe('renderMatrix', () => {
  it('the native SQLite module missing: the cause once, not "✗ none (want 0600)" fifteen times', () => {
    const text = renderMatrix(report(stateDbCells(NATIVE, null)), plain, 80);
    expect(text.split('Could not locate the bindings file')).toHaveLength(2);
    expect(text).toContain('✗ state-db: not written in any scenario: Could not locate the bindings file');
    expect(text).toContain('the native SQLite module (better-sqlite3) could not be loaded');
    expect(text).not.toContain('want 0600');
    expect(text).toContain('✗ 15 of 15 cells differ from docs/permissions.md');
  });

  it('mismatches keep their cells and fit 80 columns; leftover accounts are named with the command to remove them', () => {
    const cells = stateDbCells(null, '0644');
    const text = renderMatrix(report(cells, { leftover: ['user hfsx00000000a', 'group hfsx00000000'] }), plain, 80);
    for (const l of text.split('\n')) expect(displayWidth(l), l).toBeLessThanOrEqual(80);
    expect(text).toContain('✗ S1 state.db: measured 0644, expected 0600');
    expect(text).toContain('userdel hfsx00000000a; groupdel hfsx00000000');
  });
});
