/**
 * The exit path's drain: the main thread cannot await inside `process.exit()`, and writing 2,000 payloads one
 * fsync after the other takes seconds, so the payloads that are not on disk yet are handed to a worker thread
 * that writes them many at once, while the main thread blocks on a shared flag and watches the deadline. The
 * worker writes relative to the job's held spool (`/proc/self/fd/<fd>`: threads share the descriptor table),
 * as the main thread does; what it cannot write in time goes into one batch file (batch-write.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { secureMkdirSync } from '@hermes/fs-policy';
import { emptyRemainder, type RemainderOutcome, writeRemainderSync } from './batch-write.js';
import type { DrainReason } from './job-types.js';
import { type FlushJob, type Item, settleFailed, settleWritten } from './jobs.js';
import { targetOf } from './job-spool.js';
import { SPOOL_KIND } from './spool.js';
import { movedOutError, notLandedError, type SpoolTarget } from './spool-target.js';
import { StopClock, TICK_MS } from './stop-clock.js';

const WORKER_FILE = fileURLToPath(new URL('./drain-worker.js', import.meta.url));
/** How long the blocked main thread waits for the drain worker to start before it writes on its own. */
const WORKER_START_MS = 3000;
/** Room for one failure's details in the shared buffer (a failure line is a few hundred bytes). */
const DETAIL_BYTES_PER_ITEM = 2048;

interface WorkerFailure {
  code: string;
  path: string;
  step: string;
  message: string;
  hint: string;
  uid: number;
  gid: number;
  line: string;
}

interface Todo {
  readonly job: FlushJob;
  readonly item: Item;
  readonly target: SpoolTarget;
}

/**
 * The exit path's drain, bounded by `timeoutMs` from now: the payloads of `jobs` that are not on disk yet are
 * written by a worker thread, one file each, while the per-file rate says they fit; then the worker is told to
 * start no more, the writes it has in flight get a short grace, and what is left is written here
 * ({@link writeRemainderSync}): as files while they fit, else as one batch file per spool. Every job is
 * finalized; this process's superseded temps are removed. Never throws; without worker threads (or without
 * `workerFile`, the worker's script) it is `writeRemainderSync` alone. Returns what the drain did.
 */
export function drainBlocking(
  jobs: readonly FlushJob[],
  reason: DrainReason,
  timeoutMs: number,
  concurrency = 32,
  workerFile = WORKER_FILE,
): RemainderOutcome {
  const clock = new StopClock(Date.now() + Math.max(0, timeoutMs), timeoutMs);
  const out = emptyRemainder();
  const open = jobs.filter((j) => j.report === undefined);
  const todo: Todo[] = [];
  let overtaken = false;
  let switched = false;
  for (const job of open) {
    job.drained = reason;
    let target: SpoolTarget;
    try {
      if (job.target === undefined) secureMkdirSync(job.loc.dir, SPOOL_KIND, { env: job.loc.env });
      target = targetOf(job);
    } catch {
      continue; // writeRemainderSync reports it for each payload
    }
    for (const item of job.items) {
      if (item.state === 'writing') overtaken = true; // this thread's async write, frozen by the exit
      if (item.state === 'planned' || item.state === 'writing') todo.push({ job, item, target });
    }
  }
  // A worker only helps while per-file writes can still fit: past that point everything goes into the batch.
  const bytes = todo.reduce((n, t) => n + t.item.data.length, 0);
  const perFileTime = clock.deadline - clock.reserveMs(bytes) - Date.now() > 0;
  if (todo.length > 1 && perFileTime && fs.existsSync(workerFile)) {
    try {
      const r = runDrainWorker(todo, clock, concurrency, workerFile);
      overtaken ||= r.overtaken;
      switched = r.switched;
    } catch {
      // no worker (unavailable, refused, env not cloneable): everything is written on this thread
    }
    for (const { item } of todo) {
      if (item.state === 'written') {
        out.items++;
        out.written++;
      } else if (item.state === 'failed' && item.failed !== undefined) {
        out.items++;
        out.failed.push(item.failed);
      }
    }
  }
  // The worker stopped because files did not fit: the rest is batched at once, not tried one file at a time.
  writeRemainderSync(open, reason, out, { clock, overtaken, ...(switched ? { perFileMs: Number.POSITIVE_INFINITY } : {}) });
  return out;
}

/**
 * Runs the drain worker over `todo` (the items of the first held spool; others are left to the caller) until it
 * is done or the clock says the rest must be batched; settles what it wrote or failed. `overtaken`: writes it
 * started may not have finished (their temps are then looked for); `switched`: it was stopped for the batch.
 */
