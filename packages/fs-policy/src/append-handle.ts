/** The append handle: one descriptor for many records, group commit, and a close that settles everything. */
import { FsPolicyError, toPolicyError } from './errors.js';
import { runAsync, runSync } from './internal/io.js';
import { op } from './internal/steps.js';
import type { AppendOpenInfo, AppendOptions, Opened } from './append-open.js';
import { type RecordTarget, writeRecordPlan } from './append-record.js';
import { bytesOf, serializeJsonText } from './atomic.js';
import { BatchQueue, Pending, promiseOf } from './append-batch.js';

/**
 * An open append-only file for hot paths: the same guarantees as privateAppend without an open per record.
 *
 * - Async appends issued together (in the same turn of the event loop, or while a write is in flight) are
 *   group-committed: written in call order by one write(2) — still whole lines, never interleaved with other
 *   writers — and each promise settles only after its own record is on the file (fsynced with `fsync`).
 * - Order: records keep the order in which `append*` was called, sync and async mixed, with one exception: a
 *   batch already handed to the kernel when a sync call (or `closeSync`) comes can land after what that call
 *   writes. Everything still queued is written first, synchronously.
 * - Closing: once `close()` or `closeSync()` has begun, every `append*` and `sync*` call is refused at once
 *   with ECLOSED (a promise rejects, a sync call throws). What was issued before is written (or rejected with
 *   its own error) before `close()` resolves: every promise the handle returned settles.
 * - `closeSync()` writes the queue synchronously, then closes — the descriptor is closed only after any batch
 *   in flight has finished, so no record can reach a reused descriptor.
 */
export interface AppendHandle extends AppendOpenInfo {
  append(record: string | Uint8Array): Promise<number>;
  appendSync(record: string | Uint8Array): number;
  appendJson(value: unknown): Promise<number>;
  appendJsonSync(value: unknown): number;
  /** Several records in one write(2) (each must be a whole line); resolves with the byte count. */
  appendMany(records: readonly (string | Uint8Array)[]): Promise<number>;
  appendManySync(records: readonly (string | Uint8Array)[]): number;
  /** fsync what was appended so far (after pending async appends). */
  sync(): Promise<void>;
  syncSync(): void;
  /** Refuses new appends from now on, waits for those already issued, then closes. */
  close(): Promise<void>;
  closeSync(): void;
  /** True from the moment a close began. */
  readonly closed: boolean;
}

function joinRecords(records: readonly (string | Uint8Array)[], file: string): Uint8Array {
  return Buffer.concat(records.map((r) => bytesOf(r, file)));
}

function closedError(file: string): FsPolicyError {
  return new FsPolicyError({ code: 'ECLOSED', step: 'write', path: file, message: `append handle for ${file} is closed (or closing)` });
}

