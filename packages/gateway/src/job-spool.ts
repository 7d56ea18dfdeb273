/**
 * Writing a flush job's payloads into its held spool (see spool-target.ts): the spool is held once per job,
 * every payload is written relative to that descriptor, a directory moved out of the home takes no payload,
 * and a spool removed under the job is created again and held anew (once per payload).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { secureMkdir, secureMkdirSync } from '@hermes/fs-policy';
import { dirFailed, failure, type FlushJob, type Item, policyError, settleFailed, settleWritten } from './jobs.js';
import { SPOOL_KIND } from './spool.js';
import { movedOutError, notLandedError, SpoolTarget } from './spool-target.js';

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * The job's current held spool, opened on first use (the caller created the directory). Throws the typed
 * error when it cannot be held (a link in its place, EACCES, …).
 */
export function targetOf(job: FlushJob): SpoolTarget {
  job.target ??= openTarget(job);
  return job.target;
}

function openTarget(job: FlushJob): SpoolTarget {
  const t = SpoolTarget.open(job.loc);
  job.targets.push(t);
  return t;
}

/**
 * A write into the held spool failed `ENOENT`: the directory was removed under the job (only an empty one can
 * be). The spool is created again and held anew, once per payload; true when the payload may be retried.
 */
function reopenedSync(job: FlushJob, t: SpoolTarget, err: unknown): boolean {
  if (codeOf(err) !== 'ENOENT' || t.placement().where !== 'outside') return false;
  if (job.target !== t) return job.target !== undefined;
  job.target = undefined;
  try {
    secureMkdirSync(job.loc.dir, SPOOL_KIND, { env: job.loc.env });
    targetOf(job);
    job.logger.warn(`pending flush: ${job.loc.dir} was removed during the flush; it was created again and the payload written there`, { path: job.loc.dir });
    return true;
  } catch {
    return false; // the original ENOENT is reported
  }
}

async function reopened(job: FlushJob, t: SpoolTarget, err: unknown): Promise<boolean> {
  if (codeOf(err) !== 'ENOENT' || t.placement().where !== 'outside') return false;
  if (job.target !== t) return job.target !== undefined;
  job.target = undefined;
  try {
    await secureMkdir(job.loc.dir, SPOOL_KIND, { env: job.loc.env });
    targetOf(job);
    job.logger.warn(`pending flush: ${job.loc.dir} was removed during the flush; it was created again and the payload written there`, { path: job.loc.dir });
    return true;
  } catch {
    return false;
  }
}

/** Whether the payload may be written into `t` now: not into a directory moved out of the home. */
function refusedBefore(job: FlushJob, item: Item, t: SpoolTarget): boolean {
  const place = t.placement();
  if (place.where !== 'outside') return false;
  settleFailed(job, item, movedOutError(t, place.now, path.basename(item.path)));
  return true;
}

/** After a write: kept when the directory is still in the home, else removed again and failed. */
function settleAfter(job: FlushJob, item: Item, t: SpoolTarget, bytes: number, mode: number): void {
  const name = path.basename(item.path);
  if (!t.landed(name, bytes)) {
    settleFailed(job, item, notLandedError(t, name));
    return;
  }
  const place = t.placement();
  if (place.where === 'outside') {
    try {
      fs.unlinkSync(t.at(name));
    } catch {
      // gone already, or the directory is not ours to change any more; the failure says where it went
    }
    settleFailed(job, item, movedOutError(t, place.now, name));
    return;
  }
  settleWritten(job, item, t, bytes, mode);
}

export function writeItemSync(job: FlushJob, item: Item): void {
  const name = path.basename(item.path);
  for (let attempt = 0; ; attempt++) {
    let t: SpoolTarget;
    try {
      t = targetOf(job);
    } catch (err) {
      settleFailed(job, item, err);
      return;
    }
    if (refusedBefore(job, item, t)) return;
    try {
      const mode = t.writeSync(name, item.data, job.loc.env);
      settleAfter(job, item, t, item.data.length, mode);
      return;
    } catch (err) {
      if (t.byPathFor(err) || (attempt === 0 && reopenedSync(job, t, err))) continue;
      settleFailed(job, item, t.logical(policyError(err, item.path)));
      return;
    }
  }
}

export async function writeItem(job: FlushJob, item: Item): Promise<void> {
  const name = path.basename(item.path);
  for (let attempt = 0; ; attempt++) {
    let t: SpoolTarget;
    try {
      t = targetOf(job);
    } catch (err) {
      settleFailed(job, item, err);
      return;
    }
    if (refusedBefore(job, item, t)) return;
    try {
      const mode = await t.write(name, item.data, job.loc.env);
      settleAfter(job, item, t, item.data.length, mode);
      return;
    } catch (err) {
      if (t.byPathFor(err) || (attempt === 0 && (await reopened(job, t, err)))) continue;
      settleFailed(job, item, t.logical(policyError(err, item.path)));
      return;
    }
  }
}

/**
 * After the fsync of a held spool that received payloads, where that directory is now: one moved out of the
 * home takes its payloads with it (they are removed again through the descriptor and failed, and the job is
 * not durable); one moved inside the home is reported (ESPOOL_MOVED: its payloads are there, fsynced).
 * Returns false when it was moved out.
 */
export function checkPlacement(job: FlushJob, t: SpoolTarget): boolean {
  const place = t.placement();
  if (place.where === 'in-place') return true;
  if (place.where === 'moved') {
    if (t.reported) return true;
    t.reported = true;
    job.warnings.push({
      code: 'ESPOOL_MOVED',
      message: `${job.loc.dir} was renamed to ${place.now} during the flush; its ${String(t.written)} payload(s) are there (fsynced), not under ${job.loc.dir}`,
      target: null,
      sessionKey: null,
    });
    return true;
  }
  for (const item of job.items) {
    if (item.target !== t || item.state !== 'written') continue;
    // A member of a batch file has no file of its own: the batch file goes (once; a second unlink finds nothing).
    const name = item.written?.batch ?? path.basename(item.path);
    try {
      fs.unlinkSync(t.at(name));
    } catch {
      // see settleAfter
    }
    item.state = 'failed';
    item.written = undefined;
    item.failed = failure(movedOutError(t, place.now, path.basename(item.path)), item.path, item.kind, item.sessionKey);
  }
  t.written = 0;
  dirFailed(job, movedOutError(t, place.now, ''));
  return false;
}

