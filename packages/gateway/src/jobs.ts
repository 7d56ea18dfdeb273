/**
 * A flush in progress, as the shutdown hook needs to see it. Every flush (sync or async) is a job: its
 * payloads are planned and serialised up front, each with the file name it will have, and the job stays in a
 * process-wide registry until its report is final. Whatever stops the process — a second signal, another
 * listener's `process.exit()`, a budget that ran out — can then write, synchronously, every payload of every
 * job that is not on disk yet ({@link drainJob}). A payload written twice (once by the interrupted async
 * write, once by the drain) goes to the same name with the same bytes, so it exists once.
 */
import * as fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import {
  atomicWrite,
  atomicWriteSync,
  FsPolicyError,
  fsyncDirectory,
  fsyncDirectorySync,
  isErrnoException,
  secureMkdir,
  secureMkdirSync,
  type WriteResult,
} from '@hermes/fs-policy';
import { count, type GatewayLogger } from './log.js';
import type { PayloadKind } from './payload.js';
import { SPOOL_KIND, type SpoolLocation } from './spool.js';

/** What made the rest of a flush go the synchronous way. */
export type DrainReason =
  /** The process is exiting (`process.exit()` from any listener, or the event loop ran dry). */
  | 'exit'
  /** The shutdown hook's budget ran out before the async flush settled. */
  | 'budget'
  /** The shutdown hook finished while a flush it did not await was still running. */
  | 'shutdown';

/** A payload that is on disk: fsynced, renamed into place, and (when the report is `durable`) its directory fsynced. */
export interface WrittenEntry {
  readonly path: string;
  readonly kind: PayloadKind;
  readonly sessionKey: string | null;
  readonly bytes: number;
  /** The file's permission bits (0o600 by policy). */
  readonly mode: number;
  readonly ts: number;
  readonly seq: number;
}

/**
 * A payload that is NOT on disk, and why: the errno or policy code, the path that failed (often the
 * directory), the uid/gid the process ran as, the fix, and the file it would have been.
 */
export interface FailedEntry {
  readonly code: string;
  readonly path: string;
  readonly step: string;
  readonly message: string;
  readonly uid: number;
  readonly gid: number;
  readonly hint: string;
  /** The whole story in one line (what, where, as whom, the fix), as logged. */
  readonly line: string;
  /** The payload file this entry would have been written to. */
  readonly target: string;
  readonly kind: PayloadKind | null;
  readonly sessionKey: string | null;
}

/** An input that held nothing to write (null/undefined, or no text and no media). */
export interface SkippedEntry {
  readonly kind: PayloadKind;
  readonly sessionKey: string | null;
  readonly reason: 'empty' | 'no-content';
}

/**
 * Something the flush did differently from what it was asked, and wrote anyway: an option it could not use
 * (`EINVALID_OPTION`, the default was used) or a timestamp that is not epoch seconds (`ETIMESTAMP`, the
 * flush time was used; the message itself is written).
 */
export interface FlushWarning {
  readonly code: 'EINVALID_OPTION' | 'ETIMESTAMP';
  readonly message: string;
  /** The payload file concerned, or null for an option. */
  readonly target: string | null;
  readonly sessionKey: string | null;
}

/** The result of every flush: nothing is thrown and nothing is hidden. */
export interface FlushReport {
  readonly dir: string;
  readonly written: WrittenEntry[];
  readonly failed: FailedEntry[];
  readonly skipped: SkippedEntry[];
  readonly warnings: FlushWarning[];
  /** False when the final directory fsync failed (the written files are in place but may not survive a power loss). */
  durable: boolean;
  /** Set when a stop event wrote the rest of this flush synchronously (see the stop contract). */
  drained: DrainReason | null;
  elapsedMs: number;
}

interface Item {
  readonly kind: PayloadKind;
  readonly sessionKey: string | null;
  readonly path: string;
  readonly ts: number;
  readonly seq: number;
  readonly data: Buffer;
  state: 'planned' | 'writing' | 'written' | 'failed';
  written?: WrittenEntry | undefined;
  failed?: FailedEntry | undefined;
}

let nextJobId = 1;

export class FlushJob {
  readonly id = nextJobId++;
  readonly started = Date.now();
  readonly items: Item[] = [];
  /** Messages refused before any I/O (invalid input, not serialisable). */
  readonly planFailed: FailedEntry[] = [];
  readonly skipped: SkippedEntry[] = [];
  readonly warnings: FlushWarning[] = [];
  dirFailure: FailedEntry | undefined;
  durable = true;
  drained: DrainReason | null = null;
  /** Set once, by {@link finalize}: from then on nothing about the job changes. */
  report: FlushReport | undefined;

