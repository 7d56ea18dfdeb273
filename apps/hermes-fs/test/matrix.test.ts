import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { Ajv } from 'ajv';
import { createTestUsers, isRoot, itNeeds, tempRoot } from '@hermes/test-utils';
import { beforeAll, describe, expect, it } from 'vitest';
import type { MatrixReport } from '../src/index.js';
import { displayWidth } from '../src/lib/term.js';
import { ANSI, cli } from './helpers.js';

/**
 * docs/permissions.md, written out literally (never derived from the registry or the CLI's own table):
 * directory and file modes per scenario, plus state.db and its WAL files.
 */
const DESIGN_TABLE = {
  S1: { 'pending_messages/': '0700', payload: '0600', 'moa-traces/': '0700', trace: '0600', 'sessions/saved/': '0700', snapshot: '0600', trajectory: '0600', 'state.db': '0600', 'state.db-wal': '0600', 'state.db-shm': '0600' },
  S2: { 'pending_messages/': '0700', payload: '0600', 'moa-traces/': '0700', trace: '0600', 'sessions/saved/': '0700', snapshot: '0600', trajectory: '0600', 'state.db': '0600', 'state.db-wal': '0600', 'state.db-shm': '0600' },
  S3: { 'pending_messages/': '2770', payload: '0600', 'moa-traces/': '2770', trace: '0600', 'sessions/saved/': '2770', snapshot: '0600', trajectory: '0600', 'state.db': '0660', 'state.db-wal': '0660', 'state.db-shm': '0660' },
  S4: { 'pending_messages/': '0750', payload: '0600', 'moa-traces/': '0750', trace: '0600', 'sessions/saved/': '0750', snapshot: '0600', trajectory: '0600', 'state.db': '0660', 'state.db-wal': '0660', 'state.db-shm': '0660' },
  S5: { 'pending_messages/': '0701', payload: '0600', 'moa-traces/': '0700', trace: '0600', 'sessions/saved/': '0700', snapshot: '0600', trajectory: '0600', 'state.db': '0600', 'state.db-wal': '0600', 'state.db-shm': '0600' },
} as const;

/** The table's row labels, in the order the CLI prints them. */
const ROW_LABELS = {
  'pending_messages/': 'pending_messages/',
  payload: 'payload pending-*.json',
  'moa-traces/': 'moa-traces/',
  trace: 'trace <session>.jsonl',
  'sessions/saved/': 'sessions/saved/',
  snapshot: 'snapshot hermes_conversation_*',
  trajectory: 'trajectory <home>/trajectories/*.jsonl',
  'state.db': 'state.db',
  'state.db-wal': 'state.db-wal',
  'state.db-shm': 'state.db-shm',
} as const;

const SCENARIO_IDS = ['S1', 'S2', 'S3', 'S4', 'S5'] as const;
const CELL_IDS = Object.keys(ROW_LABELS) as (keyof typeof ROW_LABELS)[];

/**
 * The body rows of the first table in `text`, label → scenario cells. A label too long for its column wraps
 * onto continuation lines (whose scenario cells are empty); they are joined back with a space.
 */
function tableRows(text: string): Map<string, string[]> {
  const rows = new Map<string, string[]>();
  let label: string | null = null;
  let cells: string[] = [];
  for (const line of text.split('\n').slice(3)) {
    if (!line.startsWith('│')) break;
    const parts = line.split('│').slice(1, -1).map((x) => x.trim());
    if ((parts[1] ?? '') !== '') {
      if (label !== null) rows.set(label, cells);
      label = parts[0] ?? '';
      cells = parts.slice(1);
    } else if (label !== null) {
      label = `${label} ${parts[0] ?? ''}`;
    }
  }
  if (label !== null) rows.set(label, cells);
  return rows;
}

/**
 * This file's own temp directory (TMPDIR of the matrix runs below): other test files and other runs create
 * matrix homes in the shared one at the same time, so only a private one can show what a run left behind.
 */
const TMP = tempRoot('hermes-fs-matrix-test-');
fs.chmodSync(TMP, 0o1777); // like /tmp: the throwaway users of the cross-uid rows create their homes here

function leftovers(): string[] {
  return fs.readdirSync(TMP).filter((n) => n.startsWith('hermes-fs-matrix-') || n.startsWith('hermes-fs-xuid-'));
}

