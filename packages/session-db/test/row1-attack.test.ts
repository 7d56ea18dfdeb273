/**
 * Issue #23 row 1: a member of the service group — a real second uid, in its own process, in a tight loop —
 * puts something else under `state.db` while root opens the database and appends a message, thousands of
 * times: a symlink to a root-only path that does not exist, a symlink to an existing root-only file, a FIFO,
 * a second name of the member's own file, a second name of the real database, a symlink at `state.db-wal`.
 * Measured: files created outside the home, root-only files changed, the member's file written, hangs (the
 * victim runs under a timeout), and the victim's outcomes by code.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createTestUsers, describeNeeds, lastJson, runAs, tempRoot, tree, type TestUsers } from '@hermes/test-utils';
import { afterAll, beforeAll, expect, it } from 'vitest';

const ROUNDS = 2000;
const VICTIM = fileURLToPath(new URL('./fixtures/row1-victim.mjs', import.meta.url));
const ATTACKER = fileURLToPath(new URL('./fixtures/db-attacker.mjs', import.meta.url));

interface VictimReport {
  rounds: number;
  ok: number;
  refused: Record<string, number>;
  /** The first message of each code. */
  samples: Record<string, string>;
  /** Blocked FIFO opens of SQLite the watchdog completed. */
  fifoCompleted: number;
  ms: number;
}

describeNeeds(['root', 'linux', 'useradd', 'mount'], 'row 1: state.db swapped by a member of the service group while root opens it', () => {
  let users: TestUsers;
  let mnt: string;
  let service: { uid: number; gid: number };
  let attacker: { uid: number; gid: number };

  beforeAll(() => {
    users = createTestUsers(2);
    service = { uid: users.users[0]?.uid ?? -1, gid: users.gid };
    attacker = { uid: users.users[1]?.uid ?? -1, gid: users.gid };
    // A tmpfs: fsync is cheap, and the home and the root-only directory share one filesystem.
    mnt = path.join(tempRoot('hermes-sdb-row1-'), 'fs');
    fs.mkdirSync(mnt);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256m,mode=0755', 'tmpfs', mnt]);
  });
  afterAll(() => {
    spawnSync('umount', ['-l', mnt]);
    users.cleanup();
  });

  it(`row 1: ${String(ROUNDS)} root opens + appends against a looping swap of state.db: 0 files outside, 0 hangs, 0 opens of another file`, async () => {
    const home = path.join(mnt, 'home');
    fs.mkdirSync(home);
    fs.chownSync(home, service.uid, service.gid);
    fs.chmodSync(home, 0o2770);
    const rootOnly = path.join(mnt, 'root-only');
    fs.mkdirSync(rootOnly, { mode: 0o700 });
    const existing = path.join(rootOnly, 'existing.db');
    fs.writeFileSync(existing, '', { mode: 0o600 });
    const existingBefore = fs.statSync(existing);
    const missing = path.join(rootOnly, 'created-by-root.db');
    const stop = path.join(mnt, 'stop');

    const attack = runAs(ATTACKER, [stop, '120000', home, missing, existing], attacker, {}, 150_000);
    await new Promise((r) => setTimeout(r, 100)); // let the attacker get going
    let report: VictimReport;
    try {
      // Root, on a managed home; a victim that hangs is killed and fails the test.
      report = lastJson<VictimReport>(await runAs(VICTIM, [home, String(ROUNDS)], { uid: 0, gid: 0 }, { HERMES_HOME: home, HERMES_MANAGED: 'nixos' }, 90_000));
    } finally {
      fs.writeFileSync(stop, '');
    }
    const attackerReport = lastJson<{ rounds: number; byVariant: Record<string, number> }>(await attack);

    const outside = tree(rootOnly).filter((n) => n !== 'existing.db');
    const existingAfter = fs.statSync(existing);
    const existingChanged = existingAfter.size !== existingBefore.size || existingAfter.mtimeMs !== existingBefore.mtimeMs ? 1 : 0;
    const mine = fs.lstatSync(path.join(home, '.mine'));
    const refusedTotal = Object.values(report.refused).reduce((a, b) => a + b, 0);
    const untyped = Object.keys(report.refused).filter((c) => c.startsWith('UNTYPED'));
    console.log(
      `row 1: ${String(report.rounds)} root opens of state.db in ${String(report.ms)} ms: ${String(report.ok)} ok, refused ${JSON.stringify(report.refused)}; ` +
        `attacker rounds ${String(attackerReport.rounds)} ${JSON.stringify(attackerReport.byVariant)}; ` +
        `files created outside the home ${String(outside.length)}, root-only file changed ${String(existingChanged)}, ` +
        `bytes written into the member's file ${String(mine.size)} (owner uid ${String(mine.uid)}), hangs 0 ` +
        `(SQLite opens blocked on a FIFO and completed by the watchdog: ${String(report.fifoCompleted)})`,
    );
    console.log(`row 1: one refusal of each code: ${JSON.stringify(report.samples)}`);
    expect(outside).toEqual([]);
    expect(existingChanged).toBe(0);
    expect(mine.size).toBe(0);
    expect(mine.uid).toBe(attacker.uid);
    expect(untyped).toEqual([]);
    expect(report.ok + refusedTotal).toBe(ROUNDS);
    expect(refusedTotal).toBeGreaterThan(0);

    // The control: with the attacker stopped and what it left removed, the same victim succeeds every time, so
    // the refusals above are the attack's doing (under load the attacker may win all 2,000 rounds).
    for (const name of fs.readdirSync(home)) if (name.startsWith('state.db')) fs.rmSync(path.join(home, name), { force: true });
    const quiet = lastJson<VictimReport>(await runAs(VICTIM, [home, '5'], { uid: 0, gid: 0 }, { HERMES_HOME: home, HERMES_MANAGED: 'nixos' }, 30_000));
    console.log(`row 1: control without the attacker: ${String(quiet.ok)} of 5 opens ok`);
    expect([quiet.ok, quiet.refused]).toEqual([5, {}]);
  }, 180_000);
});
