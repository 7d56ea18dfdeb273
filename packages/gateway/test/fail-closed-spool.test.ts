/**
 * The spool attacks replayed without descriptors (issue #23, acceptance "the whole attack suite in fallback
 * mode"): /proc masked in a mount namespace and TMPDIR=/nonexistent, so @hermes/fs-policy can only reach names by
 * path. A member of the service group — a real second uid, its own process, a tight loop — swaps
 * `pending_messages/` for a link to a directory of its own while the service flushes into its managed home.
 * Without descriptors a rename at the right moment could redirect a payload, so every flush into the shared home
 * is refused (EUNSAFE_FALLBACK) and reported, never written by path: 0 payloads reach the member's directory.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect, it } from 'vitest';
import { ATTACKER, attackWorld, describeNeeds, lastJson, runAs, runMasked, tree } from '@hermes/test-utils';
import { fixture } from './helpers.js';

const ROUNDS = 2000;

interface Counts {
  rounds: number;
  withWritten: number;
  written: number;
  durable: number;
  refused: Record<string, number>;
  notDurable: Record<string, number>;
  samples: Record<string, string>;
}

describeNeeds(['root', 'linux', 'useradd', 'mount', 'unshare'], 'fallback mode: the spool swap against a flush without descriptors', () => {
  const w = attackWorld(128);
  let n = 0;

  it.each(['sync', 'async'] as const)(`fallback: %s, ${String(ROUNDS)} flushes into a managed home with the spool swapped in a loop — every one refused EUNSAFE_FALLBACK, 0 payloads outside`, async (mode) => {
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
    fs.chmodSync(member, 0o777); // anyone may write there: a flush by path through the link would succeed
    const stop = path.join(base, 'stop');

    const attack = runAs(ATTACKER, ['swap', stop, '120000', home, 'pending_messages', member], w.attacker, {}, 150_000);
    await new Promise((r) => setTimeout(r, 50));
    let out: Counts;
    try {
      const victim = await runMasked(
        fixture('flush-fsync.mjs'),
        [JSON.stringify({ rounds: ROUNDS, mode, spool, aside: path.join(home, '.pending_messages.aside') })],
        w.service,
        { HERMES_HOME: home, HERMES_MANAGED: 'nixos' },
        90_000,
      );
      out = lastJson<Counts>(victim);
    } finally {
      fs.writeFileSync(stop, '');
    }
    const rounds = lastJson<{ rounds: number }>(await attack).rounds;
    const inMember = tree(member);
    const inSpool = fs.existsSync(spool) && fs.lstatSync(spool).isDirectory() ? tree(spool) : [];
    console.log(
      `fallback: ${mode}, ${String(out.rounds)} flushes without descriptors, ${String(out.written)} payloads written, ` +
        `refused ${JSON.stringify(out.refused)}, ${String(inMember.length)} files in the member's directory, ${String(inSpool.length)} in the spool; attacker rounds ${String(rounds)}`,
    );
    expect(out.rounds).toBe(ROUNDS);
    expect([out.written, out.durable, inMember, inSpool]).toEqual([0, 0, [], []]);
    // Two payloads per flush, each refused with the one typed code that says why.
    expect(out.refused).toEqual({ EUNSAFE_FALLBACK: 2 * ROUNDS });
    expect(out.samples.EUNSAFE_FALLBACK).toContain('descriptors are unavailable (procfs is not mounted here, or is masked');
    expect(rounds).toBeGreaterThan(0);
  }, 150_000);
});