function throwawayAccounts(): string[] {
  const r = spawnSync('getent', ['passwd'], { encoding: 'utf8' });
  const g = spawnSync('getent', ['group'], { encoding: 'utf8' });
  return `${r.stdout}\n${g.stdout}`.split('\n').filter((l) => l.startsWith('hfsx'));
}

describe('hermes-fs matrix (built CLI, real child processes, real packages)', () => {
  let jsonRun: ReturnType<typeof cli>;
  let report: MatrixReport;
  const before = { temps: [] as string[], accounts: [] as string[] };

  beforeAll(() => {
    before.temps = leftovers();
    before.accounts = throwawayAccounts();
    jsonRun = cli(['matrix', '--cross-uid', '--json'], { env: { TMPDIR: TMP } });
    report = JSON.parse(jsonRun.stdout) as MatrixReport;
  });

  it('exits 0 with an ok report, no error on stderr, no account left (its speed is benchmark B6, pnpm bench)', () => {
    expect(jsonRun.stderr).not.toMatch(/error/i);
    expect(jsonRun.status, jsonRun.stderr).toBe(0);
    expect(report.ok).toBe(true);
    expect(report.crossUid.leftover).toEqual([]);
  });

  it('validates against schema/matrix.schema.json', () => {
    const schema = JSON.parse(fs.readFileSync(new URL('../schema/matrix.schema.json', import.meta.url), 'utf8')) as object;
    const ajv = new Ajv({ allErrors: true, strict: true });
    const validate = ajv.compile(schema);
    const valid = validate(report);
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });

  it('measures every cell of docs/permissions.md with its literal value', () => {
    expect(report.cells).toHaveLength(SCENARIO_IDS.length * CELL_IDS.length);
    for (const s of SCENARIO_IDS) {
      for (const id of CELL_IDS) {
        const cell = report.cells.find((c) => c.scenario === s && c.cell === id);
        expect(cell, `${s} ${id}`).toBeDefined();
        expect({ cell: `${s} ${id}`, measured: cell?.measured, expected: cell?.expected }).toEqual({
          cell: `${s} ${id}`,
          measured: DESIGN_TABLE[s][id],
          expected: DESIGN_TABLE[s][id],
        });
        expect(cell?.ok).toBe(true);
      }
    }
    expect(report.summary).toEqual({ cells: 50, passed: 50, failed: 0, crossUidFailed: 0 });
  });

  it('writes the trajectory into <home>/trajectories/ (redirected out of a git work tree)', () => {
    for (const s of SCENARIO_IDS) {
      const cell = report.cells.find((c) => c.scenario === s && c.cell === 'trajectory');
      expect(cell?.path).toBe('trajectories/trajectory_samples.jsonl');
    }
  });

  itNeeds(['root', 'useradd'], 'as root: the cross-uid rows pass with real users (S3 written, S1 EACCES reported)', () => {
    expect(report.crossUid.ran).toBe(true);
    const s3 = report.crossUid.rows.find((r) => r.scenario === 'S3');
    const s1 = report.crossUid.rows.find((r) => r.scenario === 'S1');
    expect(s3).toMatchObject({ expected: 'written', outcome: 'written', ok: true });
    expect(s1).toMatchObject({ expected: 'failure reported', outcome: 'failure reported', ok: true, code: 'EACCES' });
    expect(s1?.uid).toBe(report.crossUid.users[1]?.uid);
    expect(s1?.detail).toContain(`uid ${String(report.crossUid.users[1]?.uid)}`);
  });

  // Run as a real non-root uid: a throwaway user when the suite runs as root, else the suite's own uid.
  itNeeds(isRoot ? ['useradd'] : [], 'not root: the cross-uid rows are skipped with a reason', () => {
    const users = isRoot ? createTestUsers(1) : undefined;
    try {
      const user = users?.users[0];
      const as = users !== undefined && user !== undefined ? { uid: user.uid, gid: users.gid } : {};
      const run = cli(['matrix', '--only', 'pending-messages', '--cross-uid', '--json'], as);
      expect(run.status, run.stderr).toBe(0);
      const r = JSON.parse(run.stdout) as MatrixReport;
      expect(r.uid).not.toBe(0);
      expect(r.crossUid).toEqual({
        ran: false,
        skipped: 'not running as root (the cross-uid rows need useradd/groupadd and two real uids)',
        users: [],
        group: null,
        rows: [],
        leftover: [],
      });
    } finally {
      users?.cleanup();
    }
  });

  it('removes its temp homes and throwaway users', () => {
    expect(leftovers().filter((n) => !before.temps.includes(n))).toEqual([]);
    expect(throwawayAccounts().filter((n) => !before.accounts.includes(n))).toEqual([]);
  });

  it('prints a table with every cell marked ✓, within 80 columns (text mode, NO_COLOR)', () => {
    const run = cli(['matrix', '--cross-uid'], { env: { NO_COLOR: '1' } });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).not.toMatch(ANSI);
    expect(Math.max(...run.stdout.split('\n').map((l) => displayWidth(l)))).toBeLessThanOrEqual(80);
    const rows = tableRows(run.stdout);
    for (const id of CELL_IDS) {
      expect(rows.get(ROW_LABELS[id]), ROW_LABELS[id]).toEqual(SCENARIO_IDS.map((s) => `✓ ${DESIGN_TABLE[s][id]}`));
    }
    expect(run.stdout).toContain('✓ all 50 cells match docs/permissions.md');
    expect(run.stdout).toContain('<home>/trajectories/');
    expect(run.stdout).toMatch(isRoot ? /cross-uid .*2\/2 ✓/ : /cross-uid rows skipped: not running as root/);
  });

  it('--only limits the run to one artifact', () => {
    const run = cli(['matrix', '--only', 'state-db', '--json']);
    expect(run.status, run.stderr).toBe(0);
    const r = JSON.parse(run.stdout) as MatrixReport;
    expect(r.artifacts).toEqual(['state-db']);
    expect(r.cells.map((c) => `${c.scenario} ${c.cell} ${c.measured ?? '-'}`)).toEqual([
      'S1 state.db 0600', 'S1 state.db-wal 0600', 'S1 state.db-shm 0600',
      'S2 state.db 0600', 'S2 state.db-wal 0600', 'S2 state.db-shm 0600',
      'S3 state.db 0660', 'S3 state.db-wal 0660', 'S3 state.db-shm 0660',
      'S4 state.db 0660', 'S4 state.db-wal 0660', 'S4 state.db-shm 0660',
      'S5 state.db 0600', 'S5 state.db-wal 0600', 'S5 state.db-shm 0600',
    ]);
    expect(r.crossUid).toMatchObject({ ran: false, skipped: 'pending-messages not selected' });
  });

  it('without --cross-uid (or with --no-cross-uid) creates no account and reports the rows skipped, naming the flag', () => {
    const accounts = throwawayAccounts();
    const seen: string[] = [];
    for (const flags of [[], ['--no-cross-uid']]) {
      const run = cli(['matrix', '--only', 'pending-messages', ...flags, '--json']);
      expect(run.status, flags.join(' ')).toBe(0);
      const r = JSON.parse(run.stdout) as MatrixReport;
      expect(r.crossUid, flags.join(' ')).toEqual({
        ran: false,
        skipped: 'not requested: they create two throwaway users and a group; run as root with --cross-uid to add them',
        users: [],
        group: null,
        rows: [],
        leftover: [],
      });
      const created = throwawayAccounts().filter((n) => !accounts.includes(n));
      expect(created, flags.join(' ')).toEqual([]);
      seen.push(`matrix ${flags.join(' ') || '(no flag)'}: cross-uid ran ${String(r.crossUid.ran)}, accounts created ${String(created.length)}`);
    }
    const text = cli(['matrix', '--only', 'pending-messages'], { env: { NO_COLOR: '1', COLUMNS: '80' } });
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout.replace(/\n {2}/g, ' ')).toContain('\ncross-uid rows skipped: not requested: they create two throwaway users and a group; run as root with --cross-uid to add them\n');
    expect(Math.max(...text.stdout.split('\n').map((l) => displayWidth(l)))).toBeLessThanOrEqual(80);
    console.log(`matrix opt-in: ${seen.join('; ')}`);
  });

  it('rejects an unknown --only kind with exit 2', () => {
    const run = cli(['matrix', '--only', 'nope']);
    expect(run.status, run.stderr).toBe(2);
    expect(run.stderr).toContain('nope');
  });
});
