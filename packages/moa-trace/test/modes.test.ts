import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import {
  describeNeeds,
  lastJson,
  makeScenarioHome,
  modeOf,
  runNode,
  scenario,
  scenarioEnv,
  tempRoot,
  type ScenarioId,
} from '@hermes/test-utils';

const fixture = fileURLToPath(new URL('./fixtures/record-turns.mjs', import.meta.url));

interface Summary {
  traceDir: string;
  stats: { written: number; failed: number; lastError: string | null };
  results: { written: boolean; path: string; created: boolean }[];
}

/** docs/permissions.md: moa-traces/ and trace .jsonl columns (S5: HERMES_HOME_MODE is not honoured → 0700). */
const table: readonly { id: ScenarioId; dir: string; file: string }[] = [
  { id: 'S1', dir: '0700', file: '0600' },
  { id: 'S2', dir: '0700', file: '0600' },
  { id: 'S3', dir: '2770', file: '0600' },
  { id: 'S4', dir: '0750', file: '0600' },
  { id: 'S5', dir: '0700', file: '0600' },
];

describeNeeds(['linux'], 'trace modes across S1–S5 (child processes)', () => {
  for (const row of table) {
    it(`${row.id}: moa-traces/ ${row.dir}, sess-1.jsonl ${row.file}`, () => {
      const s = scenario(row.id);
      const home = makeScenarioHome(s, { preexisting: ['moa-traces'] });
      const r = runNode(fixture, [JSON.stringify({ home })], { umask: s.umask, env: scenarioEnv(s, home) });
      const out = lastJson<Summary>(r);
      const dir = path.join(home, 'moa-traces');
      expect(out.traceDir).toBe(dir);
      expect(out.results).toEqual([{ written: true, path: path.join(dir, 'sess-1.jsonl'), created: true }]);
      expect(modeOf(dir)).toBe(row.dir);
      expect(modeOf(path.join(dir, 'sess-1.jsonl'))).toBe(row.file);
    });
  }
});

describeNeeds(['linux'], 'an existing trace file keeps its mode', () => {
  it('0644 stays 0644 after an append, with the line added', () => {
    const home = path.join(tempRoot(), 'home');
    const dir = path.join(home, 'moa-traces');
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'sess-1.jsonl');
    fs.writeFileSync(file, '{"old":true}\n');
    fs.chmodSync(file, 0o644);
    const r = runNode(fixture, [JSON.stringify({ home })], { umask: 0o022, env: { HERMES_HOME: home } });
    expect(lastJson<Summary>(r).results).toEqual([{ written: true, path: file, created: false }]);
    expect(modeOf(file)).toBe('0644');
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toBe('{"old":true}');
    expect(JSON.parse(lines[1] ?? '')).toMatchObject({ session_id: 'sess-1', preset: 'default' });
    expect(lines[2]).toBe('');
  });
});

describeNeeds(['linux'], 'nested trace_dir override: every created level secured, existing levels untouched', () => {
  function setup(auditMode: number): { tmp: string; audit: string; home: string } {
    const tmp = tempRoot();
    const audit = path.join(tmp, 'audit');
    fs.mkdirSync(audit);
    fs.chmodSync(audit, auditMode);
    return { tmp, audit, home: path.join(tmp, 'home') };
  }

  it('unmanaged, umask 022: <tmp>/audit (0755, existed) → shared/ and moa/ created 0700', () => {
    const { audit, home } = setup(0o755);
    const traceDir = path.join(audit, 'shared', 'moa');
    const r = runNode(fixture, [JSON.stringify({ home, traceDir })], { umask: 0o022, env: { HERMES_HOME: home } });
    expect(lastJson<Summary>(r).traceDir).toBe(traceDir);
    expect(modeOf(audit)).toBe('0755');
    expect(modeOf(path.join(audit, 'shared'))).toBe('0700');
    expect(modeOf(traceDir)).toBe('0700');
    expect(modeOf(path.join(traceDir, 'sess-1.jsonl'))).toBe('0600');
  });

  it('unmanaged with HERMES_HOME_MODE=0701: created levels still 0700 (not honoured)', () => {
    const { audit, home } = setup(0o755);
    const traceDir = path.join(audit, 'shared', 'moa');
    runNode(fixture, [JSON.stringify({ home, traceDir })], {
      umask: 0o022,
      env: { HERMES_HOME: home, HERMES_HOME_MODE: '0701' },
    });
    expect(modeOf(audit)).toBe('0755');
    expect(modeOf(path.join(audit, 'shared'))).toBe('0700');
    expect(modeOf(traceDir)).toBe('0700');
  });

  it('`$VAR` and `~` forms expand to the same nested levels', () => {
    const { tmp, audit, home } = setup(0o755);
    const r1 = runNode(fixture, [JSON.stringify({ home, traceDir: '${AUDIT_ROOT}/shared/moa' })], {
      umask: 0o022,
      env: { HERMES_HOME: home, AUDIT_ROOT: audit },
    });
    expect(lastJson<Summary>(r1).traceDir).toBe(path.join(audit, 'shared', 'moa'));
    const r2 = runNode(fixture, [JSON.stringify({ home, traceDir: '~/audit/other/moa' })], {
      umask: 0o022,
      env: { HERMES_HOME: home, HOME: tmp },
    });
    expect(lastJson<Summary>(r2).traceDir).toBe(path.join(audit, 'other', 'moa'));
    expect(modeOf(audit)).toBe('0755');
    for (const level of ['shared', 'shared/moa', 'other', 'other/moa']) expect(modeOf(path.join(audit, level))).toBe('0700');
  });

  it('managed, umask 0007, <tmp>/audit 2770 setgid: created levels come out 2770', () => {
    const { audit, home } = setup(0o2770);
    fs.mkdirSync(home);
    fs.chmodSync(home, 0o2770);
    const traceDir = path.join(audit, 'shared', 'moa');
    const r = runNode(fixture, [JSON.stringify({ home, traceDir })], {
      umask: 0o007,
      env: { HERMES_HOME: home, HERMES_MANAGED: 'nixos' },
    });
    expect(lastJson<Summary>(r).stats).toEqual({ written: 1, failed: 0, lastError: null });
    expect(modeOf(audit)).toBe('2770');
    expect(modeOf(path.join(audit, 'shared'))).toBe('2770');
    expect(modeOf(traceDir)).toBe('2770');
    expect(modeOf(path.join(traceDir, 'sess-1.jsonl'))).toBe('0600');
  });

  it('relative override inside the home: every created level 0700, the home too when this call creates it', () => {
    const { home } = setup(0o755);
    const r = runNode(fixture, [JSON.stringify({ home, traceDir: 'audit/shared/moa' })], {
      umask: 0o022,
      env: { HERMES_HOME: home },
    });
    expect(lastJson<Summary>(r).traceDir).toBe(path.join(home, 'audit', 'shared', 'moa'));
    for (const level of ['', 'audit', 'audit/shared', 'audit/shared/moa']) expect(modeOf(path.join(home, level))).toBe('0700');
  });
});
