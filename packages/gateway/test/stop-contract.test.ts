/**
 * The stop contract (docs/stop-contract.md), each case a real child process holding 2,000 undelivered
 * messages: a second SIGTERM, another listener's process.exit() before and after the hook, SIGKILL at random
 * points of the flush followed by recovery, and a WAL deleted during recovery followed by a SIGKILL.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseTempName } from '@hermes/fs-policy';
import { openSessionDb } from '@hermes/session-db';
import { spawnNode } from '@hermes/test-utils';
import { afterEach, describe, expect, it } from 'vitest';
import { recoverPending, type RecoveryReport } from '../src/index.js';
import { fixture, memoryLogger, spoolDir, tempDir } from './helpers.js';

const N = 2000;
const KEY = 'agent:main:telegram:dm:stop';
const SESSION = 'sess-stop';
const ALL = Array.from({ length: N }, (_, i) => `m-${String(i).padStart(4, '0')}`);

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  /** The last non-empty stderr line. */
  last: string;
}

/**
 * Starts the stop fixture, waits for READY, then runs `act` (which signals the child), and resolves when the
 * child is gone.
 */
function runChild(home: string, mode: string, act: (child: ReturnType<typeof spawnNode>) => void): Promise<Run> {
  return new Promise<Run>((resolve, reject) => {
    const child = spawnNode(fixture('stop.mjs'), [mode, String(N)], { umask: 0o022, env: { HERMES_HOME: home } });
    let stdout = '';
    let stderr = '';
    let ready = false;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`child did not finish; stdout=${stdout} stderr=${stderr}`));
    }, 90_000);
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (!ready && stdout.includes('READY\n')) {
        ready = true;
        act(child);
      }
    });
    // 'close', not 'exit': the last stderr bytes may arrive after the exit is seen.
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const lines = stderr.split('\n').filter((l) => l.trim() !== '');
      resolve({ code, signal, stderr, last: lines[lines.length - 1] ?? '' });
    });
  });
}

const TMPFS_MAGIC = 0x01021994;
const shmRoots: string[] = [];
afterEach(() => {
  for (const r of shmRoots.splice(0)) fs.rmSync(r, { recursive: true, force: true });
});

/**
 * A home on tmpfs (/dev/shm) when there is one, else on the temp directory. The loops below test the
 * process-level stop sequence: a page cache survives SIGKILL and process.exit(), so which states a stop can
 * leave (nothing, an empty or complete temp, a renamed payload) does not depend on the device, while 40,000
 * fsyncs on a shared virtual disk would take minutes. The single-run cases and the WAL case run on the disk.
 */
function loopHome(): string {
  try {
    if (fs.statfsSync('/dev/shm').type === TMPFS_MAGIC) {
      const root = fs.mkdtempSync('/dev/shm/hermes-gw-stop-');
      fs.chmodSync(root, 0o755);
      shmRoots.push(root);
      return path.join(root, 'home');
    }
  } catch {
    // no /dev/shm here
  }
  return path.join(tempDir(), 'home');
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs `count` tasks, `parallel` at a time. */
async function pool<T>(count: number, parallel: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array<T>(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      for (;;) {
        const i = next++;
        if (i >= count) return;
        out[i] = await task(i);
      }
    }),
  );
  return out;
}

interface OnDisk {
  /** text → the payload file name, for every complete `*.json`. */
  finals: Map<string, string>;
  /** target name → text, for every complete temp file whose final name does not exist. */
  orphanTemps: Map<string, string>;
  /** Complete temps whose final exists (a redundant copy). */
  redundantTemps: number;
  partialTemps: number;
}

function textOf(bytes: Buffer): string | undefined {
  try {
    const p = JSON.parse(bytes.toString('utf8')) as { data?: { text?: unknown } };
    return typeof p.data?.text === 'string' ? p.data.text : undefined;
  } catch {
    return undefined;
  }
}

/** What is on disk, read independently of the code under test (temps named by fs-policy's own parser). */
function onDisk(home: string): OnDisk {
  const dir = spoolDir(home);
  const result: OnDisk = { finals: new Map(), orphanTemps: new Map(), redundantTemps: 0, partialTemps: 0 };
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return result;
  }
  const present = new Set(names);
  for (const name of names) {
    const bytes = fs.readFileSync(path.join(dir, name));
    if (name.endsWith('.json')) {
      const text = textOf(bytes);
      expect(text, `${name} is complete`).toBeDefined();
      expect(result.finals.has(text ?? ''), `${text ?? ''} is in one final file only`).toBe(false);
      result.finals.set(text ?? '', name);
      continue;
    }
    const temp = parseTempName(name);
    if (temp === null) continue;
    const text = textOf(bytes);
    if (text === undefined) result.partialTemps++;
    else if (present.has(temp.target)) result.redundantTemps++;
    else result.orphanTemps.set(temp.target, text);
  }
  return result;
}

