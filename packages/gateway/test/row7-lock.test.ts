/**
 * #24 row 7: one gateway per home — the gateway lock, with liveness that is true. Every holder and every racer
 * is a real process; a stale lock is taken over only when its holder is provably dead.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { selfIdentity } from '@hermes/fs-policy';
import { openSessionDb } from '@hermes/session-db';
import { describeNeeds, runNode, spawnNode } from '@hermes/test-utils';
import { afterEach, describe, expect, it } from 'vitest';
import { acquireGatewayLock, GATEWAY_LOCK_NAME, GatewayLockError, gatewayLockHolder, recoverPending } from '../src/index.js';
import { fixture, memoryLogger, names, spoolDir, tempDir, writeSpoolFile } from './helpers.js';

const FIXTURE = fixture('row7-lock.mjs');
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

function newHome(): string {
  const home = path.join(tempDir(), 'home');
  fs.mkdirSync(home, { mode: 0o700 });
  return home;
}

/** A child whose stdout lines are parsed as JSON as they come; `next()` resolves the next one. */
interface Lines {
  readonly child: ChildProcess;
  next(): Promise<Record<string, unknown>>;
  ready: Promise<void>;
  send(line: string): void;
  closed: Promise<number | null>;
}

function track(child: ChildProcess): Lines {
  children.push(child);
  const queue: Record<string, unknown>[] = [];
  const waiters: ((v: Record<string, unknown>) => void)[] = [];
  let buf = '';
  let stderr = '';
  let readyResolve: () => void = () => undefined;
  const ready = new Promise<void>((r) => {
    readyResolve = r;
  });
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  child.stdout?.on('data', (d: Buffer) => {
    buf += d.toString();
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line === 'READY') {
        readyResolve();
        continue;
      }
      if (!line.startsWith('{')) continue;
      const v = JSON.parse(line) as Record<string, unknown>;
      const w = waiters.shift();
      if (w === undefined) queue.push(v);
      else w(v);
    }
  });
  const closed = new Promise<number | null>((resolve) => {
    child.on('close', (code) => {
      resolve(code);
    });
  });
  return {
    child,
    ready,
    closed,
    next: () =>
      new Promise((resolve, reject) => {
        const v = queue.shift();
        if (v !== undefined) {
          resolve(v);
          return;
        }
        const timer = setTimeout(() => {
          reject(new Error(`no line from the child; stderr: ${stderr}`));
        }, 30_000);
        waiters.push((x) => {
          clearTimeout(timer);
          resolve(x);
        });
      }),
    send: (line) => {
      child.stdin?.write(`${line}\n`);
    },
  };
}

function child(home: string, mode: string): Lines {
  return track(spawnNode(FIXTURE, [mode], { env: { HERMES_HOME: home } }));
}

function tryOnce(home: string): Record<string, unknown> {
  const r = runNode(FIXTURE, ['try'], { env: { HERMES_HOME: home } });
  const line = r.stdout.trim().split('\n').pop() ?? '';
  return JSON.parse(line) as Record<string, unknown>;
}

/** A lock directory naming a holder by hand (the format parseHolderName reads). */
function plantLock(home: string, pid: number, startTicks: number | null, pidns?: string): string {
  const me = selfIdentity();
  const dir = path.join(home, GATEWAY_LOCK_NAME);
  fs.mkdirSync(dir, { recursive: true });
  const host = Buffer.from(me.hostname).toString('base64url');
  const name = `holder.${String(pid)}.${startTicks === null ? 'x' : String(startTicks)}.${pidns ?? me.pidns ?? 'x'}.${me.bootId ?? 'x'}.${me.machineId ?? 'x'}.${host}.${String(Date.now())}.0badc0de`;
  fs.writeFileSync(path.join(dir, name), '{}\n');
  return name;
}

function startTicksOf(pid: number): number {
  const text = fs.readFileSync(`/proc/${String(pid)}/stat`, 'latin1');
  return Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[19]);
}

