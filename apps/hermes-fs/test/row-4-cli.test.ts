/**
 * Issue #23, row 4, the CLI half: a member of the service group (a real second uid) replaces
 * `sessions/saved/` with a directory of its own holding an empty `incident.md`, then root runs
 * `hermes-fs save --output incident.md` or `hermes-fs pending export --output incident.md`. Root acts as the
 * home's owner, so the transcript is written by the owner or not at all: it never lands in a file the member
 * owns and is never chowned to the member.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestUsers, describeNeeds, lastJson, runNode, tempRoot, tree, type TestUsers } from '@hermes/test-utils';
import { BIN, fixture } from './helpers.js';

/** Runs of each command, each against a freshly replaced directory. */
const RUNS = 20;

interface Tally {
  runs: number;
  /** The transcript in a file the member owns (written into theirs, or chowned to them). */
  memberOwned: number;
  /** The transcript in a file the home's owner owns. */
  ownerOwned: number;
  /** The transcript in a root-owned file. */
  rootOwned: number;
  /** Runs that failed (exit 1 or 2) with a one-line reason. */
  refused: number;
  reasons: Set<string>;
}

describeNeeds(['root', 'linux', 'useradd'], "row 4 (CLI): sessions/saved/ replaced by a member's directory", () => {
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

  /** The member's move, as the member: the owner's saved/ aside, its own saved/ with an empty incident.md in place. */
  function replaceSaved(home: string, round: number): void {
    const sessions = path.join(home, 'sessions');
    const script = `umask 007 && mv saved .saved-aside-${String(round)} && mkdir saved && : > saved/incident.md`;
    const r = spawnSync('/bin/sh', ['-c', script], { cwd: sessions, uid: member.uid, gid: member.gid, encoding: 'utf8', timeout: 10_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(fs.lstatSync(path.join(sessions, 'saved', 'incident.md')).uid).toBe(member.uid);
  }

  /** Where the transcript (recognised by `marker`) now lies in the home, by owner. */
  function tally(t: Tally, home: string, marker: string): void {
    for (const rel of tree(home)) {
      const p = path.join(home, rel);
      const st = fs.lstatSync(p);
      if (!st.isFile() || !rel.startsWith('sessions/') || !fs.readFileSync(p, 'utf8').includes(marker)) continue;
      if (st.uid === member.uid) t.memberOwned++;
      else if (st.uid === owner.uid) t.ownerOwned++;
      else if (st.uid === 0) t.rootOwned++;
      fs.rmSync(p); // counted once
    }
  }

  it(`row 4 (CLI): ${String(RUNS)} save and ${String(RUNS)} pending export runs as root into a member's replaced sessions/saved/: the transcript is in a member-owned file 0 times`, () => {
    const base = tempRoot();
    const home = path.join(base, 'home');
    fs.mkdirSync(home);
    fs.chownSync(home, owner.uid, owner.gid);
    fs.chmodSync(home, 0o2770);
    const env = { HERMES_HOME: home, HERMES_MANAGED: 'nixos' };
    const seeded = runNode(fixture('seed-home.mjs'), [home], { umask: 0o007, env, ...owner });
    expect(seeded.status, seeded.stderr).toBe(0);
    const extra = runNode(fixture('spool-extra.mjs'), [home, 'seed-session-1'], { umask: 0o007, env, ...owner });
    expect(extra.status, extra.stderr).toBe(0);
    const snapshot = path.basename(lastJson<{ snapshot: string }>(extra).snapshot);
    fs.chmodSync(path.join(home, 'sessions'), 0o2770); // the managed layout: the group may rename in sessions/
    // Remove the seed's own snapshot: only what the runs write is counted.
    for (const rel of tree(path.join(home, 'sessions', 'saved'))) fs.rmSync(path.join(home, 'sessions', 'saved', rel));

    const commands = [
      { name: 'save', args: ['save', '--session', 'seed-session-1', '--output', 'incident.md', '--home', home], marker: 'hello from the seed' },
      { name: 'pending export', args: ['pending', 'export', snapshot, '--output', 'incident.md', '--home', home], marker: 'please keep this conversation' },
    ];
    const results: Record<string, Tally> = {};
    let round = 0;
    for (const c of commands) {
      const t: Tally = { runs: 0, memberOwned: 0, ownerOwned: 0, rootOwned: 0, refused: 0, reasons: new Set() };
      for (let i = 0; i < RUNS; i++) {
        replaceSaved(home, round++);
        const r = runNode(BIN, c.args, { timeoutMs: 30_000, env: { HERMES_MANAGED: 'nixos' } });
        t.runs++;
        if (r.status !== 0) {
          t.refused++;
          t.reasons.add(r.stderr.split('\n')[0] ?? '');
        }
        tally(t, home, c.marker);
      }
      results[c.name] = t;
      console.log(
        `row 4 (CLI): ${c.name}: ${String(t.runs)} runs; transcript in a member-owned file ${String(t.memberOwned)}, in an owner-owned file ${String(t.ownerOwned)}, ` +
          `in a root-owned file ${String(t.rootOwned)}; refused ${String(t.refused)}${t.reasons.size > 0 ? ` (${[...t.reasons].join(' | ')})` : ''}`,
      );
    }
    for (const [name, t] of Object.entries(results)) {
      expect([name, t.memberOwned, t.rootOwned]).toEqual([name, 0, 0]);
      // Every run either wrote as the owner or failed with its reason: nothing else happened.
      expect([name, t.ownerOwned + t.refused]).toEqual([name, RUNS]);
    }
  }, 300_000);
});
