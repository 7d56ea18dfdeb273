/**
 * Process liveness (#24 row 7): dead only when provable. Every process here is real: a running one, a stopped
 * one, one that exited and was reaped, a zombie, a recycled pid (a record naming a live pid with another start
 * time, or a temp file written before the process with its pid started).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { processLiveness, type ProcessIdentity, readProcStat, selfIdentity, sweepTempFilesSync, writerLiveness } from '../src/index.js';
import { tempEnv } from './helpers.js';

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

function sleeper(): { pid: number; child: ChildProcess } {
  const child = spawn('sleep', ['60']);
  children.push(child);
  return { pid: child.pid ?? 0, child };
}

function ticks(pid: number): number {
  const stat = readProcStat(pid);
  if (typeof stat !== 'object' || !('startTicks' in stat)) throw new Error(`no stat for ${String(pid)}`);
  return stat.startTicks;
}

function record(pid: number, over: Partial<ProcessIdentity> = {}): ProcessIdentity {
  return { ...selfIdentity(), pid, startTicks: ticks(pid), ...over };
}

async function waitFor(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
}

describe('processLiveness: a record of pid, start time, pid namespace and boot', () => {
  it('alive, stopped-alive, recycled, reaped, zombie, another namespace, another boot', async () => {
    const live = sleeper();
    const verdicts: Record<string, string> = {};
    verdicts.self = processLiveness(selfIdentity()).state;
    verdicts.live = processLiveness(record(live.pid)).state;
    process.kill(live.pid, 'SIGSTOP');
    await waitFor(() => (readProcStat(live.pid) as { state?: string }).state === 'T');
    const stopped = processLiveness(record(live.pid));
    verdicts.stopped = stopped.state;
    expect(stopped.reason).toContain('(stopped)');
    process.kill(live.pid, 'SIGCONT');
    verdicts.recycled = processLiveness(record(live.pid, { startTicks: ticks(live.pid) - 1 })).state;
    verdicts.noStartTime = processLiveness(record(live.pid, { startTicks: null })).state;
    verdicts.otherNamespace = processLiveness(record(live.pid, { pidns: '1' })).state;
    verdicts.otherHost = processLiveness(record(live.pid, { bootId: '0'.repeat(32), hostname: 'elsewhere' })).state;

    const reaped = spawn('true');
    const reapedRecord = { ...selfIdentity(), pid: reaped.pid ?? 0, startTicks: 1 };
    await new Promise((r) => reaped.on('close', r));
    verdicts.reaped = processLiveness(reapedRecord).state;

    // A zombie: `sleep 0` is the child of a process (exec'd `sleep 60`) that never reaps it.
    const parent = spawn('/bin/sh', ['-c', 'sleep 0 & echo $!; exec sleep 60']);
    children.push(parent);
    const zombiePid = await new Promise<number>((resolve) => {
      parent.stdout.once('data', (d: Buffer) => {
        resolve(Number(d.toString().trim()));
      });
    });
    await waitFor(() => (readProcStat(zombiePid) as { state?: string }).state === 'Z');
    verdicts.zombie = processLiveness({ ...selfIdentity(), pid: zombiePid, startTicks: ticks(zombiePid) }).state;

    console.log(`liveness verdicts: ${JSON.stringify(verdicts)}`);
    expect(verdicts).toEqual({
      self: 'alive',
      live: 'alive',
      stopped: 'alive',
      recycled: 'dead',
      noStartTime: 'unknown',
      otherNamespace: 'unknown',
      otherHost: 'unknown',
      reaped: 'dead',
      zombie: 'dead',
    });
  });

  it('a record of an earlier boot of this very host (same machine id and hostname, initial pid namespace) is dead; of another machine, unknown', () => {
    const me = selfIdentity();
    const earlier = { ...me, pid: 1234, startTicks: 99, bootId: 'f'.repeat(32) };
    const verdict = processLiveness(earlier);
    if (me.pidns === '4026531836' && me.machineId !== null) {
      expect(verdict.state).toBe('dead');
      expect(verdict.reason).toContain('earlier boot');
    } else {
      expect(verdict.state).toBe('unknown');
    }
    expect(processLiveness({ ...earlier, machineId: '0'.repeat(32) }).state).toBe('unknown');
    expect(processLiveness({ ...earlier, hostname: `${me.hostname}-other` }).state).toBe('unknown');
  });
});

describe('writerLiveness and the sweep: a pid that started after the file was last written is not its writer', () => {
  it('a live writer is alive whatever the age of its file; a recycled pid is dead; another namespace is unknown', () => {
    const live = sleeper();
    const ns = selfIdentity().pidns ?? undefined;
    const now = Date.now();
    const states = {
      writtenNow: writerLiveness(live.pid, ns, now + 1000).state,
      writtenBeforeItStarted: writerLiveness(live.pid, ns, now - 60_000).state,
      selfAnHourAfterStart: writerLiveness(process.pid, ns, now).state,
      otherNamespace: writerLiveness(live.pid, '1', now - 60_000).state,
    };
    console.log(`writer liveness: ${JSON.stringify(states)}`);
    expect(states).toEqual({ writtenNow: 'alive', writtenBeforeItStarted: 'dead', selfAnHourAfterStart: 'alive', otherNamespace: 'unknown' });
  });

  it('the sweep: a temp written before the process with its pid started is stale (recycled); one written after is the live writer', () => {
    const env = tempEnv();
    const dir = path.join(env.home, 'sub');
    fs.mkdirSync(dir, { recursive: true });
    const live = sleeper();
    const ns = selfIdentity().pidns ?? '';
    const recycled = `.a.json.${String(live.pid)}-${ns}.0123456789ab.tmp`;
    const current = `.b.json.${String(live.pid)}-${ns}.0123456789ab.tmp`;
    for (const n of [recycled, current]) fs.writeFileSync(path.join(dir, n), '');
    const before = new Date(Date.now() - 10 * 60_000); // ten minutes before the sleeper started
    fs.utimesSync(path.join(dir, recycled), before, before);
    const r = sweepTempFilesSync(env.home);
    const seen = r.found.map((t) => [path.basename(t.path), t.pidAlive, t.stale]);
    console.log(`sweep of a recycled pid's temp: ${JSON.stringify(seen)}`);
    expect(seen).toEqual([
      [recycled, false, true],
      [current, true, false],
    ]);
  });
});
