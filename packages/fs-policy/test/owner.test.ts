/**
 * Root never chowns content to an untrusted owner (issue 23, row 4): a member of the service group — a real
 * second uid in its own process — replaces sessions/saved/ with a directory of their own holding an empty
 * incident.md while root writes sessions/saved/incident.md the way `hermes-fs save --output` does (the saved
 * directory as the explicit root). As root, a replaced file's owner is trusted only when it is root, the home's
 * owner, or HERMES_UID for a kind that applies it: the member's file is refused with EFOREIGN_OWNER, and no
 * file ever ends up owned by the member with root's content. The non-root rules are checked the same way.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestUsers, describeNeeds, lastJson, runAs, tempRoot, type TestUsers } from '@hermes/test-utils';
import { atomicWriteSync, FsPolicyError, loadEnvironment, setLogger, silentLogger } from '../src/index.js';
import { fixture } from './helpers.js';

setLogger(silentLogger);

const ITERATIONS = 2000;
const TRANSCRIPT = '# incident\n\nthe whole conversation, as root saved it\n';

describeNeeds(['root', 'linux', 'useradd', 'mount'], 'row 4: root writing where a member planted a file (real second uid)', () => {
  let users: TestUsers;
  let mnt: string;
  let service: { uid: number; gid: number };
  let member: { uid: number; gid: number };
  let n = 0;

  beforeAll(() => {
    users = createTestUsers(2);
    service = { uid: users.users[0]?.uid ?? -1, gid: users.gid };
    member = { uid: users.users[1]?.uid ?? -1, gid: users.gid };
    mnt = path.join(tempRoot(), 'fs');
    fs.mkdirSync(mnt);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=128m,mode=0755', 'tmpfs', mnt]);
  });
  afterAll(() => {
    spawnSync('umount', ['-l', mnt]);
    users.cleanup();
  });

  /** A managed home (2770, service:group) with sessions/ and sessions/saved/ as the service made them. */
  function layout(): { home: string; sessions: string; saved: string; stop: string } {
    const base = path.join(mnt, `case-${String(n++)}`);
    fs.mkdirSync(base, { mode: 0o755 });
    const home = path.join(base, 'home');
    const sessions = path.join(home, 'sessions');
    const saved = path.join(sessions, 'saved');
    for (const d of [home, sessions, saved]) {
      fs.mkdirSync(d);
      fs.chownSync(d, service.uid, users.gid);
      fs.chmodSync(d, 0o2770);
    }
    return { home, sessions, saved, stop: path.join(base, 'stop') };
  }

  /** Every regular file below `dir` owned by `uid` whose content is root's transcript (a chown of root's content). */
  function chownedTo(dir: string, uid: number): string[] {
    const out: string[] = [];
    const walk = (d: string): void => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        const p = path.join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.isFile() && fs.lstatSync(p).uid === uid && fs.readFileSync(p, 'utf8') === TRANSCRIPT) out.push(p);
      }
    };
    walk(dir);
    return out;
  }

  function save(l: ReturnType<typeof layout>): string {
    const env = loadEnvironment({ home: l.home, env: { HERMES_MANAGED: 'nixos' } });
    try {
      atomicWriteSync(path.join(l.saved, 'incident.md'), TRANSCRIPT, { kind: 'saved-sessions', env, root: l.saved });
      return 'ok';
    } catch (err) {
      return err instanceof FsPolicyError ? err.code : `UNTYPED ${String(err)}`;
    }
  }

  it('row 4: the member replaced sessions/saved/ with their own directory holding an empty incident.md: root refuses (EFOREIGN_OWNER), nothing is chowned to the member', async () => {
    let refused = 0;
    let chowned = 0;
    const messages: string[] = [];
    for (let trial = 0; trial < 2; trial++) {
      const l = layout();
      const planted = await runAs(fixture('owner-plant.mjs'), ['once', l.sessions], member, {}, 30_000);
      expect(lastJson<{ rounds: number }>(planted).rounds).toBe(1);
      const file = path.join(l.saved, 'incident.md');
      expect(fs.lstatSync(file).uid).toBe(member.uid);
      const env = loadEnvironment({ home: l.home, env: { HERMES_MANAGED: 'nixos' } });
      try {
        atomicWriteSync(file, TRANSCRIPT, { kind: 'saved-sessions', env, root: l.saved });
      } catch (err) {
        if (err instanceof FsPolicyError && err.code === 'EFOREIGN_OWNER') {
          refused++;
          messages.push(err.detail);
        }
      }
      chowned += chownedTo(l.home, member.uid).length;
      // The member's file is left as the member made it: empty, theirs.
      expect(fs.readFileSync(file, 'utf8')).toBe('');
      expect(fs.lstatSync(file).uid).toBe(member.uid);
    }
    console.log(`row 4: 2 planted incident.md (deterministic): ${String(refused)} refused EFOREIGN_OWNER, ${String(chowned)} files chowned to the member`);
    expect(refused).toBe(2);
    expect(chowned).toBe(0);
    expect(messages[0]).toMatch(new RegExp(`owned by uid ${String(member.uid)}, not by 0 or ${String(service.uid)}$`));
  });

  it(`row 4: ${String(ITERATIONS)} root saves while the member keeps replacing sessions/saved/ in a loop: 0 files chowned to the member, every failure typed`, async () => {
    const l = layout();
    const attacker = runAs(fixture('owner-plant.mjs'), ['loop', l.sessions, l.stop, '120000'], member, {}, 150_000);
    await new Promise((r) => setTimeout(r, 50)); // let the attacker get going
    const codes: Record<string, number> = {};
    const t0 = Date.now();
    try {
      for (let i = 0; i < ITERATIONS && Date.now() - t0 < 45_000; i++) {
        const code = save(l);
        codes[code] = (codes[code] ?? 0) + 1;
        // Let the member run between saves (2 cores shared).
        if ((i & 31) === 0) await new Promise((r) => setImmediate(r));
      }
    } finally {
      fs.writeFileSync(l.stop, '');
    }
    const rounds = lastJson<{ rounds: number }>(await attacker).rounds;
    const chowned = chownedTo(l.home, member.uid);
    const iterations = Object.values(codes).reduce((a, b) => a + b, 0);
    console.log(
      `row 4: ${String(iterations)} root saves vs ${String(rounds)} attacker rounds; outcomes ${JSON.stringify(codes)}; files chowned to the member ${String(chowned.length)}`,
    );
    expect(iterations).toBe(ITERATIONS);
    expect(chowned).toEqual([]);
    expect(codes.EFOREIGN_OWNER ?? 0).toBeGreaterThan(0);
    expect(Object.keys(codes).filter((c) => c.startsWith('UNTYPED'))).toEqual([]);
  });

  it('row 4 (non-root): the service never writes into, replaces or hands SQLite a file the member created', async () => {
    const l = layout();
    const plant = (p: string, data: string): void => {
      fs.writeFileSync(p, data, { mode: 0o660 });
      fs.chownSync(p, member.uid, users.gid);
      fs.chmodSync(p, 0o660);
    };
    plant(path.join(l.sessions, 's.json'), 'member');
    plant(path.join(l.sessions, 'a.jsonl'), '');
    plant(path.join(l.home, 'state.db'), '');
    const r = lastJson<{ results: Record<string, string> }>(await runAs(fixture('owner-victim.mjs'), [l.home], service, { HERMES_MANAGED: 'nixos' }, 30_000));
    console.log(`row 4 (non-root): the service met 3 files the member created: ${JSON.stringify(r.results)}`);
    expect(r.results).toEqual({ replace: 'EFOREIGN_OWNER', append: 'EFOREIGN_OWNER', ensureFile: 'EFOREIGN_OWNER' });
    expect(fs.readFileSync(path.join(l.sessions, 's.json'), 'utf8')).toBe('member');
    expect(fs.readFileSync(path.join(l.sessions, 'a.jsonl'), 'utf8')).toBe('');
    // One link is part of the rule: a hard link of the service's own file is refused too (checked on a descriptor).
    const own = path.join(l.home, 'state.db');
    fs.rmSync(own);
    fs.writeFileSync(own, '', { mode: 0o660 });
    fs.chownSync(own, service.uid, users.gid);
    fs.linkSync(own, path.join(l.sessions, 'copy.db'));
    const r2 = lastJson<{ results: Record<string, string> }>(await runAs(fixture('owner-victim.mjs'), [l.home], service, { HERMES_MANAGED: 'nixos' }, 30_000));
    expect(r2.results.ensureFile).toBe('EHARDLINK');
  });
});
