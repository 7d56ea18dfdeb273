/**
 * A flush in progress, as the shutdown hook needs to see it. Every flush (sync or async) is a job: its
 * payloads are planned and serialised up front, each with the file name it will have, and the job stays in a
 * process-wide registry until its report is final. Whatever stops the process — a second signal, another
 * listener's `process.exit()`, a budget that ran out — can then write, synchronously, every payload of every
 * job that is not on disk yet ({@link drainJob}). A payload written twice (once by the interrupted async
 * write, once by the drain) goes to the same name with the same bytes, so it exists once.
 */
import { FsPolicyError, isErrnoException, secureMkdir, secureMkdirSync } from '@hermes/fs-policy';
import { logFailures } from './flush-log.js';
import { count, type GatewayLogger } from './log.js';
import type { PayloadKind } from './payload.js';
import { SPOOL_KIND, type SpoolLocation } from './spool.js';
import { checkPlacement, targetOf, writeItem, writeItemSync } from './job-spool.js';
import type { SpoolTarget } from './spool-target.js';

export { drainBlocking } from './drain-blocking.js';
export { targetOf } from './job-spool.js';
export { failureGroups } from './flush-log.js';

import type { DrainReason, FailedEntry, FlushReport, FlushWarning, SkippedEntry, WrittenEntry } from './job-types.js';

export type { DrainReason, FailedEntry, FlushReport, FlushWarning, SkippedEntry, WrittenEntry } from './job-types.js';

export interface Item {
  readonly kind: PayloadKind;
  readonly sessionKey: string | null;
  readonly path: string;
  readonly ts: number;
  readonly seq: number;
  readonly data: Buffer;
  state: 'planned' | 'writing' | 'written' | 'failed';
  /** The held spool the payload was written into. */
  target?: SpoolTarget | undefined;
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
  /** Every spool directory this job held (a second one only when the first was removed under it). */
  readonly targets: SpoolTarget[] = [];
  /** The held spool new payloads go to. */
  target: SpoolTarget | undefined;
  durable = true;
  drained: DrainReason | null = null;
  /** Set once, by {@link finalize}: from then on nothing about the job changes. */
  report: FlushReport | undefined;
  /** Items written or failed so far (the stop's rate estimate reads it; counting the items would be O(n)). */
  settled = 0;
  /** Bytes of every planned payload (the stop's estimate of what a batch of the rest would weigh). */
  bytes = 0;
  /** Resolves with the report when the job is finalized, by whichever path finalizes it. */
  readonly finalized: Promise<FlushReport>;
  /** @internal */
  resolveFinal: (report: FlushReport) => void = () => undefined;

  /** The final report, if a drain (which can run between any two awaits) has finalized the job. */
  final(): FlushReport | undefined {
    return this.report;
  }

  constructor(
    readonly loc: SpoolLocation,
    readonly logger: GatewayLogger,
  ) {
    this.finalized = new Promise<FlushReport>((resolve) => {
      this.resolveFinal = resolve;
    });
  }

