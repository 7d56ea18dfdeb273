/**
 * Errors name the owner and keep the library's fix (#25 item 5): a member of the service group that cannot read
 * the owner's snapshot or open the owner's 0600 state.db (as the Python reference leaves it) is told who owns
 * it and what fixes it — session-db's own fix (`hermes-fs doctor --fix`), not "run again with --debug".
 * Real users (createTestUsers), the built CLI run as the second uid.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createTestUsers, describeNeeds, lastJson, runNode, tempRoot, type TestUsers } from '@hermes/test-utils';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cli, cliJson, fixture } from './helpers.js';

describeNeeds(['root', 'linux', 'useradd'], "errors name the owner and keep session-db's fix (real second uid)", () => {
  let users: TestUsers;
  let owner: { uid: number; name: string };
  let member: { uid: number; gid: number };
  let home: string;
  let snapshot: string;
  const env = { HERMES_MANAGED: 'nixos', NO_COLOR: '1' };

  beforeAll(() => {
    users = createTestUsers(2);
    owner = { uid: users.users[0]?.uid ?? -1, name: users.users[0]?.name ?? '' };
    member = { uid: users.users[1]?.uid ?? -1, gid: users.gid };
    const base = tempRoot();
    home = path.join(base, 'home');
    fs.mkdirSync(home);
    fs.chownSync(home, owner.uid, users.gid);
    fs.chmodSync(home, 0o2770);
    const as = { uid: owner.uid, gid: users.gid, umask: 0o007, env: { HERMES_HOME: home, HERMES_MANAGED: 'nixos' } };
    const seeded = runNode(fixture('seed-home.mjs'), [home], as);
    expect(seeded.status, seeded.stderr).toBe(0);
    const extra = runNode(fixture('spool-extra.mjs'), [home, 'seed-session-1'], as);
    expect(extra.status, extra.stderr).toBe(0);
    snapshot = lastJson<{ snapshot: string }>(extra).snapshot;
    // What the Python reference leaves each time it opens the database: owner-only.
    fs.chmodSync(path.join(home, 'state.db'), 0o600);
  });
  afterAll(() => {
    users.cleanup();
  });

  const db = (): string => path.join(home, 'state.db');
  const cantOpenFix = (): string =>
    `uid ${String(member.uid)} (gid ${String(member.gid)}) cannot open ${db()}: the file or the directory holding it is missing or not accessible ` +
    `(SQLite must also be able to create ${db()}-wal and ${db()}-shm beside it). Create the Hermes home first, or make its directory writable for this uid ` +
    '(managed install: `hermes-fs doctor --fix`).';

  it("pending export of another uid's snapshot names the owner (uid and name) and the command that works", () => {
    const name = path.basename(snapshot);
    const r = cli(['pending', 'export', name.slice(8, 16), '--home', home], { env, uid: member.uid, gid: member.gid });
    const lines = r.stderr.trimEnd().split('\n');
    console.log(`export as uid ${String(member.uid)}: exit ${String(r.status)}, stderr lines ${String(lines.length)}, names owner ${String(r.stderr.includes(`(${owner.name})`))}`);
    expect(r.status, r.stderr).toBe(2);
    expect(lines).toEqual([
      `hermes-fs: error: ${name} belongs to uid ${String(owner.uid)} (${owner.name}) (mode 0600): uid ${String(member.uid)} cannot read it, so it cannot be exported from here`,
      `hint: run as its owner: sudo -u '#${String(owner.uid)}' hermes-fs pending export ${name} --home ${home}`,
    ]);
    const { run, json } = cliJson<{ error: { code: string; path: string } }>(['pending', 'export', name, '--home', home], { env, uid: member.uid, gid: member.gid });
    expect(run.status, run.stderr).toBe(2);
    expect(json.error).toMatchObject({ code: 'EFOREIGN_OWNER', path: snapshot });
  });

  it("pending recover as the member: SQLITE_CANTOPEN with session-db's fix (hermes-fs doctor --fix), not --debug", () => {
    const r = cli(['pending', 'recover', '--home', home], { env, uid: member.uid, gid: member.gid });
    const lines = r.stderr.trimEnd().split('\n');
    console.log(`recover as uid ${String(member.uid)}: exit ${String(r.status)}, hint keeps doctor --fix ${String(r.stderr.includes('hermes-fs doctor --fix'))}, mentions --debug ${String(r.stderr.includes('--debug'))}`);
    expect(r.status, r.stderr).toBe(2);
    expect(lines).toEqual([
      `hermes-fs: error: cannot open ${db()}: unable to open database file; state.db is owned by uid ${String(owner.uid)} gid ${String(users.gid)}, mode 0600 (SQLITE_CANTOPEN)`,
      `hint: ${cantOpenFix()}`,
    ]);
  });

  it("save as the member: the owner named, session-db's fix kept", () => {
    const r = cli(['save', '--session', 'seed-session-1', '--home', home], { env, uid: member.uid, gid: member.gid });
    const lines = r.stderr.trimEnd().split('\n');
    console.log(`save as uid ${String(member.uid)}: exit ${String(r.status)}, stderr lines ${String(lines.length)}`);
    expect(r.status, r.stderr).toBe(1);
    expect(lines).toEqual([
      `(x_x) Failed to save: cannot read ${db()}: permission denied for uid ${String(member.uid)} (EACCES, owned by uid ${String(owner.uid)} (${owner.name}), mode 0600)`,
      `hint: ${cantOpenFix()}`,
    ]);
  });
});