  /** The final report, if a drain (which can run between any two awaits) has finalized the job. */
  final(): FlushReport | undefined {
    return this.report;
  }

  constructor(
    readonly loc: SpoolLocation,
    readonly logger: GatewayLogger,
  ) {}

  addItem(kind: PayloadKind, sessionKey: string | null, path: string, ts: number, seq: number, data: Buffer): void {
    this.items.push({ kind, sessionKey, path, ts, seq, data, state: 'planned' });
  }

  /** Messages this flush was given (written, failed or still on their way; skipped ones excluded). */
  messages(): number {
    return this.items.length + this.planFailed.length;
  }

  writtenCount(): number {
    let n = 0;
    for (const i of this.items) if (i.state === 'written') n++;
    return n;
  }

  /** Every failure so far: refused messages, failed writes, the directory fsync. */
  failures(): FailedEntry[] {
    const out = [...this.planFailed];
    for (const i of this.items) if (i.state === 'failed' && i.failed !== undefined) out.push(i.failed);
    if (this.dirFailure !== undefined) out.push(this.dirFailure);
    return out;
  }
}

// ---------------------------------------------------------------------------------------------------------
// The registry

const active = new Set<FlushJob>();
const listeners = new Set<(job: FlushJob) => void>();

/** Registers a job (it leaves the registry when it is finalized) and tells the listeners. */
export function register(job: FlushJob): void {
  active.add(job);
  for (const l of listeners) {
    try {
      l(job);
    } catch {
      // a listener's failure must not stop a flush
    }
  }
}

/** Jobs whose report is not final yet. */
export function activeJobs(): FlushJob[] {
  return [...active];
}

/** Calls `listener` for every job registered from now on; returns the unsubscribe function. */
export function onJobStart(listener: (job: FlushJob) => void): () => void {
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
  };
}

// ---------------------------------------------------------------------------------------------------------
// Settling items

export function policyError(err: unknown, path: string): FsPolicyError {
  if (err instanceof FsPolicyError) return err;
  const code = isErrnoException(err) && err.code !== undefined ? err.code : 'EUNEXPECTED';
  return new FsPolicyError({
    code,
    step: 'write',
    path,
    message: `writing ${path} failed: ${err instanceof Error ? err.message : String(err)}`,
    cause: err,
  });
}

export function failure(err: FsPolicyError, target: string, kind: PayloadKind | null, sessionKey: string | null): FailedEntry {
  return {
    code: err.code,
    path: err.path,
    step: err.step,
    message: err.message,
    uid: err.uid,
    gid: err.gid,
    hint: err.hint,
    line: err.toLine(),
    target,
    kind,
    sessionKey,
  };
}

function settleWritten(job: FlushJob, item: Item, r: WriteResult): void {
  if (job.report !== undefined || item.state === 'written') return;
  item.state = 'written';
  item.failed = undefined;
  item.written = { path: r.path, kind: item.kind, sessionKey: item.sessionKey, bytes: r.bytes, mode: r.mode, ts: item.ts, seq: item.seq };
}

function settleFailed(job: FlushJob, item: Item, err: unknown): void {
  if (job.report !== undefined || item.state === 'written') return;
  item.state = 'failed';
  item.failed = failure(policyError(err, item.path), item.path, item.kind, item.sessionKey);
}

function budgetError(path: string): FsPolicyError {
  return new FsPolicyError({
    code: 'ETIMEDOUT',
    step: 'write',
    path,
    message: `not written: the shutdown budget ran out before this payload's turn`,
    hint: 'give the shutdown hook a larger budget (budgetMs), or find why the disk is this slow.',
  });
}

const WRITE_OPTIONS = { kind: SPOOL_KIND, durable: 'file', createParents: false } as const;

// ---------------------------------------------------------------------------------------------------------
// Running a job

/**
 * Runs a job with bounded concurrency: each write fsyncs its own file (the fsyncs overlap in the libuv
 * pool), the directory is fsynced once at the end. If a drain takes the job over meanwhile, its report is
 * the one returned.
 */
