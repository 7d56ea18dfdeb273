/** Shared by the stop-contract tests: the child runner, what is on disk, recovery, pools of runs. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseTempName } from '@hermes/fs-policy';
import { openSessionDb } from '@hermes/session-db';
import { spawnNode } from '@hermes/test-utils';
import { afterEach, expect } from 'vitest';
import { recoverPending, type RecoveryReport } from '../src/index.js';
import { fixture, memoryLogger, spoolDir, tempDir } from './helpers.js';

export const N = 2000;
export const KEY = 'agent:main:telegram:dm:stop';
export const SESSION = 'sess-stop';
export const ALL = Array.from({ length: N }, (_, i) => `m-${String(i).padStart(4, '0')}`);

export interface Run {
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
export function runChild(home: string, mode: string, act: (child: ReturnType<typeof spawnNode>) => void): Promise<Run> {
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
export function loopHome(): string {
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

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs `count` tasks, `parallel` at a time. */
export async function pool<T>(count: number, parallel: number, task: (i: number) => Promise<T>): Promise<T[]> {
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

export interface OnDisk {
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
export function onDisk(home: string): OnDisk {
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

export interface Recovered {
  report: RecoveryReport;
  texts: string[];
  summary: string;
}

export function recover(home: string): Recovered {
  const db = openSessionDb({ home });
  try {
    if (db.getSession(SESSION) === undefined) db.createSession({ id: SESSION, source: 'telegram', sessionKey: KEY, startedAt: 1699999990 });
    const logger = memoryLogger();
    const report = recoverPending({ home, store: db, logger });
    const texts = (db.exportSession(SESSION)?.messages ?? []).map((m) => m.content as string);
    const summary = logger.lines.filter((l) => l.message.startsWith('pending-message recovery: ') && l.message.includes(' inserted')).pop();
    return { report, texts, summary: summary?.message ?? '' };
  } finally {
    db.close();
  }
}

/** `pending flush: 1,998 of 2,000 written…` → [1998, 2000]. */
export function flushCounts(line: string): [number, number] {
  const m = /pending flush: ([\d,]+) of ([\d,]+) written/.exec(line);
  if (m === null) throw new Error(`no flush summary in: ${line}`);
  return [Number((m[1] ?? '').replace(/,/g, '')), Number((m[2] ?? '').replace(/,/g, ''))];
}

export function exactlyOnce(texts: readonly string[], expected: readonly string[]): void {
  expect(texts.length).toBe(expected.length);
  expect(new Set(texts).size).toBe(texts.length);
  expect([...texts].sort()).toEqual([...expected].sort());
}

