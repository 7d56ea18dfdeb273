/**
 * `hermes-fs doctor --fix` as root on a home that a member of the service group races: the attacker is a real
 * second uid in its own process, in a tight loop. What is measured is what matters: the modes, owners and
 * ctimes of everything outside the home, before and after.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ATTACKER, createTestUsers, describeNeeds, lastJson, metadata, race, runAs, runNode, tempRoot, type TestUsers } from '@hermes/test-utils';
import type { DoctorReport } from '../src/index.js';
import { BIN, cliJson, fixture, modeOf } from './helpers.js';

interface LoopTotals {
  runs: number;
  changed: number;
  left: number;
  failed: number;
  refused: number;
  unusable: number;
}

const ROOT = { uid: 0, gid: 0 };

describeNeeds(['root', 'linux', 'useradd'], 'doctor --fix as root against a member of the service group', () => {
  let users: TestUsers;
  let service: { uid: number; gid: number };
  let attacker: { uid: number; gid: number };

  beforeAll(() => {
    users = createTestUsers(2);
    service = { uid: users.users[0]?.uid ?? -1, gid: users.gid };
    attacker = { uid: users.users[1]?.uid ?? -1, gid: users.gid };
  });
  afterAll(() => {
    users.cleanup();
  });

  /** Things outside the home that root could be steered into: a system-like tree and a root-private directory. */
  function victims(base: string): string {
    const v = path.join(base, 'victims');
    fs.mkdirSync(path.join(v, 'etc'), { recursive: true, mode: 0o755 });
    fs.chmodSync(v, 0o755);
    fs.writeFileSync(path.join(v, 'etc', 'passwd'), 'root:x:0:0\n', { mode: 0o644 });
    fs.writeFileSync(path.join(v, 'x.jsonl'), '{}\n', { mode: 0o644 });
    fs.mkdirSync(path.join(v, 'private'), { mode: 0o700 });
    fs.mkdirSync(path.join(v, 'trajectories'), { mode: 0o700 });
    fs.chmodSync(path.join(v, 'private'), 0o700);
    return v;
  }

  function sharedDir(p: string, mode = 0o2770): void {
    fs.mkdirSync(p, { recursive: true });
    fs.chownSync(p, service.uid, users.gid);
    fs.chmodSync(p, mode);
  }

  for (const how of ['managed', 'unmanaged'] as const) {
    it(`a home whose parent the group can write, swapped for a link (${how}): 100 doctor --fix runs change nothing outside`, async () => {
      const base = tempRoot();
      const v = victims(base);
      const state = path.join(base, 'state');
      sharedDir(state); // the NixOS state directory: group-writable
      const home = path.join(state, 'home');
      sharedDir(home, how === 'managed' ? 0o2770 : 0o700);
      sharedDir(path.join(home, 'moa-traces'), how === 'managed' ? 0o2770 : 0o700);
      const before = metadata(v);
      const stop = path.join(base, 'stop');
      const r = await race(stop, ['relink', state, 'home', v], attacker, async () =>
        lastJson<LoopTotals>(await runAs(fixture('doctor-loop.mjs'), [home, '100', how], ROOT, {}, 240_000)),
      );
      console.log(`doctor vs relinked home (${how}): ${String(r.victim.runs)} runs vs ${String(r.rounds)} attacker rounds; refused ${String(r.victim.refused)}, unusable ${String(r.victim.unusable)}, changes ${String(r.victim.changed)}; outside: ${JSON.stringify(metadata(v)) === JSON.stringify(before) ? '0 changed' : 'CHANGED'}`);
      expect(metadata(v)).toEqual(before);
      expect(r.victim.changed).toBe(0);
      expect(r.victim.refused + r.victim.unusable).toBe(r.victim.runs);
    }, 300_000);
  }

  it('the audit/fix race: 500 doctor --fix runs while artifact directories are swapped for links to outside targets; 0 changes outside', async () => {
    const base = tempRoot();
    const v = victims(base);
    const home = path.join(base, 'home');
    sharedDir(home);
    sharedDir(path.join(home, 'moa-traces'));
    fs.writeFileSync(path.join(home, 'moa-traces', 'x.jsonl'), '{}\n');
    fs.chownSync(path.join(home, 'moa-traces', 'x.jsonl'), service.uid, users.gid);
    sharedDir(path.join(home, 'trajectories'), 0o700);
    const before = metadata(v);
    const stop = path.join(base, 'stop');
    // The attacker swaps moa-traces for a link to the victims (whose x.jsonl is 0644) — and the loop needs two
    // attackers' worth of targets: trajectories is swapped in the same loop by a second attacker process.
    const second = runAs(ATTACKER, ['swap', stop, '300000', home, 'trajectories', v], attacker, {}, 330_000);
    const r = await race(stop, ['swap', home, 'moa-traces', v], attacker, async () =>
      lastJson<LoopTotals>(await runAs(fixture('doctor-loop.mjs'), [home, '500', 'managed', 'moa-traces/x.jsonl', 'trajectories'], ROOT, {}, 600_000)),
    );
    await second;
    console.log(
      `doctor audit/fix race: ${String(r.victim.runs)} runs vs ${String(r.rounds)} attacker rounds; changes in the home ${String(r.victim.changed)}, left ${String(r.victim.left)}, failed ${String(r.victim.failed)}; outside: ${JSON.stringify(metadata(v)) === JSON.stringify(before) ? '0 changed' : 'CHANGED'}`,
    );
    expect(metadata(v)).toEqual(before);
    expect(r.victim.changed).toBeGreaterThan(0); // the doctor did its job inside the home meanwhile
  }, 700_000);

  it('a file hard-linked from outside the home is reported and never chmodded', () => {
    const base = tempRoot();
    const home = path.join(base, 'home');
    sharedDir(home);
    sharedDir(path.join(home, 'moa-traces'));
    const outside = path.join(base, 'outside.jsonl');
    fs.writeFileSync(outside, 'theirs\n', { mode: 0o644 });
    fs.chownSync(outside, service.uid, users.gid);
    fs.chmodSync(outside, 0o644);
    fs.linkSync(outside, path.join(home, 'moa-traces', 'h.jsonl'));
    const before = fs.statSync(outside).ctimeMs;
    const { run, json } = cliJson<DoctorReport>(['doctor', '--home', home, '--managed', '--fix']);
    expect(json.findings.map((f) => [f.type, path.relative(home, f.path)])).toEqual(expect.arrayContaining([['hard-link', 'moa-traces/h.jsonl']]));
    expect(json.fix.changes.filter((c) => c.path === path.join(home, 'moa-traces', 'h.jsonl')).map((c) => c.action)).toEqual(['left']);
    expect(modeOf(outside)).toBe('0644');
    expect(fs.statSync(outside).ctimeMs).toBe(before);
    expect(run.status, run.stderr).toBe(1);
  });

  it('--home / is refused (exit 2) in a mount namespace where / is read-only: / is untouched', () => {
    const rootMode = fs.statSync('/').mode;
    const r = spawnSync(
      'unshare',
      ['--mount', '--propagation', 'private', '/bin/sh', '-c', 'mount -o remount,bind,ro / 2>/dev/null; exec "$0" "$@"', process.execPath, BIN, 'doctor', '--home', '/', '--fix', '--unmanaged', '--json'],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect(r.status, r.stderr).toBe(2);
    expect(`${r.stdout}${r.stderr}`).toContain('filesystem root');
    // The --json error document names the refusal and the path (schema/error.schema.json).
    expect(JSON.parse(r.stdout)).toMatchObject({ error: { code: 'EDANGEROUS_HOME', path: '/' } });
    expect(fs.statSync('/').mode).toBe(rootMode);
  });

  it('a NixOS home without the marker under an empty environment: --fix changes nothing and says it looks managed; --managed: 0 findings; the second uid then writes', async () => {
    const base = tempRoot();
    const home = path.join(base, 'home');
    sharedDir(home);
    for (const d of ['cron', 'sessions', 'logs', 'memories']) sharedDir(path.join(home, d));
    const env = { HERMES_HOME: home, HERMES_MANAGED: 'nixos' };
    // The gateway wrote as the service uid, managed, umask 0007 (pending_messages/ comes out 2770).
    const f = await runAs(fixture('flush-one.mjs'), ['agent:main:telegram:dm:1', 'from the service'], service, env, 60_000);
    expect(f.status, f.stderr).toBe(0);
    expect(modeOf(path.join(home, 'pending_messages'))).toBe('2770');
    const before = metadata(home);
    const fixed = cliJson<DoctorReport>(['doctor', '--home', home, '--fix'], { env: {} });
    expect(fixed.run.status, fixed.run.stderr).toBe(1);
    expect(fixed.json.findings.filter((x) => x.type === 'looks-managed')).toHaveLength(1);
    expect(fixed.json.findings.find((x) => x.type === 'looks-managed')?.problem).toContain('this home looks managed (the home 2770');
    expect(metadata(home)).toEqual(before);
    const managed = cliJson<DoctorReport>(['doctor', '--home', home, '--managed'], { env: {} });
    expect(managed.json.findings).toEqual([]);
    expect(managed.run.status, managed.run.stderr).toBe(0);
    const second = await runAs(fixture('flush-one.mjs'), ['agent:main:telegram:dm:2', 'from the second uid'], attacker, env, 60_000);
    expect(second.status, second.stderr).toBe(0);
    expect(lastJson<{ written: string[] }>(second).written).toHaveLength(1);
  }, 120_000);

  it('the reference\'s state.db left 0600 on a managed home: reported, --fix makes it 0660, the second uid\'s recovery then succeeds', async () => {
    const base = tempRoot();
    const home = path.join(base, 'home');
    sharedDir(home);
    for (const d of ['cron', 'sessions', 'logs', 'memories']) sharedDir(path.join(home, d));
    const env = { HERMES_HOME: home, HERMES_MANAGED: 'nixos' };
    const seeded = runNode(fixture('seed-home.mjs'), [home], { umask: 0o007, env, uid: service.uid, gid: users.gid });
    expect(seeded.status, seeded.stderr).toBe(0);
    const { sessionId, stateDb } = JSON.parse(seeded.stdout.trim()) as { sessionId: string; stateDb: string };
    for (const f of [stateDb, `${stateDb}-wal`, `${stateDb}-shm`]) if (fs.existsSync(f)) fs.chmodSync(f, 0o600); // what the reference leaves
    const flush = await runAs(fixture('flush-one.mjs'), ['agent:main:telegram:dm:2', 'from the second uid', sessionId], attacker, env, 60_000);
    expect(flush.status, flush.stderr).toBe(0);
    // Control: while state.db is 0600 the second uid cannot recover into it.
    const denied = runNode(BIN, ['pending', 'recover', '--home', home, '--json'], { umask: 0o007, env, uid: attacker.uid, gid: users.gid });
    expect(denied.status).not.toBe(0);
    const audit = cliJson<DoctorReport>(['doctor', '--home', home, '--managed']);
    expect(audit.json.findings.filter((x) => x.type === 'state-file-mode').map((x) => [path.relative(home, x.path), x.mode, x.expected])).toEqual(
      expect.arrayContaining([['state.db', '0600', '0660']]),
    );
    const fixed = cliJson<DoctorReport>(['doctor', '--home', home, '--managed', '--fix']);
    expect(fixed.json.fix.changes.filter((c) => c.type === 'state-file-mode').map((c) => [path.relative(home, c.path), c.action, c.before, c.after])).toEqual(
      expect.arrayContaining([['state.db', 'changed', '0600', '0660']]),
    );
    expect(modeOf(stateDb)).toBe('0660');
    const ok = runNode(BIN, ['pending', 'recover', '--home', home, '--json'], { umask: 0o007, env, uid: attacker.uid, gid: users.gid });
    expect(ok.status, ok.stderr).toBe(0);
    expect((JSON.parse(ok.stdout) as { report: { inserted: unknown[] } }).report.inserted).toHaveLength(1);
  }, 120_000);
});
