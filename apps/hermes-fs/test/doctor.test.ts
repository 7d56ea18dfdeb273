import * as fs from 'node:fs';
import * as path from 'node:path';
import { createTestUsers, itNeeds, runNode } from '@hermes/test-utils';
import { afterAll, describe, expect, it } from 'vitest';
import type { DoctorReport, Finding } from '../src/index.js';
import { BIN, cli, cliJson, freshHome, modeOf, seedHome, snapshotTree, cleanupHomes } from './helpers.js';

/** This machine's pid namespace: a temp name carries its writer's, and a dead pid counts only within it. */
const PIDNS = fs.readlinkSync('/proc/self/ns/pid').replace(/^pid:\[(\d+)\]$/, '$1');

afterAll(cleanupHomes);

function doctor(home: string, args: readonly string[] = [], env: Record<string, string> = {}) {
  return cliJson<DoctorReport>(['doctor', '--home', home, ...args], { env });
}

function ofType(report: DoctorReport, type: Finding['type']): Finding[] {
  return report.findings.filter((f) => f.type === type);
}

/** A seeded unmanaged home (umask 022): every artifact written through its package. */
function cleanHome(): { home: string; seed: ReturnType<typeof seedHome> } {
  const home = freshHome();
  const seed = seedHome(home);
  return { home, seed };
}

/** A managed home as the NixOS module lays it out: 2770 setgid home and subdirs, service umask 0007. */
function managedHome(): { home: string; seed: ReturnType<typeof seedHome> } {
  const home = freshHome();
  fs.mkdirSync(home);
  fs.chmodSync(home, 0o2770);
  for (const d of ['cron', 'sessions', 'logs', 'memories']) {
    fs.mkdirSync(path.join(home, d));
    fs.chmodSync(path.join(home, d), 0o2770);
  }
  const seed = seedHome(home, { umask: 0o007, env: { HERMES_MANAGED: 'nixos' } });
  return { home, seed };
}

const MANAGED = { HERMES_MANAGED: 'nixos' };

describe('hermes-fs doctor: clean homes', () => {
  it('a clean unmanaged home has zero findings and exits 0', () => {
    const { home } = cleanHome();
    const { run, json } = doctor(home);
    expect(json.findings).toEqual([]);
    expect(run.status, run.stderr).toBe(0);
    expect(json.managed.managed).toBe(false);
    expect(json.spool).toMatchObject({ exists: true, files: 1, payloads: 1, bad: 0, snapshots: 0 });
    const text = cli(['doctor', '--home', home], { env: { NO_COLOR: '1' } });
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout).toContain('✓ no findings');
  });

  it('a managed home (HERMES_MANAGED=nixos) with correct 2770 directories is not reported', () => {
    const { home } = managedHome();
    // What the runtime produced under UMask=0007 in the setgid home: the literal managed layout.
    expect(modeOf(home)).toBe('2770');
    expect(modeOf(path.join(home, 'pending_messages'))).toBe('2770');
    expect(modeOf(path.join(home, 'moa-traces'))).toBe('2770');
    expect(modeOf(path.join(home, 'sessions', 'saved'))).toBe('2770');
    expect(modeOf(path.join(home, 'trajectories'))).toBe('2770');
    expect(modeOf(path.join(home, 'state.db'))).toBe('0660');
    const { run, json } = doctor(home, [], MANAGED);
    expect(json.managed).toEqual({ managed: true, system: 'nixos', source: 'env', marker: 'absent', looksManaged: ['the home 2770', 'cron 2770', 'logs 2770', 'memories 2770', 'moa-traces 2770', 'pending_messages 2770', 'sessions 2770', 'state.db 0660', 'trajectories 2770', 'sessions/saved 2770'] });
    expect(json.findings).toEqual([]);
    expect(run.status, run.stderr).toBe(0);
  });

  it('the .managed marker alone makes the home managed', () => {
    const { home } = managedHome();
    fs.writeFileSync(path.join(home, '.managed'), 'nixos\n');
    const { json } = doctor(home);
    expect(json.managed).toEqual({ managed: true, system: 'nixos', source: 'marker', marker: 'trusted', looksManaged: ['the home 2770', 'cron 2770', 'logs 2770', 'memories 2770', 'moa-traces 2770', 'pending_messages 2770', 'sessions 2770', 'state.db 0660', 'trajectories 2770', 'sessions/saved 2770'] });
    expect(json.findings).toEqual([]);
  });
});

