import * as fs from 'node:fs';
import * as path from 'node:path';
import { createTestUsers, describeNeeds, lastJson, makeScenarioHome, modeOf, runNode, scenario, type TestUsers } from '@hermes/test-utils';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { FlushReport, RecoveryReport, SpoolEntry } from '../src/index.js';
import { fixture, names, spoolDir, tempDir } from './helpers.js';

interface RecoverChild {
  report: RecoveryReport;
  messages: { role: string; content: unknown }[];
}

const KEY_A = 'agent:main:telegram:dm:1';
const KEY_B = 'agent:main:telegram:dm:2';
const SESSION_A = { id: 'sess-a', source: 'telegram', sessionKey: KEY_A, startedAt: 1700000000 };
const SESSION_B = { id: 'sess-b', source: 'telegram', sessionKey: KEY_B, startedAt: 1700000000 };

describeNeeds(['root', 'useradd'], 'the seed scenario with two real uids in a shared group', () => {
  let users: TestUsers;
  let uidA: number;
  let uidB: number;

  beforeAll(() => {
    users = createTestUsers(2);
    uidA = users.users[0]?.uid ?? -1;
    uidB = users.users[1]?.uid ?? -1;
  });
  afterAll(() => {
    users.cleanup();
  });

  const as = (uid: number) => ({ uid, gid: users.gid });

  it('S1 (home created by A, umask 022, dirs 0700): B’s flush fails with EACCES naming the path — nothing silent', () => {
    const root = tempDir();
    const parent = path.join(root, 'a');
    fs.mkdirSync(parent);
    fs.chownSync(parent, uidA, users.gid);
    const home = path.join(parent, 'home');

    const a = runNode(fixture('flush.mjs'), [JSON.stringify({ pending: { [KEY_A]: 'from A' } })], {
      umask: 0o022,
      env: { HERMES_HOME: home },
      ...as(uidA),
    });
    expect(lastJson<FlushReport>(a).written).toHaveLength(1);
    expect(modeOf(home)).toBe('0700');
    expect(modeOf(spoolDir(home))).toBe('0700');

    const b = runNode(fixture('flush.mjs'), [JSON.stringify({ pending: { [KEY_B]: 'from B' } })], {
      umask: 0o022,
      env: { HERMES_HOME: home },
      ...as(uidB),
    });
    const report = lastJson<FlushReport>(b);
    expect(report.written).toEqual([]);
    expect(report.failed).toHaveLength(1);
    expect(report.failed[0]).toMatchObject({ code: 'EACCES', path: path.join(home, 'pending_messages'), uid: uidB });
    expect(report.failed[0]?.hint).toContain('hermes-fs doctor --fix');
    expect(b.stderr).toContain('NOT written');
    expect(b.stderr).toContain(path.join(home, 'pending_messages'));
    expect(b.stderr).toContain(`uid ${uidB}`);
    // Only A's payload exists.
    expect(names(spoolDir(home))).toHaveLength(1);
  });

  it('S3 (managed, home 2770 A:group, umask 0007): B writes; each uid recovers its own payload exactly once', () => {
    const home = makeScenarioHome(scenario('S3'), { root: tempDir() });
    fs.chownSync(home, uidA, users.gid);
    fs.chmodSync(home, 0o2770);
    const env = { HERMES_HOME: home, HERMES_MANAGED: 'nixos' };

    // A creates both sessions (state.db is created here, 0660 under umask 0007) and flushes its message.
    const a = runNode(fixture('flush.mjs'), [JSON.stringify({ session: SESSION_A, pending: { [KEY_A]: 'from A' } })], {
      umask: 0o007,
      env,
      ...as(uidA),
    });
    expect(lastJson<FlushReport>(a).written).toHaveLength(1);
    const b0 = runNode(fixture('flush.mjs'), [JSON.stringify({ session: SESSION_B, pending: {} })], { umask: 0o007, env, ...as(uidB) });
    expect(b0.status, b0.stderr).toBe(0);
    expect(modeOf(path.join(home, 'state.db'))).toBe('0660');
    expect(modeOf(spoolDir(home))).toBe('2770');
    expect(fs.statSync(spoolDir(home)).uid).toBe(uidA);

    const b = runNode(fixture('flush.mjs'), [JSON.stringify({ pending: { [KEY_B]: 'from B' } })], { umask: 0o007, env, ...as(uidB) });
    const bReport = lastJson<FlushReport>(b);
    expect(bReport.failed).toEqual([]);
    expect(bReport.written).toHaveLength(1);
    const bFile = bReport.written[0]?.path ?? '';
    expect(modeOf(bFile)).toBe('0600');
    expect(fs.statSync(bFile).uid).toBe(uidB);

    // A's listing shows B's payload as foreign (metadata from lstat only).
    const listed = lastJson<SpoolEntry[]>(runNode(fixture('list.mjs'), [], { umask: 0o007, env, ...as(uidA) }));
    expect(listed.find((e) => e.path === bFile)).toMatchObject({ kind: 'unknown', problem: 'foreign', error: 'EACCES', uid: uidB, mode: 0o600 });
    expect(listed.filter((e) => e.problem === null).map((e) => e.kind)).toEqual(['pending']);

    // A's recovery: its own payload inserted; B's 0600 payload is unreadable to A, left and reported as B's.
    const ra = lastJson<RecoverChild>(runNode(fixture('recover.mjs'), [JSON.stringify({ session: SESSION_A })], { umask: 0o007, env, ...as(uidA) }));
    expect(ra.report.inserted.map((i) => i.sessionId)).toEqual(['sess-a']);
    expect(ra.report.foreignOwner).toEqual([{ path: bFile, uid: uidB }]);
    expect(ra.report.errors).toEqual([]);
    expect(ra.report.kept).toEqual([]);
    expect(ra.messages.map((m) => m.content)).toEqual(['from A']);
    expect(names(spoolDir(home))).toEqual([path.basename(bFile)]);

    // B's own recovery (the db is group-writable) picks it up, resolved from the session key.
    const rb = lastJson<RecoverChild>(runNode(fixture('recover.mjs'), [JSON.stringify({ session: SESSION_B })], { umask: 0o007, env, ...as(uidB) }));
    expect(rb.report.inserted.map((i) => [i.path, i.sessionId])).toEqual([[bFile, 'sess-b']]);
    expect(rb.report.foreignOwner).toEqual([]);
    expect(rb.report.errors).toEqual([]);
    expect(rb.messages.map((m) => [m.role, m.content])).toEqual([['user', 'from B']]);
    expect(names(spoolDir(home))).toEqual([]);

    // Nothing twice: a third pass by either uid inserts nothing.
    const again = lastJson<RecoverChild>(runNode(fixture('recover.mjs'), [JSON.stringify({ session: SESSION_A })], { umask: 0o007, env, ...as(uidA) }));
    expect(again.report.scanned).toBe(0);
    expect(again.messages.map((m) => m.content)).toEqual(['from A']);
  });
});
