import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestUsers, describeNeeds, lastJson, modeOf, runNode, tempRoot, type TestUsers } from '@hermes/test-utils';

const fixture = fileURLToPath(new URL('./fixtures/record-turns.mjs', import.meta.url));

interface Summary {
  stats: { written: number; failed: number; lastError: string | null };
  results: { written: boolean; path?: string; error?: string }[];
}

/** The cross-uid facts of docs/permissions.md, with two real uids in a shared group (root only). */
describeNeeds(['root', 'linux', 'useradd'], 'two uids sharing one home', () => {
  let users: TestUsers;
  beforeAll(() => {
    users = createTestUsers(2);
  });
  afterAll(() => {
    users.cleanup();
  });

  it('S3 managed: the second uid records into the trace dir the first uid created', () => {
    const [a, b] = users.users;
    if (a === undefined || b === undefined) throw new Error('two users expected');
    const home = path.join(tempRoot(), 'home');
    fs.mkdirSync(home);
    fs.chownSync(home, 0, users.gid);
    fs.chmodSync(home, 0o2770);
    const env = { HERMES_HOME: home, HERMES_MANAGED: 'nixos' };
    const first = runNode(fixture, [JSON.stringify({ home, sessionId: 'sess-a' })], { umask: 0o007, env, uid: a.uid, gid: users.gid });
    expect(lastJson<Summary>(first).stats).toEqual({ written: 1, failed: 0, lastError: null });
    const second = runNode(fixture, [JSON.stringify({ home, sessionId: 'sess-b' })], { umask: 0o007, env, uid: b.uid, gid: users.gid });
    expect(lastJson<Summary>(second).stats).toEqual({ written: 1, failed: 0, lastError: null });
    const dir = path.join(home, 'moa-traces');
    expect(modeOf(dir)).toBe('2770');
    expect(fs.statSync(dir).uid).toBe(a.uid);
    expect(fs.statSync(dir).gid).toBe(users.gid);
    expect(modeOf(path.join(dir, 'sess-b.jsonl'))).toBe('0600');
    expect(fs.statSync(path.join(dir, 'sess-b.jsonl')).uid).toBe(b.uid);
  });

  it('S1 unmanaged: the second uid is refused with EACCES, and the failure is reported, not swallowed', () => {
    const [a, b] = users.users;
    if (a === undefined || b === undefined) throw new Error('two users expected');
    const home = path.join(tempRoot(), 'home');
    fs.mkdirSync(home);
    fs.chownSync(home, a.uid, users.gid);
    fs.chmodSync(home, 0o755);
    const env = { HERMES_HOME: home };
    runNode(fixture, [JSON.stringify({ home, sessionId: 'sess-a' })], { umask: 0o022, env, uid: a.uid, gid: users.gid });
    expect(modeOf(path.join(home, 'moa-traces'))).toBe('0700');
    const second = runNode(fixture, [JSON.stringify({ home, sessionId: 'sess-b' })], { umask: 0o022, env, uid: b.uid, gid: users.gid });
    const out = lastJson<Summary>(second);
    expect(second.status, second.stderr).toBe(0);
    expect(out.stats.written).toBe(0);
    expect(out.stats.failed).toBe(1);
    expect(out.results[0]?.written).toBe(false);
    expect(out.results[0]?.path).toBe(path.join(home, 'moa-traces', 'sess-b.jsonl'));
    expect(out.results[0]?.error).toContain('EACCES');
    // One log line on stderr naming the path, the uid and a fix.
    expect(second.stderr).toContain('MoA trace for session "sess-b" not written');
    expect(second.stderr).toContain(path.join(home, 'moa-traces'));
    expect(second.stderr).toContain(`uid ${b.uid}`);
    expect(second.stderr).toContain('Fix: ');
  });
});
