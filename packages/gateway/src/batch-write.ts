/**
 * The rest of a stop: what the per-file writes did not settle in time is written synchronously — one file after
 * the other while the stop's clock says that fits, then every remaining payload of a spool as **one batch file**
 * (batch.ts): fs-policy's atomic write relative to the job's held spool, then the held directory's fsync. Its
 * members count as written only after both succeeded. Afterwards the temp files this process left for payloads
 * that are now on disk (async writes a stop overtook) are removed through the held spool, so a complete stop
 * leaves final names and batch files only.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FsPolicyError, parseTempName, secureMkdirSync, selfIdentity } from '@hermes/fs-policy';
import { batchFileName, serializeBatch } from './batch.js';
import { targetOf, writeItemSync } from './job-spool.js';
import type { DrainReason, FailedEntry } from './job-types.js';
import { drainJob, type FlushJob, type Item, policyError, settleFailed, settleWritten } from './jobs.js';
import { SPOOL_KIND } from './spool.js';
import { movedOutError, notLandedError, type SpoolTarget } from './spool-target.js';
import type { StopClock } from './stop-clock.js';

/** A batch file never holds more than this many bytes of payloads (a larger rest is split into several). */
const MAX_BATCH_BYTES = 64 * 1024 * 1024;
/** A synchronous payload file's cost assumed before one has been measured (ms). */
const DEFAULT_PER_FILE_MS = 2;

/** What the rest of a stop became: the figures the summary line reports. */
export interface RemainderOutcome {
  /** Payloads that were not settled when the stop took over. */
  items: number;
  /** Of those, on disk: as files of their own, or as batch members. */
  written: number;
  inBatch: number;
  /** The batch files written (names in the spool). */
  batches: string[];
  /** Of those, not on disk, each with its error. */
  failed: FailedEntry[];
}

export function emptyRemainder(): RemainderOutcome {
  return { items: 0, written: 0, inBatch: 0, batches: [], failed: [] };
}

interface Entry {
  readonly job: FlushJob;
  readonly item: Item;
}

export interface RemainderOptions {
  /** The stop's clock; without one every payload is written as a file of its own. */
  readonly clock?: StopClock | undefined;
  /** The measured cost of one synchronous payload file, if known (ms). */
  readonly perFileMs?: number | undefined;
  /** Writes another thread started and may not have finished: their temps are looked for afterwards. */
  readonly overtaken?: boolean | undefined;
}

/**
 * Writes every payload of `jobs` that is not on disk yet, fsyncs each held spool, removes this process's
 * superseded temps and finalizes every job (through {@link drainJob}); adds the figures to `out`. Never throws:
 * a payload that is not on disk is a failed entry with its real error. With a clock, per-file writes stop as
 * soon as the rest would not fit before its deadline, and the rest of each spool becomes one batch file.
 */
export function writeRemainderSync(jobs: readonly FlushJob[], reason: DrainReason, out: RemainderOutcome, options: RemainderOptions = {}): void {
  const open = jobs.filter((j) => j.report === undefined);
  const todo: Entry[] = [];
  let overtaken = options.overtaken === true;
  for (const job of open) {
    job.drained = reason;
    const items = job.items.filter((i) => i.state === 'planned' || i.state === 'writing');
    if (items.length === 0) continue;
    try {
      if (job.target === undefined) secureMkdirSync(job.loc.dir, SPOOL_KIND, { env: job.loc.env });
      targetOf(job);
    } catch (err) {
      for (const item of items) {
        item.state = 'planned';
        settleFailed(job, item, err);
      }
      out.items += items.length;
      for (const item of items) if (item.failed !== undefined) out.failed.push(item.failed);
      continue;
    }
    for (const item of items) {
      // An async write under way lands (or leaves its temp) whatever happens here: same name, same bytes.
      if (item.state === 'writing') overtaken = true;
      item.state = 'planned';
      todo.push({ job, item });
    }
  }
  out.items += todo.length;

  let next = 0;
  let remainingBytes = todo.reduce((s, e) => s + e.item.data.length, 0);
  let perFileMs = options.perFileMs ?? DEFAULT_PER_FILE_MS;
  let timed = 0;
  for (; next < todo.length; next++) {
    const left = todo.length - next;
    const now = Date.now();
    if (options.clock !== undefined && left > 1 && !options.clock.fitsPerFile(now, left, remainingBytes, perFileMs)) break;
    const e = todo[next];
    if (e === undefined) break;
    writeItemSync(e.job, e.item);
    remainingBytes -= e.item.data.length;
    const took = Date.now() - now;
    perFileMs = timed === 0 ? took : (perFileMs * timed + took) / (timed + 1);
    timed++;
  }

  // The rest, grouped by the directory it goes to: one batch per spool (split only past MAX_BATCH_BYTES).
  const groups = new Map<string, { target: SpoolTarget; entries: Entry[] }>();
  for (const e of todo.slice(next)) {
    const t = e.job.target;
    if (t === undefined) {
      writeItemSync(e.job, e.item); // the spool was lost meanwhile: the per-file path reports why
      continue;
    }
    const key = `${String(t.dev)}:${String(t.ino)}`;
    const g = groups.get(key);
    if (g === undefined) groups.set(key, { target: t, entries: [e] });
    else g.entries.push(e);
  }
  for (const g of groups.values()) {
    if (g.entries.length === 1 && g.entries[0] !== undefined) {
      writeItemSync(g.entries[0].job, g.entries[0].item);
      continue;
    }
    let chunk: Entry[] = [];
    let bytes = 0;
    for (const e of g.entries) {
      if (chunk.length > 0 && bytes + e.item.data.length > MAX_BATCH_BYTES) {
        writeBatch(g.target, chunk, out);
        chunk = [];
        bytes = 0;
      }
      chunk.push(e);
      bytes += e.item.data.length;
    }
    if (chunk.length > 0) writeBatch(g.target, chunk, out);
  }

  if (overtaken) for (const job of open) sweepOwnTemps(job);
  for (const job of open) drainJob(job, reason);
  for (const { item } of todo) {
    if (item.state === 'written') {
      out.written++;
      if (item.written?.batch !== undefined) out.inBatch++;
    } else if (item.failed !== undefined) out.failed.push(item.failed);
  }
}