describe('the gateway lock (real processes)', () => {
  it('a second process is refused ELOCKED naming the holder; a SIGSTOPped holder is still refused; a SIGKILLed one is taken over', async () => {
    const home = newHome();
    const holder = child(home, 'hold');
    const first = await holder.next();
    await holder.ready;
    expect(first.ok).toBe(true);
    const pid = first.pid as number;
    expect(gatewayLockHolder({ home })?.pid).toBe(pid);

    const second = tryOnce(home);
    expect([second.ok, second.code, second.holderPid, second.liveness]).toEqual([false, 'ELOCKED', pid, 'alive']);

    process.kill(pid, 'SIGSTOP');
    const whileStopped = tryOnce(home);
    expect([whileStopped.ok, whileStopped.code, whileStopped.holderPid]).toEqual([false, 'ELOCKED', pid]);
    expect(String(whileStopped.message)).toContain('(stopped)');
    process.kill(pid, 'SIGCONT');

    process.kill(pid, 'SIGKILL');
    await holder.closed;
    // The killed holder's lock is still there, naming a dead pid: the next start proves it dead and takes it.
    expect(gatewayLockHolder({ home })?.pid).toBe(pid);
    const after = tryOnce(home);
    expect([after.ok, after.code]).toEqual([true, null]);
    // It released at its exit: the lock is free.
    expect(gatewayLockHolder({ home })).toBeNull();
    console.log(`row7 lock: live holder refused 1/1, stopped holder refused 1/1, killed holder taken over 1/1`);
  });

  it('a lock naming a live pid with another start time (a recycled pid) is taken over; the live pid with its own start time is not', () => {
    const home = newHome();
    const sleeper = spawn('sleep', ['60']);
    children.push(sleeper);
    const pid = sleeper.pid ?? 0;
    const ticks = startTicksOf(pid);
    plantLock(home, pid, ticks);
    const refused = tryOnce(home);
    expect([refused.ok, refused.code, refused.holderPid, refused.liveness]).toEqual([false, 'ELOCKED', pid, 'alive']);
    fs.rmSync(path.join(home, GATEWAY_LOCK_NAME), { recursive: true });
    plantLock(home, pid, ticks - 1);
    const taken = tryOnce(home);
    expect([taken.ok, taken.code]).toEqual([true, null]);
    console.log(`row7 lock: recycled pid ${String(pid)} (start ${String(ticks - 1)} vs ${String(ticks)}) taken over 1/1; same start refused 1/1`);
  });

  it('is re-entrant within a process and released by the last handle; a process that exits releases it', () => {
    const home = newHome();
    const a = acquireGatewayLock({ home });
    const b = acquireGatewayLock({ home });
    expect(gatewayLockHolder({ home })?.pid).toBe(process.pid);
    a.release();
    a.release(); // idempotent: one handle gives up one hold
    expect(gatewayLockHolder({ home })?.pid).toBe(process.pid);
    b.release();
    expect(gatewayLockHolder({ home })).toBeNull();
    expect(names(home)).toEqual([]);
    const r = tryOnce(home);
    expect(r.ok).toBe(true);
    expect(names(home)).toEqual([]); // released at exit, nothing left in the home
  });

  it('something that is no lock at its name is refused with a typed error and the fix', () => {
    const home = newHome();
    fs.writeFileSync(path.join(home, GATEWAY_LOCK_NAME), 'x');
    let err: unknown;
    try {
      acquireGatewayLock({ home });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GatewayLockError);
    expect((err as GatewayLockError).code).toBe('ELOCK_INVALID');
    expect((err as GatewayLockError).hint).toContain(`remove ${path.join(home, GATEWAY_LOCK_NAME)}`);
    expect(names(home).filter((n) => n.endsWith('.new'))).toEqual([]);
  });

  it('recoverPending while another live process holds the lock: nothing inserted, every file kept, ELOCKED naming the holder', async () => {
    const home = newHome();
    openSessionDb({ home }).close();
    const file = writeSpoolFile(home, 'pending-0123456789abcdef0123456789abcdef.json', JSON.stringify({ session_key: 'k', reason: 'shutdown', ts: 1700000000, data: { text: 'x', session_id: 's' } }));
    const holder = child(home, 'hold');
    const first = await holder.next();
    await holder.ready;
    const db = openSessionDb({ home });
    const logger = memoryLogger();
    const report = recoverPending({ home, store: db, logger });
    db.close();
    expect([report.inserted.length, report.scanned, report.errors.map((e) => e.code)]).toEqual([0, 0, ['ELOCKED']]);
    expect(report.errors[0]?.message).toContain(`pid ${String(first.pid)}`);
    expect(logger.lines.some((l) => l.level === 'error' && l.message.includes('ELOCKED'))).toBe(true);
    expect(fs.existsSync(file)).toBe(true);
    expect(names(spoolDir(home))).toEqual([path.basename(file)]);
    holder.send('exit');
    await holder.closed;
    console.log(`row7 lock: recovery against a live holder: 0 inserted, 1 of 1 file kept, ELOCKED`);
  });
});