describe('hermes-fs doctor: one finding type at a time', () => {
  it('dir-mode: an unmanaged artifact directory looser than policy', () => {
    const { home } = cleanHome();
    const dir = path.join(home, 'pending_messages');
    fs.chmodSync(dir, 0o755);
    const { run, json } = doctor(home);
    expect(run.status, run.stderr).toBe(1);
    expect(ofType(json, 'dir-mode')).toEqual([
      expect.objectContaining({ severity: 'error', path: dir, kind: 'pending-messages', mode: '0755', expected: '0700', fixable: true }),
    ]);
    expect(json.findings).toHaveLength(1);
    expect(ofType(json, 'dir-mode')[0]?.fix).toContain(`chmod 0700 ${dir}`);
  });

  it('dir-mode: HERMES_HOME_MODE=0701 is the policy for pending_messages/ but not for moa-traces/', () => {
    const { home } = cleanHome();
    const { json } = doctor(home, [], { HERMES_HOME_MODE: '0701' });
    // The home and pending_messages/ honour HERMES_HOME_MODE; moa-traces/, sessions/saved/ and trajectories/ do not.
    expect(ofType(json, 'dir-mode').map((f) => [path.relative(home, f.path), f.mode, f.expected, f.severity])).toEqual([
      ['', '0700', '0701', 'warning'],
      ['pending_messages', '0700', '0701', 'warning'],
      ['sessions', '0700', '0701', 'warning'],
    ]);
  });

  it('managed-group-access: a legacy 0700 directory in a managed home', () => {
    const { home } = managedHome();
    const dir = path.join(home, 'pending_messages');
    fs.chmodSync(dir, 0o700);
    const { run, json } = doctor(home, [], MANAGED);
    expect(run.status, run.stderr).toBe(1);
    expect(json.findings).toEqual([
      expect.objectContaining({ type: 'managed-group-access', severity: 'error', path: dir, mode: '0700', expected: '2770', fixable: true }),
    ]);
    expect(json.findings[0]?.problem).toMatch(/EACCES/);
  });

  it('secret-file-mode: group/world-readable payload, state.db, trace, snapshot, trajectory and .env', () => {
    const { home, seed } = cleanHome();
    const env = path.join(home, '.env');
    fs.writeFileSync(env, 'OPENAI_API_KEY=sk-test\n');
    fs.chmodSync(env, 0o644);
    fs.chmodSync(seed.payload, 0o644);
    fs.chmodSync(seed.stateDb, 0o640);
    fs.chmodSync(seed.trace, 0o604);
    fs.chmodSync(seed.snapshot, 0o660);
    fs.chmodSync(seed.trajectory, 0o644);
    const { run, json } = doctor(home);
    expect(run.status, run.stderr).toBe(1);
    const fix = (p: string): string => `hermes-fs doctor --fix --home ${home}   (fs-policy reconcileFile; or: chmod 0600 ${p})`;
    const got = ofType(json, 'secret-file-mode').map((f) => [path.relative(home, f.path), f.severity, f.mode, f.expected, f.fix, f.fixable]);
    expect(got).toEqual(
      expect.arrayContaining([
        ['.env', 'error', '0644', '0600', fix(env), true],
        [path.relative(home, seed.payload), 'error', '0644', '0600', fix(seed.payload), true],
        ['state.db', 'warning', '0640', '0600', fix(seed.stateDb), true],
        [path.relative(home, seed.trace), 'error', '0604', '0600', fix(seed.trace), true],
        [path.relative(home, seed.snapshot), 'warning', '0660', '0600', fix(seed.snapshot), true],
        [path.relative(home, seed.trajectory), 'error', '0644', '0600', fix(seed.trajectory), true],
      ]),
    );
    expect(got).toHaveLength(6);
  });

  it('secret-file-mode: a managed home allows state.db 0660 and .env 0640, not a group-readable payload', () => {
    const { home, seed } = managedHome();
    const env = path.join(home, '.env');
    fs.writeFileSync(env, 'K=v\n');
    fs.chmodSync(env, 0o640);
    fs.chmodSync(seed.payload, 0o640);
    const { json } = doctor(home, [], MANAGED);
    expect(json.findings.map((f) => [f.type, path.relative(home, f.path), f.mode, f.expected])).toEqual([
      ['secret-file-mode', path.relative(home, seed.payload), '0640', '0600'],
    ]);
  });

  itNeeds(['root'], 'owner: a file owned by another uid in an unmanaged home', () => {
    const { home, seed } = cleanHome();
    fs.chownSync(seed.trace, 4242, 4242);
    const { json } = doctor(home);
    const homeUid = fs.statSync(home).uid;
    expect(ofType(json, 'owner')).toEqual([
      expect.objectContaining({ severity: 'warning', path: seed.trace, fix: `chown ${homeUid}:${fs.statSync(home).gid} ${seed.trace}` }),
    ]);
  });

  it('symlink-escape: a link that leaves the home', () => {
    const { home } = cleanHome();
    const link = path.join(home, 'sessions', 'exports');
    fs.symlinkSync('/etc', link);
    const { run, json } = doctor(home);
    expect(run.status, run.stderr).toBe(1);
    expect(json.findings).toEqual([expect.objectContaining({ type: 'symlink-escape', severity: 'warning', path: link, fixable: false })]);
    expect(json.findings[0]?.fix).toContain(`rm ${link}`);
  });

  it('symlink-dangling: a link whose target is missing (an unmounted volume)', () => {
    const { home } = cleanHome();
    const link = path.join(home, 'moa-traces', 'archive');
    fs.symlinkSync('/mnt/hermes-not-mounted/archive', link);
    const { json } = doctor(home);
    expect(json.findings).toEqual([expect.objectContaining({ type: 'symlink-dangling', severity: 'warning', path: link })]);
  });

  it('temp-file: a leftover fs-policy temp file of a dead writer; --fix sweeps it', () => {
    const { home } = cleanHome();
    const temp = path.join(home, 'sessions', 'saved', `.hermes_conversation_x.json.4194305-${PIDNS}.0123456789ab.tmp`);
    fs.writeFileSync(temp, '{"partial":');
    fs.chmodSync(temp, 0o600);
    const { json } = doctor(home);
    expect(json.findings).toEqual([expect.objectContaining({ type: 'temp-file', severity: 'warning', path: temp, fixable: true })]);
    const fixed = doctor(home, ['--fix']);
    expect(fixed.json.fix.changes).toEqual([expect.objectContaining({ type: 'temp-file', path: temp, action: 'removed' })]);
    expect(fs.existsSync(temp)).toBe(false);
    expect(fixed.json.findings).toEqual([]);
    expect(fixed.run.status, fixed.run.stderr).toBe(0);
  });

  it('a complete payload left under a temp name by a killed writer is salvaged into the spool, never swept', () => {
    const { home, seed } = cleanHome();
    const final = seed.payload;
    const temp = path.join(path.dirname(final), `.${path.basename(final)}.4194305-${PIDNS}.0123456789ab.tmp`);
    const bytes = fs.readFileSync(final);
    fs.renameSync(final, temp); // as a writer killed between its fsync and its rename leaves it
    const { json } = doctor(home);
    expect(json.findings).toEqual([expect.objectContaining({ type: 'temp-file', path: temp, fixable: true, kind: 'pending-messages' })]);
    expect(json.findings[0]?.problem).toContain('a message that must not be lost');
    const fixed = doctor(home, ['--fix']);
    expect(fixed.json.fix.changes.map((c) => [c.path, c.action, c.detail])).toEqual([
      [temp, 'salvaged', `adopted into the spool as ${path.basename(final)} (@hermes/gateway salvageTemps)`],
    ]);
    expect(fs.readFileSync(final)).toEqual(bytes);
    expect(fs.existsSync(temp)).toBe(false);
    expect(fixed.json.findings).toEqual([]);
  });

  it('config: an invalid config.yaml is reported with the key and the fallback', () => {
    const { home } = cleanHome();
    const file = path.join(home, 'config.yaml');
    fs.writeFileSync(file, 'gateway:\n  pending:\n    max_files: -1\n');
    fs.chmodSync(file, 0o600);
    const { json } = doctor(home);
    expect(json.findings).toEqual([expect.objectContaining({ type: 'config', severity: 'error', path: file })]);
    expect(json.findings[0]?.problem).toContain('gateway.pending.max_files');
  });

  it('environment: an unusable HERMES_HOME_MODE is reported (and 0700 applies)', () => {
    const { home } = cleanHome();
    const { json } = doctor(home, [], { HERMES_HOME_MODE: '4777' });
    expect(ofType(json, 'environment')).toEqual([expect.objectContaining({ severity: 'warning', path: home })]);
    expect(json.homeMode).toEqual({ mode: '0700', source: 'default' });
  });

  itNeeds(['root', 'useradd'], 'unreadable: a directory the auditing uid cannot read is reported, not skipped silently', () => {
    const { home } = cleanHome();
    fs.chmodSync(path.dirname(home), 0o755);
    fs.chmodSync(home, 0o755);
    const users = createTestUsers(1);
    try {
      const user = users.users[0];
      if (user === undefined) throw new Error('no test user');
      const r = runNode(BIN, ['doctor', '--home', home, '--json'], { uid: user.uid, gid: users.gid });
      const json = JSON.parse(r.stdout) as DoctorReport;
      expect(ofType(json, 'unreadable').map((f) => path.relative(home, f.path)).sort()).toEqual(
        ['moa-traces', 'pending_messages', 'sessions', 'trajectories'],
      );
    } finally {
      users.cleanup();
    }
  });
});