/** `err` as the typed failure of every member of a batch that is not on disk. */
function failAll(entries: readonly Entry[], err: unknown): void {
  for (const { job, item } of entries) {
    item.state = 'planned';
    settleFailed(job, item, err);
  }
}

/**
 * Writes `entries` as one batch file into `t`: atomic write (temp, fsync, rename) relative to the held spool,
 * then the held directory's fsync; only then are the members settled written (each with `batch: <name>`). Any
 * failure settles them failed with the real error, and a batch that is in place but not durable is removed
 * again, so a payload reported failed is not also delivered.
 */
function writeBatch(t: SpoolTarget, entries: readonly Entry[], out: RemainderOutcome): void {
  const first = entries[0];
  if (first === undefined) return;
  const env = first.job.loc.env;
  const name = batchFileName();
  const before = t.placement();
  if (before.where === 'outside') {
    failAll(entries, movedOutError(t, before.now, name));
    return;
  }
  let data: Buffer;
  try {
    data = Buffer.from(serializeBatch(entries.map(({ item }) => ({ name: path.basename(item.path), text: item.data.toString('utf8') }))), 'utf8');
  } catch (err) {
    failAll(entries, new FsPolicyError({ code: 'ESERIALIZE', step: 'serialize', path: t.held.display(name), message: `cannot serialise batch file ${t.held.display(name)}: ${err instanceof Error ? err.message : String(err)}`, cause: err }));
    return;
  }
  let mode: number;
  for (;;) {
    try {
      mode = t.writeSync(name, data, env, false);
      break;
    } catch (err) {
      if (t.byPathFor(err)) continue;
      failAll(entries, t.logical(policyError(err, t.held.display(name))));
      return;
    }
  }
  if (!t.landed(name, data.length)) {
    failAll(entries, notLandedError(t, name));
    return;
  }
  let fsyncError: FsPolicyError | undefined;
  try {
    t.fsyncSync();
  } catch (err) {
    fsyncError = t.error(err, 'fsync-dir', `fsync of directory ${t.held.path}`);
  }
  const place = t.placement();
  const removeAgain = (): string => {
    try {
      fs.unlinkSync(t.at(name));
      return 'it was removed again';
    } catch (err) {
      return `removing it again failed (${(err as { code?: string }).code ?? String(err)}): recovery may still find it`;
    }
  };
  if (place.where === 'outside') {
    removeAgain();
    failAll(entries, movedOutError(t, place.now, name));
    return;
  }
  if (fsyncError !== undefined) {
    const removed = removeAgain();
    failAll(
      entries,
      new FsPolicyError({
        code: fsyncError.code,
        step: 'fsync-dir',
        path: t.held.path,
        message: `batch file ${t.held.display(name)} was written, but the directory fsync failed (${fsyncError.detail}); ${removed}, so its ${String(entries.length)} payload(s) are not on disk`,
        hint: fsyncError.hint,
        cause: fsyncError,
      }),
    );
    return;
  }
  for (const { job, item } of entries) settleWritten(job, item, t, item.data.length, mode, name);
  out.batches.push(name);
}

/**
 * Removes, through the job's held spool, the temp files of **this process** (fs-policy's `parseTempName`: its
 * pid and pid namespace) whose payload is on disk — under its final name or in a batch file: copies an
 * overtaken async write (this thread's or the exit worker's) left behind. Nothing else is touched. A temp that
 * cannot be removed is a warning of the job (`ETEMP_LEFT`), logged with its path and errno.
 */
export function sweepOwnTemps(job: FlushJob): void {
  const onDisk = new Map<string, SpoolTarget>();
  for (const item of job.items) if (item.state === 'written' && item.target !== undefined) onDisk.set(path.basename(item.path), item.target);
  if (onDisk.size === 0) return;
  const ns = selfIdentity().pidns; // the namespace fs-policy's temp names carry
  for (const t of new Set(onDisk.values())) {
    let names: string[];
    try {
      names = fs.readdirSync(t.held.self);
    } catch (err) {
      job.warnings.push({
        code: 'ETEMP_LEFT',
        message: `could not list ${t.held.path} to remove this process's superseded temp files (${(err as { code?: string }).code ?? String(err)}); the next recovery's salvage removes them as redundant copies`,
        target: null,
        sessionKey: null,
      });
      continue;
    }
    for (const n of names) {
      const p = parseTempName(n);
      if (p?.type !== 'tmp' || p.pid !== process.pid) continue;
      if (p.pidns !== undefined && ns !== null && p.pidns !== ns) continue;
      if (onDisk.get(p.target) !== t) continue;
      try {
        fs.unlinkSync(t.at(n));
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code === 'ENOENT') continue; // renamed or removed by its writer meanwhile
        job.warnings.push({
          code: 'ETEMP_LEFT',
          message: `${t.held.display(n)} (a superseded copy of ${p.target}, which is on disk) could not be removed: ${code ?? String(err)}; the next recovery's salvage removes it`,
          target: t.held.display(n),
          sessionKey: null,
        });
      }
    }
  }
}
