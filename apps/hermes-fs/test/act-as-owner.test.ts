/**
 * Root acts as the home's owner for content (issue #23, Build item 2): run by root on a home another uid owns,
 * `pending list|show|recover|export|prune` and `save` re-run themselves as that owner (uid, gid, groups) before
 * they touch the home. Real users, the built CLI, the kernel's own account of the child's identity.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestUsers, describeNeeds, lastJson, runNode, tempRoot, tree, type TestUsers } from '@hermes/test-utils';
import { BIN, cli, cliJson, fixture } from './helpers.js';

const ROOT_LINE = /hermes-fs: debug: root acts as the home's owner: uid (\d+) \(([^)]+)\), gid (\d+), groups ([\d,]+)\n/;
const CHILD_LINE = /hermes-fs: debug: running as the home's owner: uid (\d+), euid (\d+), gid (\d+), egid (\d+), groups ([\d,]+)\n/;

describeNeeds(['root', 'linux', 'useradd'], "root acts as the home's owner for content (real users)", () => {
  let users: TestUsers;
  let owner: { uid: number; gid: number; name: string };
  let member: { uid: number; gid: number };
  let extraGroup: { name: string; gid: number };

  beforeAll(() => {
    users = createTestUsers(2);
    owner = { uid: users.users[0]?.uid ?? -1, gid: users.gid, name: users.users[0]?.name ?? '' };
    member = { uid: users.users[1]?.uid ?? -1, gid: users.gid };
    // A supplementary group of the owner's: it must be among the child's groups, and root's must not.
    extraGroup = { name: `${users.group}x`.slice(0, 31), gid: -1 };
    spawnSync('groupadd', [extraGroup.name]);
    spawnSync('usermod', ['-a', '-G', extraGroup.name, owner.name]);
    extraGroup.gid = Number(spawnSync('getent', ['group', extraGroup.name], { encoding: 'utf8' }).stdout.split(':')[2]);
  });
  afterAll(() => {
    users.cleanup();
    spawnSync('groupdel', [extraGroup.name]);
  });

  /** A managed home (2770) of the owner, seeded through the packages' APIs as the owner, with spool files. */
  function managedHome(): { home: string; snapshot: string; payload: string } {
    const base = tempRoot();
    const home = path.join(base, 'home');
    fs.mkdirSync(home);
    fs.chownSync(home, owner.uid, owner.gid);
    fs.chmodSync(home, 0o2770);
    const env = { HERMES_HOME: home, HERMES_MANAGED: 'nixos' };
    const as = { uid: owner.uid, gid: owner.gid };
    const seeded = runNode(fixture('seed-home.mjs'), [home], { umask: 0o007, env, ...as });
    expect(seeded.status, seeded.stderr).toBe(0);
    const extra = runNode(fixture('spool-extra.mjs'), [home, 'seed-session-1'], { umask: 0o007, env, ...as });
    expect(extra.status, extra.stderr).toBe(0);
    return { home, snapshot: lastJson<{ snapshot: string }>(extra).snapshot, payload: lastJson<{ payload: string }>(seeded).payload };
  }

  /** Paths below `home` that are not owned by `uid` (links included, not followed). */
  function notOwnedBy(home: string, uid: number): string[] {
    return tree(home).filter((rel) => fs.lstatSync(path.join(home, rel)).uid !== uid);
  }

  it('pending list as root: the work runs as the owner (uid, gid, the owner\'s groups plus the home\'s), root only waits', () => {
    const { home } = managedHome();
    const r = cli(['pending', 'list', '--home', home, '--debug', '--json'], { env: { HERMES_MANAGED: 'nixos' } });
    expect(r.status, r.stderr).toBe(0);
    const groups = [owner.gid, extraGroup.gid].sort((a, b) => a - b).join(',');
    expect(ROOT_LINE.exec(r.stderr)?.slice(1)).toEqual([String(owner.uid), owner.name, String(owner.gid), groups]);
    expect(CHILD_LINE.exec(r.stderr)?.slice(1)).toEqual([String(owner.uid), String(owner.uid), String(owner.gid), String(owner.gid), groups]);
    expect((JSON.parse(r.stdout) as { ok: boolean }).ok).toBe(true);
  });

  it('recover, export and save as root: every file they create is the owner\'s (uid asserted), none is root\'s', () => {
    const { home, snapshot, payload } = managedHome();
    const env = { HERMES_MANAGED: 'nixos' };
    const rec = cliJson<{ ok: boolean; report: { inserted: { path: string }[] } }>(['pending', 'recover', '--home', home], { env });
    expect(rec.run.status, rec.run.stderr).toBe(1); // the seeded .bad row: a finding, as without root
    expect(rec.json.report.inserted.map((e) => e.path)).toEqual([payload]);
    const exp = cliJson<{ ok: boolean; path: string }>(['pending', 'export', path.basename(snapshot), '--output', 'incident.md', '--home', home], { env });
    expect(exp.run.status, exp.run.stderr).toBe(0);
    const save = cliJson<{ ok: boolean; path: string }>(['save', '--session', 'seed-session-1', '--output', 'session.html', '--home', home], { env });
    expect(save.run.status, save.run.stderr).toBe(0);
    for (const p of [exp.json.path, save.json.path, path.join(home, 'state.db')]) {
      expect([path.relative(home, p), fs.lstatSync(p).uid]).toEqual([path.relative(home, p), owner.uid]);
    }
    expect(notOwnedBy(home, owner.uid)).toEqual([]);
  });

  it('recover --create-db as root on a managed home: state.db is created by the owner (no longer refused)', () => {
    const base = tempRoot();
    const home = path.join(base, 'home');
    fs.mkdirSync(home);
    fs.chownSync(home, owner.uid, owner.gid);
    fs.chmodSync(home, 0o2770);
    const flushed = runNode(fixture('spool-bulk.mjs'), [home, 'agent:main:telegram:dm:7', '2'], { umask: 0o007, env: { HERMES_HOME: home, HERMES_MANAGED: 'nixos' }, uid: owner.uid, gid: owner.gid });
    expect(flushed.status, flushed.stderr).toBe(0);
    const created = cliJson<{ createdDb: boolean }>(['pending', 'recover', '--create-db', '--home', home], { env: { HERMES_MANAGED: 'nixos' } });
    expect(created.json.createdDb).toBe(true);
    expect(fs.lstatSync(path.join(home, 'state.db')).uid).toBe(owner.uid);
    expect(notOwnedBy(home, owner.uid)).toEqual([]);
  });

  it('the kernel agrees: /proc/<child>/status of the re-run process shows the owner\'s uid and gid; SIGTERM to root\'s process reaches it', async () => {
    const { home } = managedHome();
    const bulk = runNode(fixture('spool-raw.mjs'), [home, '3000'], { uid: owner.uid, gid: owner.gid });
    expect(bulk.status, bulk.stderr).toBe(0);
    // stdout is a pipe nobody reads: the child blocks writing its JSON, so it is alive to be looked at.
    const parent = spawn(process.execPath, [BIN, 'pending', 'list', '--all', '--json', '--home', home], { stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      parent.on('exit', (code, signal) => {
        resolve({ code, signal });
      });
    });
    const pid = parent.pid ?? -1;
    let child: number | undefined;
    let status = '';
    const deadline = Date.now() + 30_000;
    // Root's process also runs getent and id (the owner's groups), and between fork and exec those show root's
    // own command line: the child wanted is the one running bin.js under the owner's uid (its first lines run
    // as root for a few milliseconds; getent and id never switch). A candidate may be gone by the time it is read.
    const read = (file: string): string => {
      try {
        return fs.readFileSync(file, 'utf8');
      } catch {
        return ''; // gone meanwhile
      }
    };
    while (child === undefined && Date.now() < deadline) {
      const kids = read(`/proc/${String(pid)}/task/${String(pid)}/children`).trim().split(' ').filter((k) => k !== '');
      for (const k of kids) {
        if (!read(`/proc/${k}/cmdline`).includes(BIN)) continue;
        const st = read(`/proc/${k}/status`);
        if (/^Uid:\s+(\d+)/m.exec(st)?.[1] === String(owner.uid)) {
          child = Number(k);
          status = st;
          break;
        }
      }
      if (child === undefined) await new Promise((r) => setTimeout(r, 20));
    }
    expect(child).toBeDefined();
    const ids = (key: string): string[] => (new RegExp(`^${key}:\\s+(.*)$`, 'm').exec(status)?.[1] ?? '').trim().split(/\s+/);
    expect(ids('Uid')).toEqual([String(owner.uid), String(owner.uid), String(owner.uid), String(owner.uid)]);
    expect(ids('Gid')).toEqual([String(owner.gid), String(owner.gid), String(owner.gid), String(owner.gid)]);
    expect(ids('Groups').map(Number).sort((a, b) => a - b)).toEqual([owner.gid, extraGroup.gid].sort((a, b) => a - b));
    expect(/^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${String(pid)}/status`, 'utf8'))?.[1]).toBe('0');
    parent.kill('SIGTERM');
    const end = await exited;
    expect(end).toEqual({ code: null, signal: 'SIGTERM' });
    expect(fs.existsSync(`/proc/${String(child)}`)).toBe(false);
  });

  it('an owner without a passwd entry: the home\'s gid is its only group', () => {
    const base = tempRoot();
    const home = path.join(base, 'home');
    fs.mkdirSync(home);
    fs.chownSync(home, 4_242_420, users.gid);
    fs.chmodSync(home, 0o2770);
    const r = cli(['pending', 'list', '--home', home, '--debug']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain(`hermes-fs: debug: root acts as the home's owner: uid 4242420 (no passwd entry), gid ${String(users.gid)}, groups ${String(users.gid)}\n`);
    expect(CHILD_LINE.exec(r.stderr)?.slice(1)).toEqual(['4242420', '4242420', String(users.gid), String(users.gid), String(users.gid)]);
    expect(r.stdout).toBe(`no spool: ${path.join(home, 'pending_messages')} does not exist (nothing is waiting)\n`);
  });

  it('a home owned by root: no switch (root acts as root, as before)', () => {
    const base = tempRoot();
    const home = path.join(base, 'home');
    const seeded = runNode(fixture('seed-home.mjs'), [home], { env: { HERMES_HOME: home } });
    expect(seeded.status, seeded.stderr).toBe(0);
    const r = cli(['pending', 'list', '--home', home, '--debug']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).not.toContain('acts as');
    expect(r.stderr).not.toContain("running as the home's owner");
    const exp = cliJson<{ path: string }>(['save', '--session', 'seed-session-1', '--output', 'root.md', '--home', home]);
    expect(fs.lstatSync(exp.json.path).uid).toBe(0);
  });

  it('a non-root invoker: no re-run (a member of the group lists the spool as itself)', () => {
    const { home } = managedHome();
    const r = cli(['pending', 'list', '--home', home, '--debug', '--json'], { uid: member.uid, gid: member.gid, env: { HERMES_MANAGED: 'nixos' } });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).not.toContain('acts as');
    expect(r.stderr).not.toContain("running as the home's owner");
  });

  it('root refuses a home whose path a group member could redirect (EUNSAFE_PATH, exit 2) and runs nothing', () => {
    const base = tempRoot();
    const parentDir = path.join(base, 'state');
    fs.mkdirSync(parentDir);
    fs.chownSync(parentDir, owner.uid, owner.gid);
    fs.chmodSync(parentDir, 0o2770); // the group may rename the home and put a link in its place
    const home = path.join(parentDir, 'home');
    fs.mkdirSync(home);
    fs.chownSync(home, owner.uid, owner.gid);
    fs.chmodSync(home, 0o2770);
    const r = cliJson<{ ok: boolean; error: { code: string; path: string } }>(['pending', 'recover', '--create-db', '--home', home], { env: { HERMES_MANAGED: 'nixos' } });
    expect(r.run.status, r.run.stderr).toBe(2);
    expect(r.json.error).toMatchObject({ code: 'EUNSAFE_PATH', path: parentDir });
    expect(fs.readdirSync(home)).toEqual([]);
  });

  it('a forged marker is refused before anything runs: by a non-root uid (EACT_AS_OWNER) and with the wrong parent (EACT_AS_MARKER)', () => {
    const { home } = managedHome();
    const marker = (ppid: number): string => {
      const st = fs.statSync(home, { bigint: true });
      return JSON.stringify({ v: 1, uid: owner.uid, gid: owner.gid, groups: [owner.gid], home, dev: st.dev.toString(), ino: st.ino.toString(), ppid });
    };
    // As the member, claiming to be started by its own parent (the shell runNode uses execs node: its parent is this process).
    const asMember = cliJson<{ error: { code: string } }>(['pending', 'list', '--home', home], {
      uid: member.uid,
      gid: member.gid,
      env: { HERMES_FS_ACT_AS: marker(process.pid) },
    });
    expect([asMember.run.status, asMember.json.error.code]).toEqual([2, 'EACT_AS_OWNER']);
    expect(asMember.run.stderr).toContain("cannot take the home's owner's identity");
    const wrongParent = cliJson<{ error: { code: string } }>(['pending', 'list', '--home', home], { env: { HERMES_FS_ACT_AS: marker(1) } });
    expect([wrongParent.run.status, wrongParent.json.error.code]).toEqual([2, 'EACT_AS_MARKER']);
  });

  it('--help says which uid each command acts as', () => {
    expect(cli(['--help']).stdout).toContain(
      "Acts as (run by root on a home another uid owns):\n  pending list|show|recover|export|prune   the home's owner: uid, gid and groups\n  save                                     the home's owner: uid, gid and groups\n  doctor                                   root (mode and owner repairs, through descriptors)\n",
    );
    for (const c of [['save'], ['pending', 'list'], ['pending', 'show'], ['pending', 'recover'], ['pending', 'export'], ['pending', 'prune']]) {
      expect(cli([...c, '--help']).stdout.replace(/\n/g, ' '), c.join(' ')).toContain("Acts as: the home's owner.");
    }
    expect(cli(['doctor', '--help']).stdout).toContain('Acts as: the invoking uid; run by root it stays root, and its mode and owner repairs go through\ndescriptors.');
    expect(cli(['matrix', '--help']).stdout).toContain('Acts as: the invoking uid (it reads no Hermes home).');
    expect(cli(['provision', 'tmpfiles', '--help']).stdout).toContain('Acts as: the invoking uid (it prints configuration');
  });
});
