/**
 * A watchdog for libraries that open files by name (SQLite): such an open cannot be given `O_NONBLOCK`, and
 * opening a FIFO for reading blocks until a writer appears. A member of the service group who renames a FIFO
 * into place in the instant between a check and the library's own open (SQLite opens `O_RDONLY` for a
 * read-only connection, for its hot-journal check, and after a failed read-write open) would hang the
 * process for good.
 *
 * While armed, a worker thread (one per process, idle otherwise) looks every few milliseconds at the main
 * thread's kernel wait channel. When it is `wait_for_partner` (a FIFO open waiting for its other end), the
 * worker takes every FIFO in the held directory with `O_PATH | O_NOFOLLOW` and opens exactly that inode for
 * writing (`O_WRONLY | O_NONBLOCK` through `/proc/self/fd`), which completes the blocked open; the library
 * then fails on the FIFO (`pread` gives `ESPIPE`) and the caller refuses. If the FIFO was moved out of the
 * directory, nothing can complete the open: after {@link KILL_AFTER_MS} the worker writes one line naming
 * the directory and the fix to stderr and ends the process (SIGKILL) — a process that ends with a reason,
 * never one that hangs.
 */
import { Worker } from 'node:worker_threads';
import { anchorMode } from './internal/anchor.js';

/** How long a FIFO open that the worker cannot complete may block before the process is ended. */
export const KILL_AFTER_MS = 5_000;

const SOURCE = `
const fs = require('node:fs');
const { workerData } = require('node:worker_threads');
const s = new Int32Array(workerData.sab);
const pid = workerData.pid;
const O_PATH = 0o10000000;
const wchan = () => { try { return fs.readFileSync('/proc/self/task/' + pid + '/wchan', 'utf8').trim(); } catch { return ''; } };
const unblock = (dirfd) => {
  let names = [];
  try { names = fs.readdirSync('/proc/self/fd/' + dirfd); } catch { return; }
  for (const name of names) {
    let p = -1;
    try {
      p = fs.openSync('/proc/self/fd/' + dirfd + '/' + name, O_PATH | fs.constants.O_NOFOLLOW);
      if (fs.fstatSync(p).isFIFO()) {
        const w = fs.openSync('/proc/self/fd/' + p, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
        fs.closeSync(w);
        Atomics.add(s, 2, 1);
      }
    } catch {} finally { if (p >= 0) try { fs.closeSync(p); } catch {} }
  }
};
for (;;) {
  const armed = Atomics.load(s, 0);
  if (armed === 0) { Atomics.wait(s, 0, 0, 1000); continue; }
  let since = 0;
  while (Atomics.load(s, 0) === armed) {
    Atomics.wait(s, 0, armed, 5);
    if (Atomics.load(s, 0) !== armed) break;
    if (!/^(wait_for_partner|fifo_open)$/.test(wchan())) { since = 0; continue; }
    unblock(Atomics.load(s, 1));
    if (since === 0) since = Date.now();
    else if (Date.now() - since > workerData.killAfterMs) {
      try {
        fs.writeSync(2, 'hermes fs-policy error: a database open in ' + workerData.home + ' blocked on a FIFO that was renamed into place and then moved out of reach (code=EFIFO_BLOCKED); ending the process instead of hanging. Fix: remove FIFOs planted in the Hermes home (find <home> -type p) and stop the uid that plants them.\\n');
      } catch {}
      process.kill(pid, 'SIGKILL');
    }
  }
}
`;

let shared: Int32Array | undefined;
let generation = 0;
let unavailable = false;

function watchdog(home: string): Int32Array | undefined {
  if (shared !== undefined || unavailable) return shared;
  if (anchorMode() !== 'procfd') {
    unavailable = true;
    return undefined;
  }
  try {
    const sab = new SharedArrayBuffer(16);
    // The directory named in the last-resort message: the first one guarded (a process serves one home).
    const worker = new Worker(SOURCE, { eval: true, workerData: { sab, pid: process.pid, killAfterMs: KILL_AFTER_MS, home } });
    worker.unref();
    worker.on('error', () => {
      shared = undefined;
      unavailable = true;
    });
    shared = new Int32Array(sab);
  } catch {
    unavailable = true;
  }
  return shared;
}

/** How many blocked FIFO opens the watchdog has completed in this process (for tests and reports). */
export function fifoUnblocks(): number {
  return shared === undefined ? 0 : Atomics.load(shared, 2);
}

/**
 * Runs `fn` (a library's open and first statements) with the watchdog armed over the held directory whose
 * descriptor is `dirFd`. Without a worker (no procfs) `fn` runs unguarded: the checks before the open are
 * then all there is.
 */
export function withFifoWatchdog<T>(dirFd: number, dirPath: string, fn: () => T): T {
  const s = watchdog(dirPath);
  if (s === undefined) return fn();
  generation = (generation % 1_000_000) + 1;
  Atomics.store(s, 1, dirFd);
  Atomics.store(s, 0, generation);
  Atomics.notify(s, 0);
  try {
    return fn();
  } finally {
    Atomics.store(s, 0, 0);
    Atomics.notify(s, 0);
  }
}
