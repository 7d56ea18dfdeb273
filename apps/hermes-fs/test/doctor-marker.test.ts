/**
 * Row 5 of issue #23: a member of the service group replaces the `.managed` marker of a provisioned managed
 * home with one that says `false`. Root's `doctor --fix` must not believe it: the marker is evidence only when
 * root or the home's owner wrote it (a regular file, one link, not writable by group or others). The member is
 * a real second uid acting in its own process; the doctor is the built CLI run as root.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestUsers, describeNeeds, lastJson, runNode, tempRoot, type TestUsers } from '@hermes/test-utils';
import type { DoctorReport } from '../src/index.js';
import { cliJson, fixture, modeOf } from './helpers.js';

describeNeeds(['root', 'linux', 'useradd'], 'row 5: the .managed marker is evidence only when root or the home owner wrote it', () => {
  let users: TestUsers;
  let service: { uid: number; gid: number };
  let member: { uid: number; gid: number };

  beforeAll(() => {
    users = createTestUsers(2);
    service = { uid: users.users[0]?.uid ?? -1, gid: users.gid };
    member = { uid: users.users[1]?.uid ?? -1, gid: users.gid };
  });
  afterAll(() => {
    users.cleanup();
  });

  /** A home as `provision tmpfiles` lays it out (2770, marker root's 0644) with state written by the service. */
  function provisioned(marker: { uid: number; mode: number }): { home: string; stateDb: string } {
    const home = path.join(tempRoot(), 'home');
    for (const d of ['', 'cron', 'sessions', 'logs', 'memories']) {
      const p = path.join(home, d);
      fs.mkdirSync(p, { recursive: true });
      fs.chownSync(p, service.uid, users.gid);
      fs.chmodSync(p, 0o2770);
    }
    const m = path.join(home, '.managed');
    fs.writeFileSync(m, 'nixos\n');
    fs.chownSync(m, marker.uid, users.gid);
    fs.chmodSync(m, marker.mode);
    const seeded = runNode(fixture('seed-home.mjs'), [home], { umask: 0o007, env: { HERMES_HOME: home, HERMES_MANAGED: 'nixos' }, uid: service.uid, gid: users.gid });
    expect(seeded.status, seeded.stderr).toBe(0);
    const { stateDb } = lastJson<{ stateDb: string }>(seeded);
    expect(modeOf(stateDb)).toBe('0660');
    return { home, stateDb };
  }

  /** Every regular file's mode, to count the ones that lost group bits. */
  function fileModes(home: string): Map<string, number> {
    const out = new Map<string, number>();
    const walk = (d: string): void => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        const p = path.join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.isFile()) out.set(p, fs.lstatSync(p).mode & 0o7777);
      }
    };
    walk(home);
    return out;
  }

  function tightened(before: Map<string, number>, home: string): number {
    let n = 0;
    for (const [p, mode] of fileModes(home)) {
      const was = before.get(p);
      if (was !== undefined && (was & 0o070 & ~mode) !== 0) n++;
    }
    return n;
  }

  const variants = [
    { name: 'a file of the member saying false renamed over it', plant: 'replace', marker: { uid: 0, mode: 0o644 } },
    { name: 'a symbolic link to a member file saying false', plant: 'symlink', marker: { uid: 0, mode: 0o644 } },
    { name: 'a group-writable marker rewritten to false in place', plant: 'rewrite', marker: { uid: -1, mode: 0o664 } },
  ] as const;

  it('row 5: an untrusted marker saying false is ignored and reported; doctor --fix tightens no group-shared file (3 plants)', () => {
    const results = variants.map((v) => {
      const { home, stateDb } = provisioned({ uid: v.marker.uid === -1 ? service.uid : v.marker.uid, mode: v.marker.mode });
      const plant = runNode(fixture('marker-plant.mjs'), [v.plant, home, 'false'], { uid: member.uid, gid: users.gid });
      expect(plant.status, plant.stderr).toBe(0);
      const before = fileModes(home);
      const { run, json } = cliJson<DoctorReport>(['doctor', '--home', home, '--fix'], { env: {} });
      return { v, home, stateDb, run, json, lost: tightened(before, home), stateMode: modeOf(stateDb) };
    });
    const counts = results.map(
      (r) =>
        `${r.v.plant}: state.db ${r.stateMode}, ${String(r.lost)} group files tightened, ` +
        `${String(r.json.fix.changes.filter((c) => c.action === 'changed').length)} changes, ${String(r.json.findings.filter((f) => f.type === 'untrusted-marker').length)} untrusted-marker`,
    );
    console.log(`row 5: ${counts.join('; ')}`);
    for (const { v, home, run, json, lost, stateMode } of results) {
      expect(stateMode, v.name).toBe('0660');
      expect(lost, v.name).toBe(0);
      expect(json.fix.changes.filter((c) => c.action === 'changed' || c.action === 'removed' || c.action === 'salvaged'), v.name).toEqual([]);
      expect(run.status, v.name).toBe(1);
      expect(json.managed, v.name).toMatchObject({ managed: false, source: 'none', marker: 'untrusted' });
      const untrusted = json.findings.filter((f) => f.type === 'untrusted-marker');
      expect(untrusted.map((f) => [f.path, f.severity, f.fixable]), v.name).toEqual([[path.join(home, '.managed'), 'error', false]]);
      expect(json.findings.filter((f) => f.type === 'looks-managed').map((f) => f.problem.includes('the marker is untrusted')), v.name).toEqual([true]);
    }
  }, 180_000);

  it('row 5 (control): a marker written by the home owner saying false is believed; HERMES_MANAGED still wins over it', () => {
    const { home, stateDb } = provisioned({ uid: 0, mode: 0o644 });
    const own = runNode(fixture('marker-plant.mjs'), ['owner', home, 'false'], { uid: service.uid, gid: users.gid });
    expect(own.status, own.stderr).toBe(0);
    expect(lastJson<{ uid: number; perm: string }>(own)).toMatchObject({ uid: service.uid, perm: '644' });
    const audit = cliJson<DoctorReport>(['doctor', '--home', home], { env: {} });
    expect(audit.json.managed).toMatchObject({ managed: false, source: 'marker', marker: 'trusted' });
    expect(audit.json.findings.filter((f) => f.type === 'untrusted-marker' || f.type === 'looks-managed')).toEqual([]);
    const env = cliJson<DoctorReport>(['doctor', '--home', home], { env: { HERMES_MANAGED: 'nixos' } });
    expect(env.json.managed).toMatchObject({ managed: true, source: 'env', marker: 'trusted' });
    expect(env.json.findings.filter((f) => f.type === 'state-file-mode' || f.type === 'secret-file-mode')).toEqual([]);
    const before = fileModes(home);
    const fixed = cliJson<DoctorReport>(['doctor', '--home', home, '--fix'], { env: {} });
    const lost = tightened(before, home);
    console.log(`row 5 (control): owner's marker believed (source ${fixed.json.managed.source}); state.db ${modeOf(stateDb)}, ${String(lost)} group files tightened on the owner's word`);
    expect(fixed.json.fix.changes.filter((c) => c.path === stateDb).map((c) => [c.action, c.before, c.after])).toEqual([['changed', '0660', '0600']]);
    expect(modeOf(stateDb)).toBe('0600');
  }, 120_000);
});