describe('hermes-fs doctor --fix and --dry-run', () => {
  function brokenHome(): { home: string; seed: ReturnType<typeof seedHome> } {
    const h = cleanHome();
    fs.chmodSync(h.home, 0o755);
    fs.chmodSync(path.join(h.home, 'moa-traces'), 0o775);
    fs.chmodSync(path.join(h.home, 'sessions', 'saved'), 0o750);
    fs.chmodSync(h.seed.snapshot, 0o644);
    const temp = path.join(h.home, 'pending_messages', `.pending-x.json.4194305-${PIDNS}.0123456789ab.tmp`);
    fs.writeFileSync(temp, '{');
    fs.chmodSync(temp, 0o600);
    return h;
  }

  it('--fix --unmanaged repairs through fs-policy and a second doctor reports nothing fixable', () => {
    const { home, seed } = brokenHome();
    const { run, json } = doctor(home, ['--fix', '--unmanaged']);
    expect(json.fix.changes.map((c) => [path.relative(home, c.path), c.action, c.before, c.after])).toEqual(
      expect.arrayContaining([
        ['', 'changed', '0755', '0700'],
        ['moa-traces', 'changed', '0775', '0700'],
        ['sessions/saved', 'changed', '0750', '0700'],
        [path.relative(home, seed.snapshot), 'changed', '0644', '0600'],
        [`pending_messages/.pending-x.json.4194305-${PIDNS}.0123456789ab.tmp`, 'salvaged', null, null],
      ]),
    );
    expect(json.fix.changes).toHaveLength(5);
    expect(modeOf(home)).toBe('0700');
    expect(modeOf(path.join(home, 'moa-traces'))).toBe('0700');
    expect(modeOf(path.join(home, 'sessions', 'saved'))).toBe('0700');
    // The snapshot is tightened through fs-policy's reconcileFile; nothing actionable is left: exit 0. The temp
    // moved aside stays visible: one info finding naming the command that lists it.
    expect(modeOf(seed.snapshot)).toBe('0600');
    expect(json.findings.map((f) => [f.type, f.severity, path.relative(home, f.path)])).toEqual([['temp-file', 'info', 'pending_messages']]);
    expect(run.status, run.stderr).toBe(0);
    const again = doctor(home, ['--unmanaged']);
    expect(again.json.summary.fixable).toBe(0);
    expect(again.json.findings.filter((f) => f.fixable)).toEqual([]);
  });

  it('--fix widens a legacy 0700 managed home to 2770 (operator repair) and then reports nothing', () => {
    const { home } = managedHome();
    for (const d of ['', 'pending_messages', 'moa-traces', 'sessions/saved']) fs.chmodSync(path.join(home, d), 0o700);
    const first = doctor(home, [], MANAGED);
    expect(first.json.findings.map((f) => [f.type, path.relative(home, f.path), f.expected])).toEqual(
      expect.arrayContaining([
        ['managed-group-access', '', '2770'],
        ['managed-group-access', 'pending_messages', '2770'],
        ['managed-group-access', 'moa-traces', '2770'],
        ['managed-group-access', 'sessions/saved', '2770'],
      ]),
    );
    const fixed = doctor(home, ['--fix'], MANAGED);
    expect(fixed.json.fix.changes.every((c) => c.action === 'changed' && c.after === '2770')).toBe(true);
    expect(fixed.json.fix.changes).toHaveLength(4);
    for (const d of ['', 'pending_messages', 'moa-traces', 'sessions/saved']) expect(modeOf(path.join(home, d))).toBe('2770');
    expect(fixed.json.findings).toEqual([]);
    expect(fixed.run.status, fixed.run.stderr).toBe(0);
    const again = doctor(home, [], MANAGED);
    expect(again.json.findings).toEqual([]);
  });

  it('--dry-run changes nothing: every path byte-, mode- and ctime-identical', () => {
    const { home } = brokenHome();
    const before = snapshotTree(home);
    const { json } = doctor(home, ['--fix', '--dry-run', '--unmanaged']);
    expect(json.fix.dryRun).toBe(true);
    expect(json.fix.changes.map((c) => c.action).sort()).toEqual(['would-change', 'would-change', 'would-change', 'would-change', 'would-salvage']);
    expect(snapshotTree(home)).toEqual(before);
    const plain = doctor(home, ['--dry-run', '--unmanaged']);
    expect(plain.json.fix.changes).toHaveLength(5);
    expect(snapshotTree(home)).toEqual(before);
  });
});

