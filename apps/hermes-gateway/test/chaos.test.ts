/**
 * The acceptance test of "an acknowledged message is never lost": the gateway under PM2 (the shipped
 * pm2.config.cjs), its home on a small tmpfs, clients sending ≥ 20,000 messages over 50 sessions with
 * idempotency keys and retries, while a chaos loop — in a seeded random order — restarts it through PM2
 * (graceful, then forced past kill_timeout), kill -9s it, sends a second SIGTERM mid-flush, and fills the disk
 * and frees it. Every acknowledged message must be in state.db exactly once, in per-session order. The same
 * run against the planted bug (HERMES_GATEWAY_PLANT=ack-before-fsync) must lose some.
 * HERMES_CHAOS_MESSAGES (default 20,000), HERMES_CHAOS_PLANT_MESSAGES (4,000), HERMES_CHAOS_SEED (random).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describeNeeds, tempRoot } from '@hermes/test-utils';
import { expect, it } from 'vitest';
import { APP_NAME, fillDisk, freePort, judge, Pm2, PM2_CONFIG, prng, runClients, shippedPm2Settings, shuffle, sleep, waitReady, type Verdict } from './chaos-lib.js';
import { startReady, userRows } from './helpers.js';

const SESSIONS = 50;
const TMPFS_SIZE = '96m';
/**
 * The planted run gathers each commit for this long, so a message is acknowledged at least this long before its
 * commit and the kills land inside the window the bug opens (the real gateway answers only after the commit).
 */
const COMMIT_WINDOW_MS = 1000;
const ACTIONS = ['pm2-restart', 'pm2-restart-forced', 'kill-9', 'double-sigterm', 'disk-full', 'disk-full-kill-9'] as const;
type Action = (typeof ACTIONS)[number];

function envInt(name: string, fallback: number): number {
  const v = Number(process.env[name] ?? '');
  return Number.isInteger(v) && v > 0 ? v : fallback;
}

interface ChaosResult extends Verdict {
  restarts: number;
  /** SIGKILLs: the test's kill -9s plus PM2's past kill_timeout. */
  kills: number;
  pm2Kills: number;
  diskFulls: number;
  retries: number;
  statuses: string;
  order: Action[];
  seconds: number;
  recoveredAtEnd: number;
  unexpected: string[];
}