export async function runJobAsync(job: FlushJob, concurrency: number): Promise<FlushReport> {
  if (job.report !== undefined) return job.report;
  if (job.items.length === 0) return finalize(job);
  const { dir, env } = job.loc;
  try {
    await secureMkdir(dir, SPOOL_KIND, { env });
  } catch (err) {
    const done = job.final();
    if (done !== undefined) return done;
    for (const item of job.items) settleFailed(job, item, err);
    return finalize(job);
  }
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      if (job.drained !== null || job.final() !== undefined) return;
      const item = job.items[next++];
      if (item === undefined) return;
      if (item.state !== 'planned') continue;
      item.state = 'writing';
      try {
        settleWritten(job, item, await atomicWrite(item.path, item.data, { ...WRITE_OPTIONS, env }));
      } catch (err) {
        settleFailed(job, item, err);
      }
    }
  };
  const workers = Math.max(1, Math.min(concurrency, job.items.length));
  await Promise.all(Array.from({ length: workers }, () => worker()));
  const drained = job.final();
  if (drained !== undefined) return drained;
  if (job.writtenCount() > 0) {
    try {
      await fsyncDirectory(dir);
    } catch (err) {
      if (job.final() === undefined) dirFailed(job, err);
    }
  }
  return job.final() ?? finalize(job);
}

function dirFailed(job: FlushJob, err: unknown): void {
  job.durable = false;
  job.dirFailure = failure(policyError(err, job.loc.dir), job.loc.dir, null, null);
}

/**
 * Writes, synchronously and one after the other, every payload of the job that is not on disk yet — the
 * planned ones and those whose async write is still under way (same name, same bytes) — fsyncs the
 * directory once, and finalizes the job. With a `deadline` (epoch ms), payloads whose turn comes after it
 * fail with `ETIMEDOUT` instead (a write already started is never cut short). `reason` null: an ordinary
 * synchronous flush.
 */
export function drainJob(job: FlushJob, reason: DrainReason | null, deadline?: number): FlushReport {
  if (job.report !== undefined) return job.report;
  if (reason !== null) job.drained = reason;
  const { dir, env } = job.loc;
  const todo = job.items.filter((i) => i.state === 'planned' || i.state === 'writing');
  if (todo.length > 0) {
    let ready = true;
    try {
      secureMkdirSync(dir, SPOOL_KIND, { env });
    } catch (err) {
      ready = false;
      for (const item of todo) {
        item.state = 'planned'; // let settleFailed take it whatever the async side was doing
        settleFailed(job, item, err);
      }
    }
    if (ready) {
      for (const item of todo) {
        // A payload whose async write is under way lands on disk whatever happens here: it is written now
        // (same name, same bytes) past any deadline, so the report never calls a file on disk "not written".
        const started = item.state === 'writing';
        item.state = 'planned';
        if (!started && deadline !== undefined && Date.now() >= deadline) {
          settleFailed(job, item, budgetError(item.path));
          continue;
        }
        try {
          settleWritten(job, item, atomicWriteSync(item.path, item.data, { ...WRITE_OPTIONS, env }));
        } catch (err) {
          settleFailed(job, item, err);
        }
      }
    }
  }
  if (job.writtenCount() > 0) {
    try {
      fsyncDirectorySync(dir);
      job.durable = true;
      job.dirFailure = undefined;
    } catch (err) {
      dirFailed(job, err);
    }
  }
  return finalize(job);
}

/** Drains every active job (see {@link drainJob}); returns the jobs it finalized. */
export function drainAll(reason: DrainReason, deadline?: number): FlushJob[] {
  const jobs = activeJobs();
  for (const job of jobs) drainJob(job, reason, deadline);
  return jobs;
}

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

/**
 * The exit path's drain: the main thread cannot await inside `process.exit()`, and writing 2,000 payloads one
 * fsync after the other takes seconds, so the payloads that are not on disk yet are handed to a worker thread
 * that writes them many at once, while the main thread blocks on a shared flag (at most `timeoutMs`). What
 * the worker could not settle — it did not start, it ran out of time, a job of another home — is then
 * written by {@link drainJob} one by one, which also fsyncs each directory and finalizes every job. Never
 * throws; without worker threads (or without `workerFile`, the worker's script) it is exactly `drainJob`.
 */
