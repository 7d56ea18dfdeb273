/**
 * Issue #23 row 6: a member of the service group — a real second uid, in its own process, racing in a tight
 * loop — swaps `pending_messages/` for a link to a directory of its own while the service flushes. The
 * flush holds the spool once, writes every payload relative to that descriptor and fsyncs that descriptor:
 * a report that says `durable: true` must mean that the directory its payloads are in was fsynced. The
 * victim (a child, fixtures/flush-fsync.mjs) records, at each directory fsync it really makes, the entries of
 * the directory that descriptor holds, and checks every payload a durable report calls written against them.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect, it } from 'vitest';
import { ATTACKER, attackWorld, describeNeeds, lastJson, runAs, tree } from '@hermes/test-utils';
import { fixture } from './helpers.js';

/** Flushes per mode (two payloads each). */
const ROUNDS = 2000;

type Codes = Record<string, number>;

interface Counts {
  rounds: number;
  withWritten: number;
  durable: number;
  badClaims: number;
  notDurable: Codes;
  refused: Codes;
  warnings: Codes;
  written: number;
  notFsynced: number;
  dirFsyncs: number;
  samples: Record<string, string>;
}

describeNeeds(['root', 'linux', 'useradd', 'mount'], 'row 6: the flush fsyncs the directory it wrote into (real second uid swapping the spool)', () => {
  const w = attackWorld(128);
  let n = 0;

  /** A managed home (2770) with its spool (2770), and the member's own directory (0755) outside it. */
  function layout(): { home: string; spool: string; member: string; stop: string } {
    const base = path.join(w.mnt, `case-${String(n++)}`);
    fs.mkdirSync(base, { mode: 0o755 });
    const home = path.join(base, 'home');
    const spool = path.join(home, 'pending_messages');
    fs.mkdirSync(spool, { recursive: true });
    for (const d of [home, spool]) {
      fs.chownSync(d, w.service.uid, w.users.gid);
      fs.chmodSync(d, 0o2770);
    }
    const member = path.join(base, 'member');
    fs.mkdirSync(member);
    fs.chownSync(member, w.attacker.uid, w.users.gid);
    fs.chmodSync(member, 0o755); // readable: a fsync by path through the link succeeds on it
    return { home, spool, member, stop: path.join(base, 'stop') };
  }

  it.each(['sync', 'async'] as const)(
    `row 6: %s, ${String(ROUNDS)} flushes against a spool swapped for a link — 0 durable claims for a directory not fsynced`,
    async (mode) => {
      const l = layout();
      const attack = runAs(ATTACKER, ['swap', l.stop, '120000', l.home, 'pending_messages', l.member], w.attacker, {}, 150_000);
      await new Promise((r) => setTimeout(r, 50)); // let the attacker get going
      let out: Counts;
      try {
        const victim = await runAs(
          fixture('flush-fsync.mjs'),
          [JSON.stringify({ rounds: ROUNDS, mode, spool: l.spool, aside: path.join(l.home, '.pending_messages.aside') })],
          w.service,
          { HERMES_HOME: l.home, HERMES_MANAGED: 'nixos' },
          90_000,
        );
        out = lastJson<Counts>(victim);
      } finally {
        fs.writeFileSync(l.stop, '');
      }
      const rounds = lastJson<{ rounds: number }>(await attack).rounds;
      const inMember = tree(l.member);
      const refused = Object.values(out.refused).reduce((a, b) => a + b, 0);
      const moved = out.warnings.ESPOOL_MOVED ?? 0;
      console.log(
        `row 6: ${mode}, ${String(out.rounds)} flushes, ${String(out.withWritten)} wrote payloads (${String(out.written)}), ` +
          `${String(out.durable)} claimed durable, ${String(out.badClaims)} durable claims with a payload in no fsynced directory, ` +
          `${String(out.notFsynced)} written payloads in no fsynced directory, ${String(out.dirFsyncs)} directory fsyncs, ${String(inMember.length)} files in the member's directory; ` +
          `refused ${JSON.stringify(out.refused)}, directory failures ${JSON.stringify(out.notDurable)}, warnings ${JSON.stringify(out.warnings)}; ` +
          `attacker rounds ${String(rounds)}`,
      );
      expect(out.rounds).toBe(ROUNDS);
      // The claim the issue measured: durable: true only for the very directory the payloads are in.
      expect(out.badClaims, JSON.stringify(out.samples)).toBe(0);
      expect(inMember).toEqual([]);
      // Every refusal typed; the race reached the flush (refused or moved while it ran), and work got done.
      expect(Object.keys({ ...out.refused, ...out.notDurable }).filter((c) => !/^E[A-Z_]+$/.test(c)), JSON.stringify(out.samples)).toEqual([]);
      expect(refused + moved + Object.values(out.notDurable).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
      expect(out.durable).toBeGreaterThan(0);
      expect(rounds).toBeGreaterThan(0);
    },
    120_000,
  );
});
