/**
 * The exit path's drain: the main thread cannot await inside `process.exit()`, and writing 2,000 payloads one
 * fsync after the other takes seconds, so the payloads that are not on disk yet are handed to a worker thread
 * that writes them many at once, while the main thread blocks on a shared flag. The worker writes relative to
 * the job's held spool (`/proc/self/fd/<fd>`: threads share the descriptor table), as the main thread does.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { secureMkdirSync } from '@hermes/fs-policy';
import { type DrainReason, drainJob, type FlushJob, type Item, settleFailed } from './jobs.js';
import { targetOf } from './job-spool.js';
import { SPOOL_KIND } from './spool.js';
import { movedOutError, notLandedError, type SpoolTarget } from './spool-target.js';

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
 * Writes the payloads of `jobs` that are not on disk yet in a worker thread (at most `timeoutMs`), then lets
 * {@link drainJob} write what the worker could not settle — it did not start, it ran out of time, a job of
 * another home — one by one, fsync each held directory and finalize every job. Never throws; without worker
 * threads (or without `workerFile`, the worker's script) it is exactly `drainJob`.
 */
export function drainBlocking(jobs: readonly FlushJob[], reason: DrainReason, timeoutMs: number, concurrency = 32, workerFile = WORKER_FILE): void {
  const open = jobs.filter((j) => j.report === undefined);
  const todo: Todo[] = [];
  for (const job of open) {
    job.drained = reason;
    let target: SpoolTarget;
    try {
      if (job.target === undefined) secureMkdirSync(job.loc.dir, SPOOL_KIND, { env: job.loc.env });
      target = targetOf(job);
    } catch {
      continue; // drainJob reports it for each payload
    }
    for (const item of job.items) if (item.state === 'planned' || item.state === 'writing') todo.push({ job, item, target });
  }
  if (todo.length > 1 && fs.existsSync(workerFile)) {
    try {
      runDrainWorker(todo, timeoutMs, concurrency, workerFile);
    } catch {
      // no worker (unavailable, refused, env not cloneable): drainJob writes everything on this thread
    }
  }
  for (const job of open) drainJob(job, reason);
}

function runDrainWorker(todo: readonly Todo[], timeoutMs: number, concurrency: number, workerFile: string): void {
  const n = todo.length;
  const statusBuf = new SharedArrayBuffer(4 * (n + 1));
  const modesBuf = new SharedArrayBuffer(4 * n);
  const detailsBuf = new SharedArrayBuffer(64 * 1024 + DETAIL_BYTES_PER_ITEM * n);
  const status = new Int32Array(statusBuf);
  const modes = new Int32Array(modesBuf);
  const env = todo[0]?.job.loc.env;
  const target = todo[0]?.target;
  // One worker for one held spool: items of another job's directory are left to drainJob.
  const mine = todo.filter((t) => t.job.loc.env === env && t.target === target);
  if (target === undefined || env === undefined || mine.length === 0) return;
  const worker = new Worker(workerFile, {
    workerData: {
      items: mine.map((t) => ({ path: target.writePath(path.basename(t.item.path)), data: t.item.data })),
      root: target.writeOptions(env).root,
      env,
      concurrency,
      status: statusBuf,
      modes: modesBuf,
      details: detailsBuf,
    },
    stdout: false,
    stderr: false,
  });
  worker.unref();
  try {
    const started = Date.now();
    if (Atomics.wait(status, 0, 0, WORKER_START_MS) === 'timed-out') return;
    const left = Math.max(0, timeoutMs - (Date.now() - started));
    if (Atomics.load(status, 0) === 2) Atomics.wait(status, 0, 2, left);
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
    mine.forEach(({ job, item }, i) => {
      const st = Atomics.load(status, i + 1);
      if (st === 1) {
        if (job.report !== undefined || item.state === 'written') return;
        const name = path.basename(item.path);
        if (!target.landed(name, item.data.length)) {
          item.state = 'planned';
          settleFailed(job, item, notLandedError(target, name));
          return;
        }
        if (place.where === 'outside') {
          try {
            fs.unlinkSync(target.at(name));
          } catch {
            // see SpoolTarget: the failure says where the directory went
          }
          item.state = 'planned';
          settleFailed(job, item, movedOutError(target, place.now, name));
          return;
        }
        item.state = 'written';
        item.failed = undefined;
        item.target = target;
        target.written++;
        item.written = { path: item.path, kind: item.kind, sessionKey: item.sessionKey, bytes: item.data.length, mode: Atomics.load(modes, i), ts: item.ts, seq: item.seq };
      } else if (st === 2) {
        const f = details[String(i)];
        if (f === undefined || job.report !== undefined || item.state === 'written') return; // drainJob tries it again
        if (target.byPathFor(f)) return; // root in a shared home: drainJob writes it by path (see SpoolTarget)
        const fix = (s: string): string => target.display(s);
        item.state = 'failed';
        item.failed = { ...f, path: fix(f.path), message: fix(f.message), hint: fix(f.hint), line: fix(f.line), target: item.path, kind: item.kind, sessionKey: item.sessionKey };
      }
    });
  } finally {
    void worker.terminate().catch(() => undefined);
  }
}