interface Recovered {
  report: RecoveryReport;
  texts: string[];
  summary: string;
}

function recover(home: string): Recovered {
  const db = openSessionDb({ home });
  try {
    if (db.getSession(SESSION) === undefined) db.createSession({ id: SESSION, source: 'telegram', sessionKey: KEY, startedAt: 1699999990 });
    const logger = memoryLogger();
    const report = recoverPending({ home, store: db, logger });
    const texts = (db.exportSession(SESSION)?.messages ?? []).map((m) => m.content as string);
    const summary = logger.lines.filter((l) => l.message.startsWith('pending-message recovery: ') && / inserted/.test(l.message)).pop();
    return { report, texts, summary: summary?.message ?? '' };
  } finally {
    db.close();
  }
}

/** `pending flush: 1,998 of 2,000 written…` → [1998, 2000]. */
function flushCounts(line: string): [number, number] {
  const m = /pending flush: ([\d,]+) of ([\d,]+) written/.exec(line);
  if (m === null) throw new Error(`no flush summary in: ${line}`);
  return [Number((m[1] ?? '').replace(/,/g, '')), Number((m[2] ?? '').replace(/,/g, ''))];
}

function exactlyOnce(texts: readonly string[], expected: readonly string[]): void {
  expect(texts.length).toBe(expected.length);
  expect(new Set(texts).size).toBe(texts.length);
  expect([...texts].sort()).toEqual([...expected].sort());
}