async function chaosRun(label: string, messages: number, seed: number, budgetMs: number, plant: boolean): Promise<ChaosResult> {
  const started = Date.now();
  const root = tempRoot('hermes-gw-chaos-');
  const mnt = path.join(root, 'mnt');
  fs.mkdirSync(mnt);
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${TMPFS_SIZE},mode=0755`, 'tmpfs', mnt]);
  const home = path.join(mnt, 'home');
  const ballast = path.join(mnt, 'ballast');
  const pm2 = new Pm2(root);
  const settings = shippedPm2Settings();
  const rnd = prng(seed);
  const keys = Array.from({ length: SESSIONS }, (_, i) => `agent:main:chaos:s${String(i)}`);
  let kills = 0;
  let diskFulls = 0;
  const order: Action[] = [];
  try {
    const port = await freePort();
    const url = `http://127.0.0.1:${String(port)}`;
    await pm2.run(['start', PM2_CONFIG], { HERMES_HOME: home, HERMES_GATEWAY_PORT: String(port), HERMES_GATEWAY_PLANT: plant ? 'ack-before-fsync' : undefined, ...(plant ? { HERMES_GATEWAY_COMMIT_WINDOW_MS: String(COMMIT_WINDOW_MS) } : {}) });
    await waitReady(url, 30_000);

    const newPid = async (old: number): Promise<void> => {
      const until = Date.now() + 30_000;
      for (;;) {
        const pid = await pm2.pid().catch(() => 0);
        if (pid !== 0 && pid !== old) break;
        if (Date.now() > until) throw new Error(`PM2 did not restart the gateway (pid ${String(old)}) within 30 s:\n${pm2.errorLog().slice(-4000)}`);
        await sleep(50);
      }
      try {
        await waitReady(url, 60_000);
      } catch (err) {
        throw new Error(`${(err as Error).message} after ${order.join(' → ')}; PM2's log of the gateway:\n${pm2.errorLog().slice(-4000)}`, { cause: err });
      }
    };
    const act = async (a: Action): Promise<void> => {
      order.push(a);
      if (a === 'pm2-restart') {
        await pm2.run(['restart', APP_NAME, '--kill-timeout', String(settings.kill_timeout)]);
        await waitReady(url, 60_000);
      } else if (a === 'pm2-restart-forced') {
        // Past kill_timeout: the gateway is frozen (SIGSTOP) when PM2 sends SIGINT, and thawed at a random moment
        // before or after PM2's SIGKILL (kill_timeout 400 ms): killed before, during or after its flush.
        const pid = await pm2.pid();
        const stops = pm2.logLines('Stopping app:');
        process.kill(pid, 'SIGSTOP');
        const restart = pm2.run(['restart', APP_NAME, '--kill-timeout', '400']);
        // PM2 sends its SIGINT right after it logs "Stopping app"; the thaw comes 0–700 ms later.
        while (pm2.logLines('Stopping app:') === stops) await sleep(5);
        await sleep(rnd() * 700);
        try {
          process.kill(pid, 'SIGCONT');
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
        }
        await restart;
        await waitReady(url, 60_000);
      } else if (a === 'disk-full-kill-9') {
        // Killed while the disk is full: what was acknowledged must already be on disk (the real gateway answers
        // 5xx when neither state.db nor the spool can take a message); a gateway that acknowledges first loses
        // every message it holds in memory.
        const pid = await pm2.pid();
        fillDisk(ballast);
        diskFulls++;
        await sleep(800);
        process.kill(pid, 'SIGKILL');
        kills++;
        fs.rmSync(ballast);
        await newPid(pid);
      } else if (a === 'kill-9') {
        const pid = await pm2.pid();
        process.kill(pid, 'SIGKILL');
        kills++;
        await newPid(pid);
      } else if (a === 'double-sigterm') {
        const pid = await pm2.pid();
        process.kill(pid, 'SIGTERM');
        await sleep(2);
        try {
          process.kill(pid, 'SIGTERM');
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
        }
        await newPid(pid);
      } else {
        fillDisk(ballast);
        diskFulls++;
        await sleep(1500);
        fs.rmSync(ballast);
      }
    };

    const progress = { clientsDone: false };
    const clients = runClients(url, keys, Math.ceil(messages / SESSIONS), started + budgetMs).finally(() => {
      progress.clientsDone = true;
    });
    const chaos = (async () => {
      let round = 0;
      while (!progress.clientsDone || round === 0) {
        // The planted run starts with a kill while the clients are sending: fast clients may be done before a
        // later kill, and a graceful stop flushes what the bug acknowledged early.
        const shuffled = shuffle(ACTIONS, rnd);
        const actions = plant && round === 0 ? ['kill-9' as const, ...shuffled.filter((x) => x !== 'kill-9')] : shuffled;
        for (const a of actions) {
          if (progress.clientsDone && round > 0) break;
          await sleep(150 + rnd() * 450);
          await act(a);
        }
        round++;
      }
    })();
    const [stats] = await Promise.all([clients, chaos]);
    const pm2View = await pm2.describe();
    const pm2Kills = pm2.sigkills();
    await pm2.run(['delete', APP_NAME]);
    await pm2.kill();

    // A last plain start recovers whatever a stop left in the spool, then a SIGTERM stops it.
    const last = await startReady(home);
    const recoveredAtEnd = Number(/"recovered":(\d+)/.exec(last.stderr())?.[1] ?? NaN);
    last.proc.kill('SIGTERM');
    const lastExit = await last.exited;
    if (lastExit.code !== 143) throw new Error(`the final gateway exited ${String(lastExit.code)}:\n${last.stderr()}`);

    const verdict = judge(stats.ackedTexts, (key) => userRows(home, key).map((r) => String(r.content)));
    const result: ChaosResult = {
      ...verdict,
      restarts: pm2View.restarts,
      kills: kills + pm2Kills,
      pm2Kills,
      diskFulls,
      retries: stats.retries,
      statuses: [...stats.byStatus].map(([s, n]) => `${String(s)}×${String(n)}`).join(' '),
      order,
      seconds: (Date.now() - started) / 1000,
      recoveredAtEnd,
      unexpected: stats.unexpected,
    };
    console.log(
      `chaos ${label} (seed ${String(seed)}): acked ${String(result.acked)}, delivered ${String(result.delivered)}, duplicates ${String(result.duplicates)}, ` +
        `lost ${String(result.lost)}, restarts ${String(result.restarts)}, kills ${String(result.kills)} (PM2 past kill_timeout ${String(pm2Kills)}); out-of-order sessions ${String(result.outOfOrder)}, ` +
        `disk fills ${String(diskFulls)}, retries ${String(result.retries)}, answers ${result.statuses}, recovered at the end ${String(recoveredAtEnd)}, ` +
        `${result.seconds.toFixed(1)} s; order ${order.join(' → ')}`,
    );
    return result;
  } finally {
    await pm2.kill();
    try {
      execFileSync('umount', [mnt]);
    } catch (err) {
      console.error(`umount ${mnt}: ${(err as Error).message}`);
    }
  }
}

