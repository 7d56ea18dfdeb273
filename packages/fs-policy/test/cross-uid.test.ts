import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestUsers, describeNeeds, lastJson, modeOf, runNode, tempRoot, type TestUsers } from '@hermes/test-utils';
import { fixture } from './helpers.js';

interface ChildReport {
  ok: boolean;
  code?: string;
  path?: string;
  step?: string;
  uid?: number;
  line?: string;
  mode?: number;
}

// The cross-uid facts of docs/permissions.md, with two real users sharing a group.
describeNeeds(['root', 'useradd'], 'cross-uid (root only: real throwaway users)', () => {
  let users: TestUsers;
  beforeAll(() => {
    users = createTestUsers(2);
  });
  afterAll(() => {
    users.cleanup();
  });

  function run(userIndex: number, args: string[], umask: number, env: Record<string, string>): ChildReport {
    const u = users.users[userIndex];
    if (u === undefined) throw new Error('missing test user');
    return lastJson<ChildReport>(runNode(fixture('cross-uid.mjs'), args, { uid: u.uid, gid: users.gid, umask, env }));
  }

  it('S3 managed: a second uid in the group writes into the directory the first uid created', () => {
    const root = tempRoot();
    const home = path.join(root, 'home');
    fs.mkdirSync(home);
    fs.chownSync(home, users.users[0]?.uid ?? -1, users.gid);
    fs.chmodSync(home, 0o2770);
    const env = { HERMES_HOME: home, HERMES_MANAGED: 'nixos' };
    const dir = path.join(home, 'pending_messages');
    expect(run(0, ['mkdir', dir], 0o007, env)).toEqual({ ok: true, created: [dir] });
    expect(modeOf(dir)).toBe('2770');
    expect(fs.statSync(dir).gid).toBe(users.gid);
    const payload = path.join(dir, 'pending-from-b.json');
    expect(run(1, ['write', dir, payload], 0o007, env)).toEqual({ ok: true, path: payload, mode: 0o600 });
    expect(modeOf(payload)).toBe('0600');
    expect(fs.statSync(payload).uid).toBe(users.users[1]?.uid);
  });

  it('S1 unmanaged: the same write fails with EACCES, surfaced as a typed error naming path and uid', () => {
    const root = tempRoot();
    const home = path.join(root, 'home');
    const env = { HERMES_HOME: home, HERMES_MANAGED: 'false' };
    fs.chownSync(root, users.users[0]?.uid ?? -1, users.gid);
    const dir = path.join(home, 'pending_messages');
    expect(run(0, ['mkdir', dir], 0o022, env)).toEqual({ ok: true, created: [home, dir] });
    expect(modeOf(dir)).toBe('0700');
    const payload = path.join(dir, 'pending-from-b.json');
    const r = run(1, ['write', dir, payload], 0o022, env);
    expect(r.ok).toBe(false);
    expect(r.code).toBe('EACCES');
    expect(r.uid).toBe(users.users[1]?.uid);
    expect(r.path).toContain(home);
    expect(r.line).toContain(`uid ${String(users.users[1]?.uid)}`);
    expect(r.line).toContain('hermes-fs doctor --fix');
    expect(fs.existsSync(payload)).toBe(false);
  });
});