function runDrainWorker(todo: readonly Todo[], clock: StopClock, concurrency: number, workerFile: string): { overtaken: boolean; switched: boolean } {
  const env = todo[0]?.job.loc.env;
  const target = todo[0]?.target;
  // One worker for one held spool: items of another job's directory are left to the remainder.
  const mine = todo.filter((t) => t.job.loc.env === env && t.target === target);
  if (target === undefined || env === undefined || mine.length === 0) return { overtaken: false, switched: false };
  const n = mine.length;
  const statusBuf = new SharedArrayBuffer(4 * (n + 1));
  const modesBuf = new SharedArrayBuffer(4 * n);
  const controlBuf = new SharedArrayBuffer(8);
  const detailsBuf = new SharedArrayBuffer(64 * 1024 + DETAIL_BYTES_PER_ITEM * Math.min(n, 4096));
  const status = new Int32Array(statusBuf);
  const modes = new Int32Array(modesBuf);
  const control = new Int32Array(controlBuf);
  // The payloads' bytes in one shared block: nothing is copied again to reach the worker.
  const offsets = new Float64Array(new SharedArrayBuffer(8 * (n + 1)));
  let total = 0;
  mine.forEach((t, i) => {
    offsets[i] = total;
    total += t.item.data.length;
  });
  offsets[n] = total;
  const blob = new SharedArrayBuffer(Math.max(1, total));
  const bytes = new Uint8Array(blob);
  mine.forEach((t, i) => {
    bytes.set(t.item.data, offsets[i]);
  });
  const worker = new Worker(workerFile, {
    workerData: {
      paths: mine.map((t) => target.writePath(path.basename(t.item.path))),
      blob,
      offsets,
      root: target.writeOptions(env).root,
      heldRoot: !target.byPath,
      env,
      concurrency,
      status: statusBuf,
      modes: modesBuf,
      control: controlBuf,
      details: detailsBuf,
    },
    stdout: false,
    stderr: false,
  });
  worker.unref();
  try {
    // Waiting for the worker to start never eats the time the batch needs.
    const startBy = Math.min(WORKER_START_MS, Math.max(0, clock.deadline - clock.reserveMs(total) - Date.now()));
    if (Atomics.wait(status, 0, 0, startBy) === 'timed-out') {
      Atomics.store(control, 0, 1); // should it start after all, it writes nothing
      return { overtaken: false, switched: true };
    }
    let switched = false;
    const phaseStart = Date.now();
    while (Atomics.load(status, 0) !== 1) {
      const settled = Atomics.load(control, 1);
      const remaining = n - settled;
      if (clock.shouldBatch(Date.now(), phaseStart, { settled, remaining, remainingBytes: (total * remaining) / n })) {
        Atomics.store(control, 0, 1);
        switched = true;
        const until = Math.min(Date.now() + clock.graceMs, clock.deadline);
        while (Atomics.load(status, 0) !== 1 && Date.now() < until) Atomics.wait(status, 0, 2, Math.max(1, until - Date.now()));
        break;
      }
      Atomics.wait(status, 0, 2, TICK_MS);
    }
    let details: Record<string, WorkerFailure> = {};
    if (Atomics.load(status, 0) === 1) {
      const view = new DataView(detailsBuf);
      const length = view.getInt32(0, true);
      if (length > 0) {
        try {
          details = JSON.parse(Buffer.from(new Uint8Array(detailsBuf, 4, length)).toString('utf8')) as Record<string, WorkerFailure>;
        } catch {
          details = {};
        }
      }
    }
    // Where the held spool is now decides whether what the worker wrote stays (see SpoolTarget.placement).
    const place = target.placement();
    let overtaken = false;
    mine.forEach(({ job, item }, i) => {
      const st = Atomics.load(status, i + 1);
      if (st === 3) overtaken = true; // started, not settled within the grace: the remainder writes it again
      if (st === 1) {
        if (job.report !== undefined || item.state === 'written') return;
        const name = path.basename(item.path);
        item.state = 'planned';
        if (!target.landed(name, item.data.length)) {
          settleFailed(job, item, notLandedError(target, name));
          return;
        }
        if (place.where === 'outside') {
          try {
            fs.unlinkSync(target.at(name));
          } catch {
            // see SpoolTarget: the failure says where the directory went
          }
          settleFailed(job, item, movedOutError(target, place.now, name));
          return;
        }
        settleWritten(job, item, target, item.data.length, Atomics.load(modes, i));
      } else if (st === 2) {
        const f = details[String(i)];
        if (f === undefined || job.report !== undefined || item.state === 'written') return; // written again by the remainder
        if (target.byPathFor(f)) return; // root in a shared home: the remainder writes it by path (see SpoolTarget)
        const fix = (s: string): string => target.display(s);
        if (item.state !== 'failed') job.settled++;
        item.state = 'failed';
        item.failed = { ...f, path: fix(f.path), message: fix(f.message), hint: fix(f.hint), line: fix(f.line), target: item.path, kind: item.kind, sessionKey: item.sessionKey };
      }
    });
    return { overtaken, switched };
  } finally {
    Atomics.store(control, 0, 1);
    void worker.terminate().catch(() => undefined);
  }
}
