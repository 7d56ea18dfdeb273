/**
 * The `.managed` marker is evidence only when root or the home's owner wrote it (issue #23 rows 5 and 13):
 * every other thing under the name is ignored and said, and a home the process cannot search gives an
 * unknown state, never "marker exists". Real files, real second uids (root only), real child processes.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUsers, describeNeeds, lastJson, runNode, tempRoot, type TestUsers } from '@hermes/test-utils';
import { detectManaged, ensureHermesHomeSync, inspectManagedMarker, loadEnvironment, type ManagedInfo } from '../src/index.js';
import { fixture } from './helpers.js';

/** The modes the umask would take off when the file is created. */
const WRITABLE: Readonly<Record<string, number | undefined>> = { 'a group-writable file': 0o664, 'a world-writable file': 0o646 };

describe('the marker as the home owner sees it', () => {
  it('absent, trusted (content decides), and a FIFO, a link, a hard link, a group-writable or oversized file ignored', () => {
    const home = path.join(tempRoot(), 'home');
    fs.mkdirSync(home);
    const marker = path.join(home, '.managed');
    expect(detectManaged(home, {})).toEqual({ managed: false, system: null, source: 'none', raw: null, marker: 'absent', warnings: [] });
    fs.writeFileSync(marker, 'home-manager\n', { mode: 0o644 });
    expect(detectManaged(home, {})).toMatchObject({ managed: true, system: 'home-manager', source: 'marker', marker: 'trusted', warnings: [] });
    const cases: [string, () => void, string][] = [
      ['a FIFO', () => execFileSync('mkfifo', [marker]), 'ENOTREGULAR'],
      ['a link', () => { fs.symlinkSync('elsewhere', marker); }, 'ESYMLINK'],
      ['a group-writable file', () => { fs.writeFileSync(marker, 'false\n', { mode: 0o664 }); }, 'EWRITABLE'],
      ['a world-writable file', () => { fs.writeFileSync(marker, 'false\n', { mode: 0o646 }); }, 'EWRITABLE'],
      ['a hard link', () => {
        fs.writeFileSync(path.join(home, 'other'), 'false\n', { mode: 0o644 });
        fs.linkSync(path.join(home, 'other'), marker);
      }, 'EHARDLINK'],
      ['5000 bytes', () => { fs.writeFileSync(marker, 'x'.repeat(5000), { mode: 0o644 }); }, 'ETOO_LARGE'],
    ];
    const seen: string[] = [];
    for (const [what, make, code] of cases) {
      fs.rmSync(marker, { force: true });
      fs.rmSync(path.join(home, 'other'), { force: true });
      make();
      const wanted = WRITABLE[what];
      if (wanted !== undefined) fs.chmodSync(marker, wanted); // the umask took the write bits off
      const m = inspectManagedMarker(home);
      const info = detectManaged(home, {});
      seen.push(`${what}: ${m.state}/${m.code ?? ''}`);
      expect(m, what).toMatchObject({ state: 'untrusted', code, content: null });
      expect(info, what).toMatchObject({ managed: false, source: 'none', raw: null, marker: 'untrusted' });
      expect(info.warnings?.[0], what).toContain('it is ignored');
      // HERMES_MANAGED wins without looking at the marker.
      expect(detectManaged(home, { HERMES_MANAGED: 'nixos' }), what).toMatchObject({ managed: true, source: 'env', marker: 'unread' });
    }
    console.log(`marker cases: ${seen.join('; ')}`);
  });
});