describe('two racers for one stale lock (real processes, in a loop)', () => {
  const ROUNDS = 200;

  async function rounds(mode: 'race' | 'naive-race', n: number): Promise<{ one: number; two: number; none: number }> {
    const home = newHome();
    const a = child(home, mode);
    const b = child(home, mode);
    await Promise.all([a.ready, b.ready]);
    const counts = { one: 0, two: 0, none: 0 };
    const dead = spawn('true');
    await new Promise((r) => dead.on('close', r));
    for (let round = 0; round < n; round++) {
      // A stale lock: its holder's pid exists no more.
      fs.rmSync(path.join(home, GATEWAY_LOCK_NAME), { recursive: true, force: true });
      plantLock(home, dead.pid ?? 0, 1);
      const at = Date.now() + 15;
      a.send(`go ${String(round)} ${String(at)}`);
      b.send(`go ${String(round)} ${String(at)}`);
      const [ra, rb] = await Promise.all([a.next(), b.next()]);
      const wins = [ra, rb].filter((r) => r.ok === true).length;
      if (wins === 1) counts.one++;
      else if (wins === 2) counts.two++;
      else counts.none++;
      a.send('release');
      b.send('release');
      await Promise.all([a.next(), b.next()]);
    }
    a.send('exit');
    b.send('exit');
    await Promise.all([a.closed, b.closed]);
    return counts;
  }

  it(`exactly one winner in each of ${String(ROUNDS)} rounds (the control, a naive take-over, has rounds with two)`, async () => {
    const control = await rounds('naive-race', ROUNDS);
    const real = await rounds('race', ROUNDS);
    console.log(
      `row7 lock race: ${String(real.one)} of ${String(ROUNDS)} rounds with exactly one winner, ${String(real.two)} with two, ${String(real.none)} with none; ` +
        `control (naive take-over): ${String(control.two)} rounds with two winners, ${String(control.none)} with none`,
    );
    expect(real).toEqual({ one: ROUNDS, two: 0, none: 0 });
    expect(control.two + control.none).toBeGreaterThan(0);
  }, 300_000);
});

describeNeeds(['root', 'linux', 'unshare'], 'a holder in another pid namespace', () => {
  it('is refused as unprovable, never taken over, and from inside the namespace the outer holder is refused too', async () => {
    const home = newHome();
    const inner = track(
      spawn('unshare', ['--pid', '--fork', '--mount-proc', '--kill-child', process.execPath, FIXTURE, 'hold'], {
        env: { ...process.env, HERMES_HOME: home, NODE_OPTIONS: undefined },
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
    );
    const first = await inner.next();
    await inner.ready;
    expect(first.ok).toBe(true);
    const holder = gatewayLockHolder({ home });
    expect(holder?.pidns).not.toBe(selfIdentity().pidns);
    const outside = tryOnce(home);
    expect([outside.ok, outside.code, outside.liveness]).toEqual([false, 'ELOCKED', 'unknown']);
    expect(String(outside.message)).toContain('cannot be checked from here');
    expect(gatewayLockHolder({ home })?.pidns).toBe(holder?.pidns);
    inner.send('exit');
    await inner.closed;

    // The other way round: this process holds it; a process in a new pid namespace cannot prove it dead.
    const lock = acquireGatewayLock({ home });
    const r = track(
      spawn('unshare', ['--pid', '--fork', '--mount-proc', '--kill-child', process.execPath, FIXTURE, 'try'], {
        env: { ...process.env, HERMES_HOME: home, NODE_OPTIONS: undefined },
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
    );
    const fromInside = await r.next();
    await r.closed;
    lock.release();
    expect([fromInside.ok, fromInside.code, fromInside.liveness]).toEqual([false, 'ELOCKED', 'unknown']);
    console.log(`row7 lock: holder in another pid namespace refused as unprovable 2 of 2 (both directions)`);
  });
});