export function drainBlocking(jobs: readonly FlushJob[], reason: DrainReason, timeoutMs: number, concurrency = 32, workerFile = WORKER_FILE): void {
  const open = jobs.filter((j) => j.report === undefined);
  const todo: { job: FlushJob; item: Item }[] = [];
  for (const job of open) {
    job.drained = reason;
    let ready = true;
    try {
      secureMkdirSync(job.loc.dir, SPOOL_KIND, { env: job.loc.env });
    } catch {
      ready = false; // drainJob reports it for each payload
    }
    if (!ready) continue;
    for (const item of job.items) if (item.state === 'planned' || item.state === 'writing') todo.push({ job, item });
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

function runDrainWorker(todo: readonly { job: FlushJob; item: Item }[], timeoutMs: number, concurrency: number, workerFile: string): void {
  const n = todo.length;
  const statusBuf = new SharedArrayBuffer(4 * (n + 1));
  const modesBuf = new SharedArrayBuffer(4 * n);
  const detailsBuf = new SharedArrayBuffer(64 * 1024 + DETAIL_BYTES_PER_ITEM * n);
  const status = new Int32Array(statusBuf);
  const modes = new Int32Array(modesBuf);
  const env = todo[0]?.job.loc.env;
  // One worker for one environment: items of another home's job are left to drainJob.
  const mine = todo.filter((t) => t.job.loc.env === env);
  const worker = new Worker(workerFile, {
    workerData: {
      items: mine.map((t) => ({ path: t.item.path, data: t.item.data })),
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
    mine.forEach(({ job, item }, i) => {
      const st = Atomics.load(status, i + 1);
      if (st === 1) {
        if (job.report !== undefined || item.state === 'written') return;
        item.state = 'written';
        item.failed = undefined;
        item.written = { path: item.path, kind: item.kind, sessionKey: item.sessionKey, bytes: item.data.length, mode: Atomics.load(modes, i), ts: item.ts, seq: item.seq };
      } else if (st === 2) {
        const f = details[String(i)];
        if (f === undefined || job.report !== undefined || item.state === 'written') return; // drainJob tries it again
        item.state = 'failed';
        item.failed = { ...f, target: item.path, kind: item.kind, sessionKey: item.sessionKey };
      }
    });
  } finally {
    void worker.terminate().catch(() => undefined);
  }
}

/**
 * Groups failures by errno/policy code: one log line per code with its count, however many payloads failed
 * (a full disk is one line, not 2,000). The per-message detail stays in the report.
 */
export function failureGroups(failed: readonly FailedEntry[]): { code: string; count: number; where: string; first: FailedEntry }[] {
  const groups = new Map<string, { code: string; count: number; paths: Set<string>; first: FailedEntry }>();
  for (const f of failed) {
    const g = groups.get(f.code);
    if (g === undefined) groups.set(f.code, { code: f.code, count: 1, paths: new Set([f.path]), first: f });
    else {
      g.count++;
      g.paths.add(f.path);
    }
  }
  return [...groups.values()].map((g) => ({ code: g.code, count: g.count, where: commonPath([...g.paths]), first: g.first }));
}

/** The one path all of `paths` are, or their common directory. */
function commonPath(paths: readonly string[]): string {
  if (paths.length === 1) return paths[0] ?? '';
  const split = paths.map((p) => p.split('/'));
  const first = split[0] ?? [];
  let n = 0;
  while (n < first.length && split.every((s) => s[n] === first[n])) n++;
  const common = first.slice(0, n).join('/');
  return common === '' ? '/' : common;
}

function logFailures(logger: GatewayLogger, failed: readonly FailedEntry[]): void {
  for (const g of failureGroups(failed)) {
    const what = g.count === 1 ? g.first.line : `${g.code} at ${g.where}. First: ${g.first.line}`;
    logger.error(`${count(g.count)} pending message(s) NOT written: ${what}`, {
      path: g.where,
      code: g.code,
      step: g.first.step,
      uid: g.first.uid,
      gid: g.first.gid,
      count: g.count,
    });
  }
}

/** Makes the job's report final, takes the job out of the registry and logs its outcome. */
export function finalize(job: FlushJob): FlushReport {
  if (job.report !== undefined) return job.report;
  const written: WrittenEntry[] = [];
  for (const i of job.items) if (i.state === 'written' && i.written !== undefined) written.push(i.written);
  const report: FlushReport = {
    dir: job.loc.dir,
    written,
    failed: job.failures(),
    skipped: job.skipped,
    warnings: job.warnings,
    durable: job.durable,
    drained: job.drained,
    elapsedMs: Date.now() - job.started,
  };
  job.report = report;
  active.delete(job);
  // A throwing logger must not turn a report into an exception (or lose what was written).
  try {
    for (const w of report.warnings) {
      job.logger.warn(`pending flush: ${w.message}`, { path: w.target ?? report.dir, code: w.code });
    }
    if (report.failed.length > 0) logFailures(job.logger, report.failed);
    if (report.written.length > 0) {
      job.logger.info(`flushed ${count(report.written.length)} pending message(s)`, { path: report.dir, durable: report.durable });
    }
  } catch {
    /* the report still tells the whole story */
  }
  return report;
}