describeNeeds(['root', 'linux', 'useradd'], 'the marker and other uids (real second uids)', () => {
  let users: TestUsers;
  let owner: { uid: number; gid: number };
  let member: { uid: number; gid: number };

  beforeAll(() => {
    users = createTestUsers(2);
    owner = { uid: users.users[0]?.uid ?? -1, gid: users.gid };
    member = { uid: users.users[1]?.uid ?? -1, gid: users.gid };
  });
  afterAll(() => {
    users.cleanup();
  });

  function home(mode: number): string {
    const h = path.join(tempRoot(), 'home');
    fs.mkdirSync(h);
    fs.chownSync(h, owner.uid, users.gid);
    fs.chmodSync(h, mode);
    return h;
  }

  function mark(h: string, text: string, uid: number, mode = 0o644): void {
    const m = path.join(h, '.managed');
    fs.writeFileSync(m, text);
    fs.chownSync(m, uid, users.gid);
    fs.chmodSync(m, mode);
  }

  it("trusted when root or the home's owner wrote it; a member's marker is ignored and says whose it is", () => {
    const h = home(0o2770);
    mark(h, 'false\n', 0);
    expect(detectManaged(h, {})).toMatchObject({ managed: false, source: 'marker', marker: 'trusted' });
    mark(h, 'false\n', owner.uid);
    expect(detectManaged(h, {})).toMatchObject({ managed: false, source: 'marker', marker: 'trusted' });
    mark(h, 'false\n', member.uid);
    const info: ManagedInfo = detectManaged(h, {});
    expect(info).toMatchObject({ managed: false, source: 'none', marker: 'untrusted' });
    expect(info.warnings?.[0]).toContain(`is owned by uid ${String(member.uid)}, not by root or the home's owner (uid ${String(owner.uid)})`);
  });

  it("row 5 (runtime): on a member's marker saying false, ensureHermesHome takes no group access from the setgid group-shared home", () => {
    const h = home(0o2770);
    fs.chownSync(h, 0, users.gid); // the process's own: reconcile would otherwise chmod it
    mark(h, 'false\n', member.uid);
    const env = loadEnvironment({ home: h, env: {} });
    const r = ensureHermesHomeSync({ env });
    const left = r.warnings.filter((w) => w.includes('setgid and group-shared'));
    console.log(`row 5 (runtime): home ${(fs.statSync(h).mode & 0o7777).toString(8)}, ${String(left.length)} directory left with a warning, managed source ${env.managed.source}/${env.managed.marker ?? '?'}`);
    expect(fs.statSync(h).mode & 0o7777).toBe(0o2770);
    expect(left).toHaveLength(1);
    expect(left[0]).toContain(`${h} is setgid and group-shared (mode 2770, the managed layout) but nothing trusted says whether the install is managed`);
    expect(env.managed).toMatchObject({ managed: false, source: 'none', marker: 'untrusted' });
  });

  it('row 13: unsearchable home: a second uid whose home it cannot search gets managed state "unknown", a warning naming EACCES, no "marker exists"', () => {
    const h = home(0o700); // the owner's alone: the member cannot search it
    mark(h, 'nixos\n', owner.uid);
    const r = runNode(fixture('marker-probe.mjs'), [h], { uid: member.uid, gid: users.gid });
    expect(r.status, r.stderr).toBe(0);
    const out = lastJson<{ managed: ManagedInfo; warnings: string[] }>(r);
    // Control: the owner, who can search it, reads the trusted marker.
    const ctl = lastJson<{ managed: ManagedInfo }>(runNode(fixture('marker-probe.mjs'), [h], { uid: owner.uid, gid: users.gid }));
    const said = `${r.stdout}${r.stderr}`;
    console.log(
      `row 13: unsearchable home as uid ${String(member.uid)}: source ${out.managed.source}, marker ${out.managed.marker ?? '?'}, managed ${String(out.managed.managed)}, ` +
        `${String(out.managed.warnings?.length ?? 0)} warning naming EACCES ${String(said.includes('EACCES'))}, "marker exists" lines ${String(said.split('marker exists').length - 1)}; owner: ${ctl.managed.source}/${ctl.managed.marker ?? '?'}`,
    );
    expect(out.managed).toMatchObject({ managed: false, system: null, source: 'unknown', raw: null, marker: 'unknown' });
    expect(out.managed.warnings).toHaveLength(1);
    expect(out.managed.warnings?.[0]).toContain(`cannot search the home ${h} to look up .managed (EACCES)`);
    expect(out.managed.warnings?.[0]).toContain('cannot create, write or chmod anything in it either');
    expect(out.warnings).toContain(out.managed.warnings?.[0]);
    expect(r.stderr).toContain('code="EACCES"');
    expect(said).not.toContain('marker exists');
    expect(ctl.managed).toMatchObject({ managed: true, system: 'nixos', source: 'marker', marker: 'trusted' });
  });
});