/** @internal Wraps an opened target in a handle. */
export function makeHandle(opened: Opened, options: AppendOptions): AppendHandle {
  const fd = opened.fd;
  const file = opened.path;
  const target: RecordTarget = {
    fd,
    file,
    sync: options.fsync === true,
    watch: opened.watch,
    tail: { readable: opened.readable, cleanEnd: undefined },
  };
  /** Set when a close begins: from then on nothing new is accepted. */
  let closed = false;
  let fdClosed = false;
  let closeError: FsPolicyError | undefined;
  let closing: Promise<void> | undefined;
  const queue = new BatchQueue();
  let draining: Promise<void> | undefined;
  let inFlight = false;
  const ensureOpen = (): void => {
    if (closed) throw closedError(file);
  };
  /** Writes everything still queued, synchronously, in order (sync calls and closeSync come after it). */
  const flushQueueSync = (): void => {
    while (queue.pending) {
      // A batch of the async drain may still be in the kernel: its buffer is not reused then.
      const { records, data } = queue.take(!inFlight);
      try {
        runSync(writeRecordPlan(target, data));
        for (const b of records) b.resolve(b.bytes);
      } catch (err) {
        for (const b of records) b.reject(err);
      }
    }
  };
  const closeFdSync = (): void => {
    if (fdClosed) return;
    fdClosed = true;
    // Unreachable while the close protocol holds (nothing is queued after a close began); never leave a promise pending.
    for (const b of queue.takeAll()) b.reject(closedError(file));
    try {
      runSync(op('close', file, 'close', fd));
    } catch (err) {
      closeError = toPolicyError(err, 'close', file, `close ${file}`);
    }
  };
  const drain = async (): Promise<void> => {
    await Promise.resolve(); // let appends issued in this turn join the first batch
    while (queue.pending && !fdClosed) {
      const { records, data } = queue.take(true);
      inFlight = true;
      try {
        await runAsync(writeRecordPlan(target, data));
        for (const b of records) b.resolve(b.bytes);
      } catch (err) {
        for (const b of records) b.reject(err);
      } finally {
        inFlight = false;
      }
    }
    draining = undefined;
    if (closed) closeFdSync(); // a close that came while a batch was in flight
  };
  const enqueue = (rec: string | Uint8Array): Promise<number> => {
    ensureOpen();
    const bytes = typeof rec === 'string' ? Buffer.byteLength(rec, 'utf8') : rec.length;
    if (bytes === 0) return Promise.resolve(0);
    const record = new Pending(rec, bytes);
    const settled = promiseOf(record);
    queue.push(record);
    draining ??= drain();
    return settled;
  };
  const writeNowSync = (data: Uint8Array): number => {
    ensureOpen();
    flushQueueSync();
    return runSync(writeRecordPlan(target, data));
  };
  /** A refusal (closed handle, data that cannot be written) as a rejected promise, never a throw. */
  const rejected = (err: unknown): Promise<never> => Promise.reject(err instanceof Error ? err : new Error(String(err)));
  const later = <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return fn();
    } catch (err) {
      return rejected(err);
    }
  };
  return {
    path: opened.path,
    created: opened.created,
    mode: opened.mode,
    createdDirs: opened.createdDirs,
    warnings: opened.warnings,
    get closed() {
      return closed;
    },
    append(record) {
      try {
        return enqueue(typeof record === 'string' ? record : bytesOf(record, file));
      } catch (err) {
        return rejected(err);
      }
    },
    appendSync(record) {
      return writeNowSync(bytesOf(record, file));
    },
    appendJson(value) {
      try {
        return enqueue(serializeJsonText(value, file, { indent: 0 }));
      } catch (err) {
        return rejected(err);
      }
    },
    appendJsonSync(value) {
      return writeNowSync(Buffer.from(serializeJsonText(value, file, { indent: 0 }), 'utf8'));
    },
    appendMany(records) {
      try {
        return enqueue(joinRecords(records, file));
      } catch (err) {
        return rejected(err);
      }
    },
    appendManySync(records) {
      return writeNowSync(joinRecords(records, file));
    },
    sync() {
      return later(async () => {
        ensureOpen();
        await draining;
        await runAsync(op('fsync', file, 'fsync', fd));
      });
    },
    syncSync() {
      ensureOpen();
      flushQueueSync();
      runSync(op('fsync', file, 'fsync', fd));
    },
    close() {
      if (closing !== undefined) return closing; // a second close() settles with the first
      if (closed) return Promise.resolve(); // closeSync() came first
      closed = true; // from here on, every append is refused at once
      closing = (async () => {
        while (draining !== undefined) await draining;
        closeFdSync(); // no-op when closeSync (or the drain loop) closed it already
        if (closeError !== undefined) throw closeError;
      })();
      return closing;
    },
    closeSync() {
      if (closed && fdClosed) return;
      closed = true;
      flushQueueSync();
      if (!inFlight) closeFdSync(); // else the drain loop closes it once the batch in flight settles
      if (closeError !== undefined) throw closeError;
    },
  };
}