const seed = envInt('HERMES_CHAOS_SEED', Math.floor(Math.random() * 2 ** 31));

describeNeeds(['root', 'linux', 'mount'], 'chaos under PM2: kill -9, forced restarts, double SIGTERM, a full disk (tmpfs home)', () => {
  it('≥ 20,000 messages over 50 sessions: every acknowledged message in state.db, exactly once and in order', async () => {
    const messages = envInt('HERMES_CHAOS_MESSAGES', 20_000);
    const r = await chaosRun('gateway', messages, seed, 150_000, false);
    expect(r.unexpected).toEqual([]);
    expect(r.acked).toBe(Math.ceil(messages / SESSIONS) * SESSIONS);
    expect(new Set(r.order)).toEqual(new Set(ACTIONS));
    expect(r.kills).toBeGreaterThanOrEqual(2);
    expect(r.restarts).toBeGreaterThanOrEqual(4);
    expect(r.lost).toBe(0);
    // Exactly once and in order. One CI run once delivered 100 acknowledged messages twice: recovery took the
    // idempotency keys from a listing made before its pass, so payloads a stop spooled during a drain lost
    // theirs and the clients' retries were stored again (README, "Exactly once under chaos"; recovery-store.test.ts).
    expect([r.delivered, r.duplicates, r.outOfOrder]).toEqual([r.acked, 0, 0]);
  }, 200_000);

  it('the same chaos against HERMES_GATEWAY_PLANT=ack-before-fsync loses acknowledged messages', async () => {
    const messages = envInt('HERMES_CHAOS_PLANT_MESSAGES', 4_000);
    // The planted bug loses a message only when a kill or a full disk lands between an ack and its commit: one
    // round of chaos can miss that window (one CI run did). Rounds go on, each with its own seed, until one loses,
    // at most four (about 20 s each).
    const rounds: { lost: number; delivered: number; acked: number }[] = [];
    for (let round = 1; round <= 4; round++) {
      const r = await chaosRun(`planted ack-before-fsync, round ${String(round)}`, messages, seed + round, 60_000, true);
      expect(r.unexpected).toEqual([]);
      expect(r.delivered).toBe(r.acked - r.lost);
      rounds.push(r);
      if (r.lost > 0) break;
    }
    console.log(`planted ack-before-fsync: lost ${rounds.map((r) => String(r.lost)).join(', ')} in ${String(rounds.length)} round(s)`);
    expect(rounds.some((r) => r.lost > 0)).toBe(true);
  }, 330_000);
});
