/**
 * Issue #23 row 7: a member of the service group — a real second uid, in its own process, racing in a tight
 * loop (fixtures/exchange-attacker.mjs) — plants complete temp payloads whose writer is dead and exchanges
 * them with the service's payloads, so that the temp name a salvage reads and adopts sometimes names the
 * service's own payload. Salvage adopts by content (the verified bytes, written to a new exclusive file) and
 * recovery delivers by payload identity, so the service's payload never gets a second name and no message
 * is delivered twice. The victim (fixtures/salvage-loop.mjs) flushes, salvages, counts second names and
 * recovers, round after round.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestUsers, describeNeeds, lastJson, runAs, tempRoot, type TestUsers } from '@hermes/test-utils';
import { fixture } from './helpers.js';

/** Rounds of the victim (each flushes one message, salvages and recovers), within a time budget. */
const ROUNDS = 2000;
const VICTIM_MS = 110_000;

const SESSION = { id: 'sess-exchange', source: 'telegram', sessionKey: 'agent:main:telegram:dm:exchange', startedAt: 1700000000 };

interface RaceCounts {
  rounds: number;
  flushed: number;
  okTexts: string[];
  secondNames: number;
  adopted: number;
  duplicatesInSalvage: number;
  conflicts: number;
  inserted: number;
  duplicates: number;
  alreadyCommitted: number;
  errors: Record<string, number>;
  samples: Record<string, string>;
}

describeNeeds(['root', 'linux', 'useradd', 'mount'], 'row 7: salvage adopts by content, recovery delivers once (real second uid exchanging temps)', () => {
  let users: TestUsers;
  let mnt: string;
  let service: { uid: number; gid: number };
  let attacker: { uid: number; gid: number };

  beforeAll(() => {
    users = createTestUsers(2);
    service = { uid: users.users[0]?.uid ?? -1, gid: users.gid };
    attacker = { uid: users.users[1]?.uid ?? -1, gid: users.gid };
    mnt = path.join(tempRoot(), 'fs');
    fs.mkdirSync(mnt);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=128m,mode=0755', 'tmpfs', mnt]);
  });
  afterAll(() => {
    spawnSync('umount', ['-l', mnt]);
    users.cleanup();
  });

  it(`row 7: ${String(ROUNDS)} rounds of planted temps exchanged with service payloads — 0 second names, 0 duplicate deliveries`, async () => {
    const home = path.join(mnt, 'home');
    const spool = path.join(home, 'pending_messages');
    fs.mkdirSync(spool, { recursive: true });
    for (const d of [home, spool]) {
      fs.chownSync(d, service.uid, users.gid);
      fs.chmodSync(d, 0o2770);
    }
    const env = { HERMES_HOME: home, HERMES_MANAGED: 'nixos' };
    const stop = path.join(mnt, 'stop');
    const attack = runAs(fixture('exchange-attacker.mjs'), [stop, '170000', spool, SESSION.id], attacker, {}, 200_000);
    await new Promise((r) => setTimeout(r, 50)); // let the attacker get going
    let race: RaceCounts;
    try {
      race = lastJson<RaceCounts>(
        await runAs(fixture('salvage-loop.mjs'), [JSON.stringify({ mode: 'race', rounds: ROUNDS, maxMs: VICTIM_MS, session: SESSION })], service, env, 140_000),
      );
    } finally {
      fs.writeFileSync(stop, '');
    }
    const attacked = lastJson<{ rounds: number; exchanged: number; planted: number }>(await attack);
    // After the attacker stopped: one clean recovery (with salvage), then every message in state.db.
    const final = lastJson<RaceCounts & { messages: string[] }>(
      await runAs(fixture('salvage-loop.mjs'), [JSON.stringify({ mode: 'final', session: SESSION })], service, env, 60_000),
    );
    const delivered = new Map<string, number>();
    for (const m of final.messages) delivered.set(m, (delivered.get(m) ?? 0) + 1);
    const twice = [...delivered].filter(([, n]) => n > 1).map(([m]) => m);
    const strange = final.messages.filter((m) => !/^(SVC|PLANTED)-\d+$/.test(m));
    const svcDelivered = race.okTexts.filter((t) => delivered.has(t)).length;
    const planted = final.messages.filter((m) => m.startsWith('PLANTED-')).length;
    console.log(
      `row 7: ${String(race.rounds)} rounds vs ${String(attacked.rounds)} attacker rounds (${String(attacked.exchanged)} exchanges, ${String(attacked.planted)} temps planted); ` +
        `${String(race.secondNames)} payloads with a second name after a salvage, ${String(twice.length)} messages delivered twice, ` +
        `${String(strange.length)} delivered texts that are no payload's; salvage adopted ${String(race.adopted)}, ` +
        `redundant copies ${String(race.duplicatesInSalvage)}, conflicts left ${String(race.conflicts)}; recovery inserted ${String(race.inserted + final.inserted)}, ` +
        `second names reported as duplicate ${String(race.duplicates + final.duplicates)}, already committed ${String(race.alreadyCommitted + final.alreadyCommitted)}; ` +
        `service messages delivered ${String(svcDelivered)} of ${String(race.okTexts.length)} flushed, planted delivered ${String(planted)}; errors ${JSON.stringify({ ...race.errors, ...final.errors })}`,
    );
    expect(race.rounds).toBe(ROUNDS);
    expect(attacked.exchanged).toBeGreaterThan(0);
    // The service's payload never gets a second name, and no message is delivered twice.
    expect(race.secondNames).toBe(0);
    expect(twice).toEqual([]);
    // What was adopted is exactly the bytes that were read: every delivered text is a flushed or a planted one.
    expect(strange).toEqual([]);
    expect(Object.keys({ ...race.errors, ...final.errors }).filter((c) => !/^(E[A-Z_]+|left:[a-z-]+)$/.test(c)), JSON.stringify(race.samples)).toEqual([]);
  }, 280_000);
});