  addItem(kind: PayloadKind, sessionKey: string | null, path: string, ts: number, seq: number, data: Buffer): void {
    this.items.push({ kind, sessionKey, path, ts, seq, data, state: 'planned' });
    this.bytes += data.length;
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

/**
 * Records a payload as on disk in `t`: as a file of its own, or as a member of the batch file `batch`. Ignored
 * once the job's report is final or the item already counts as written.
 */
export function settleWritten(job: FlushJob, item: Item, t: SpoolTarget, bytes: number, mode: number, batch?: string): void {
  if (job.report !== undefined || item.state === 'written') return;
  if (item.state !== 'failed') job.settled++;
  item.state = 'written';
  item.failed = undefined;
  item.target = t;
  t.written++;
  item.written =
    batch === undefined
      ? { path: item.path, kind: item.kind, sessionKey: item.sessionKey, bytes, mode, ts: item.ts, seq: item.seq }
      : { path: item.path, kind: item.kind, sessionKey: item.sessionKey, bytes, mode, ts: item.ts, seq: item.seq, batch };
}

/** Records a payload as NOT on disk, with the typed error. Ignored once final, or when it is written. */
export function settleFailed(job: FlushJob, item: Item, err: unknown): void {
  if (job.report !== undefined || item.state === 'written') return;
  if (item.state !== 'failed') job.settled++;
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

// ---------------------------------------------------------------------------------------------------------
// Running a job

/**
 * Runs a job with bounded concurrency: the spool is held once, each payload is written relative to that
 * descriptor and fsyncs its own file (the fsyncs overlap in the libuv pool), and the held directory — the
 * one the payloads are in — is fsynced once at the end. If a drain takes the job over meanwhile, its report
 * is the one returned.
 */
export async function runJobAsync(job: FlushJob, concurrency: number): Promise<FlushReport> {
  if (job.report !== undefined) return job.report;
  if (job.items.length === 0) return finalize(job);
  const { dir, env } = job.loc;
  try {
    await secureMkdir(dir, SPOOL_KIND, { env });
    const done = job.final();
    if (done !== undefined) return done;
    targetOf(job);
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
      await writeItem(job, item);
    }
  };
  const workers = Math.max(1, Math.min(concurrency, job.items.length));
  await Promise.all(Array.from({ length: workers }, () => worker()));
  const drained = job.final();
  if (drained !== undefined) return drained;
  // A stop took the job over (its workers stopped taking payloads): the stop writes the rest and finalizes.
  if (job.drained !== null) return job.finalized;
  for (const t of job.targets) {
    if (t.written === 0) continue;
    let failed: { err: unknown } | undefined;
    try {
      await t.fsync();
    } catch (err) {
      failed = { err };
    }
    if (job.final() !== undefined) break;
    // Where the directory is after its fsync decides what the fsync was worth (see checkPlacement).
    if (checkPlacement(job, t) && failed !== undefined) dirFailed(job, failed.err);
  }
  return job.final() ?? finalize(job);
}

export function dirFailed(job: FlushJob, err: unknown): void {
  job.durable = false;
  job.dirFailure = failure(policyError(err, job.loc.dir), job.loc.dir, null, null);
}

/**
 * Writes, synchronously and one after the other, every payload of the job that is not on disk yet — the
 * planned ones and those whose async write is still under way (same name, same bytes) — into the job's held
 * spool, fsyncs every held directory that received payloads, and finalizes the job. With a `deadline` (epoch
 * ms), payloads whose turn comes after it fail with `ETIMEDOUT` instead (a write already started is never
 * cut short). `reason` null: an ordinary synchronous flush.
 */
export function drainJob(job: FlushJob, reason: DrainReason | null, deadline?: number): FlushReport {
  if (job.report !== undefined) return job.report;
  if (reason !== null) job.drained = reason;
  const { dir, env } = job.loc;
  const todo = job.items.filter((i) => i.state === 'planned' || i.state === 'writing');
  if (todo.length > 0) {
    let ready = true;
    try {
      if (job.target === undefined) {
        secureMkdirSync(dir, SPOOL_KIND, { env });
        targetOf(job);
      }
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
        writeItemSync(job, item);
      }
    }
  }
  // The async side may have set a directory failure that this fsync answers anew.
  job.durable = true;
  job.dirFailure = undefined;
  for (const t of job.targets) {
    if (t.written === 0) continue;
    let failed: { err: unknown } | undefined;
    try {
      t.fsyncSync();
    } catch (err) {
      failed = { err };
    }
    if (checkPlacement(job, t) && failed !== undefined) dirFailed(job, failed.err);
  }
  return finalize(job);
}

/** Drains every active job (see {@link drainJob}); returns the jobs it finalized. */
export function drainAll(reason: DrainReason, deadline?: number): FlushJob[] {
  const jobs = activeJobs();
  for (const job of jobs) drainJob(job, reason, deadline);
  return jobs;
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
  job.resolveFinal(report);
  active.delete(job);
  for (const t of job.targets) t.close();
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