describe('hermes-fs doctor: scale and errors', () => {
  it('audits a home with 100,000 files: every file counted, nothing reported (its speed is benchmark B5, pnpm bench)', () => {
    const { home } = cleanHome();
    const many = path.join(home, 'sessions', 'bulk');
    fs.mkdirSync(many);
    fs.chmodSync(many, 0o700);
    for (let d = 0; d < 100; d++) {
      const sub = path.join(many, `d${d}`);
      fs.mkdirSync(sub);
      for (let f = 0; f < 1000; f++) fs.writeFileSync(path.join(sub, `f${f}.txt`), '');
    }
    // Counted independently of the CLI: every regular file under the home.
    const files = fs.readdirSync(home, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length;
    expect(files).toBeGreaterThanOrEqual(100_000);
    const { run, json } = doctor(home);
    expect(run.status, run.stderr).toBe(0);
    expect(json.scanned.files).toBe(files);
    expect(json.findings).toEqual([]);
  });

  it('a missing home is an error (exit 2) with one line and a hint, no stack trace', () => {
    const r = cli(['doctor', '--home', '/nonexistent/hermes-home']);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toBe(
      'hermes-fs: error: cannot use the Hermes home /nonexistent/hermes-home: it does not exist\n' +
        'hint: pass the home with --home DIR (before or after the command) or set HERMES_HOME\n',
    );
  });
});