describe('stop contract: every message on disk or reported, whatever the stop sequence', () => {
  it('double SIGTERM 10–100 ms apart (20 runs): never aborted, exit 143, the last stderr line counts what is on disk', async () => {
    const runs = await pool(20, 4, async () => {
      const home = loopHome();
      const gap = 10 + Math.floor(Math.random() * 91);
      const run = await runChild(home, 'hook', (child) => {
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGTERM'), gap);
      });
      const disk = onDisk(home);
      const recovered = recover(home);
      return { gap, run, disk, recovered };
    });
    let withSecond = 0;
    for (const { run, disk, recovered } of runs) {
      expect(run.signal).toBeNull();
      expect(run.code).toBe(143);
      expect(run.last).toMatch(/pending flush: 2,000 of 2,000 written(; a second signal \(SIGTERM\) during the flush did not abort it)? signal="SIGTERM" exitCode=143$/);
      if (run.last.includes('a second signal')) withSecond++;
      const [written] = flushCounts(run.last);
      expect(disk.finals.size).toBe(written);
      exactlyOnce(recovered.texts, ALL);
    }
    // The second signal did land during the flush (a flush of 2,000 durable files takes far longer than 100 ms).
    expect(withSecond).toBeGreaterThan(0);
  });

  it.each([
    ['exit-before', 'the process exited: flushed before the exit completed'],
    ['exit-after', 'the process exited during the flush: the rest was written before the exit completed'],
  ])('another SIGTERM listener calls process.exit(0) (%s the hook): all 2,000 written, the line says so', async (mode, note) => {
    const home = path.join(tempDir(), 'home');
    const run = await runChild(home, mode, (child) => child.kill('SIGTERM'));
    expect(run.signal).toBeNull();
    // Every message is on disk, so the status is the one the other listener chose.
    expect(run.code).toBe(0);
    expect(run.last).toContain(`pending flush: 2,000 of 2,000 written; ${note}`);
    expect(onDisk(home).finals.size).toBe(N);
    exactlyOnce(recover(home).texts, ALL);
  });

  it('SIGKILL at random points of the flush (50 runs): every payload that reached disk completely, final or temp, is recovered exactly once', async () => {
    // How long an uninterrupted flush takes here: the kills are spread over that span.
    const calibration = loopHome();
    let begun = 0;
    let span = 0;
    await runChild(calibration, 'hook', (child) => {
      begun = Date.now();
      child.kill('SIGTERM');
      child.on('exit', () => {
        span = Date.now() - begun;
      });
    });
    span = Math.max(span, 50);
    // Runs go on until 50 of them were killed mid-flush (a kill that comes after a quick flush finished is a
    // run of the other tests, not of this one).
    let midFlush = 0;
    const runs = (
      await pool(100, 4, async () => {
        if (midFlush >= 50) return undefined;
        const home = loopHome();
        const delay = Math.floor(Math.random() * span);
        const run = await runChild(home, 'hook', (child) => {
          child.kill('SIGTERM');
          void sleep(delay).then(() => child.kill('SIGKILL'));
        });
        const disk = onDisk(home);
        const recovered = recover(home);
        const after = fs.existsSync(spoolDir(home)) ? fs.readdirSync(spoolDir(home)) : [];
        const left = after.filter((n) => !n.endsWith('.partial'));
        const partials = after.filter((n) => n.endsWith('.partial')).length;
        if (run.signal === 'SIGKILL') midFlush++;
        return { delay, run, disk, recovered, left, partials };
      })
    ).filter((r) => r !== undefined);
    let killed = 0;
    let adopted = 0;
    let partial = 0;
    for (const { run, disk, recovered, left, partials } of runs) {
      if (run.signal === 'SIGKILL') killed++;
      const expected = [...disk.finals.keys(), ...disk.orphanTemps.values()];
      exactlyOnce(recovered.texts, expected);
      // The recovery line counts what was on disk: every complete payload, the temps among them.
      const temps = disk.orphanTemps.size;
      expect(recovered.summary).toMatch(
        new RegExp(`^pending-message recovery: ${expected.length.toLocaleString('en-US')} inserted${temps > 0 ? ` \\(${temps.toLocaleString('en-US')} adopted from temp files\\)` : ''}, `),
      );
      expect(recovered.report.salvage?.adopted.length ?? 0).toBe(temps);
      expect(recovered.report.salvage?.duplicates.length ?? 0).toBe(disk.redundantTemps);
      expect(recovered.report.salvage?.partial.length ?? 0).toBe(disk.partialTemps);
      // Nothing is left but the partial temps, moved aside and reported (never deleted).
      expect(left).toEqual([]);
      expect(partials).toBe(disk.partialTemps);
      adopted += temps;
      partial += disk.partialTemps;
    }
    expect(killed).toBeGreaterThanOrEqual(50);
    console.log(
      `SIGKILL: ${String(killed)} of ${String(runs.length)} runs killed mid-flush (flush span ${String(span)} ms); ` +
        `${String(adopted)} complete temp payloads adopted, ${String(partial)} partial temps moved aside`,
    );
  });

  it.each([
    ['checkpoint', 0],
    ['no-checkpoint', 2000],
  ])('state.db-wal deleted between batches, then SIGKILL during recovery (%s): %i messages lost', async (mode, lost) => {
    const home = path.join(tempDir(), 'home');
    const dir = spoolDir(home);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const texts: string[] = [];
    for (let i = 0; i < 5000; i++) {
      const text = `w-${String(i).padStart(4, '0')}`;
      texts.push(text);
      const payload = { schema_version: 1, kind: 'overflow', session_key: KEY, reason: 'shutdown', ts: 1700000000 + i * 0.001, seq: i, index: i, data: { text, session_id: SESSION } };
      fs.writeFileSync(path.join(dir, `pending-${i.toString(16).padStart(32, '0')}.json`), JSON.stringify(payload), { mode: 0o600 });
    }
    const db = openSessionDb({ home });
    db.createSession({ id: SESSION, source: 'telegram', sessionKey: KEY, startedAt: 1699999990 });
    db.close();
    await new Promise<void>((resolve, reject) => {
      const child = spawnNode(fixture('recover-wal.mjs'), [mode], { umask: 0o022, env: { HERMES_HOME: home } });
      let stdout = '';
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
        if (stdout.includes('COMMITTED 5')) child.kill('SIGKILL');
      });
      child.on('exit', (_code, signal) => {
        if (signal === 'SIGKILL') resolve();
        else reject(new Error(`recovery was not killed: stdout=${stdout} stderr=${stderr}`));
      });
    });
    const again = recover(home);
    const missing = texts.filter((t) => !again.texts.includes(t));
    expect(new Set(again.texts).size).toBe(again.texts.length);
    expect(missing.length).toBe(lost);
    if (lost === 0) {
      exactlyOnce(again.texts, texts);
      expect(fs.readdirSync(dir)).toEqual([]);
    }
  });
});
