import * as path from 'node:path';
import { currentUid, errnoCode, FsPolicyError, toPolicyError } from './errors.js';
import { type HermesEnvironment, loadEnvironment } from './env.js';
import { call, O, type Plan, runAsync, runSync } from './internal/io.js';
import { selfFd } from './internal/anchor.js';
import { movedOut, movedOutError, reachDirPlan, watchedRoot } from './internal/reach.js';
import { at, checkName, checkRawPath, type DirRef, fsyncDir, Held, statOf } from './internal/resolve.js';
import { bestEffort, isInside, op } from './internal/steps.js';
import { checkRegular, verifyForAppend } from './internal/verify.js';
import { bytesOf, serializeJsonText } from './atomic.js';
import { fileModeFor, getKind, type KindRef } from './registry.js';

export interface AppendOptions {
  /** The artifact kind: decides the directory's mode and the mode of a newly created file. */
  kind: KindRef;
  env?: HermesEnvironment;
  /** fsync after each record (default false). */
  fsync?: boolean;
  /** Links in the directory chain below this root must stay inside it (default: the home). */
  root?: string;
  /** Create missing parent directories with the kind's mode (default true). */
  createParents?: boolean;
}

export interface AppendOpenInfo {
  readonly path: string;
  /** True when this call created the file (it then has the kind's mode exactly). */
  readonly created: boolean;
  /** The file's permission bits; an existing file keeps the mode its owner chose. */
  readonly mode: number;
  readonly createdDirs: readonly string[];
  readonly warnings: readonly string[];
}

export interface AppendResult extends AppendOpenInfo {
  readonly bytes: number;
}

interface Opened extends AppendOpenInfo {
  fd: number;
  /**
   * The home's real path when others may rename entries in it (managed): after each write the file's own
   * descriptor must still name a path inside it, or the write is reported as having left the home.
   */
  watch: string | undefined;
}

/** Flags for an existing file: O_NONBLOCK so a planted FIFO fails (ENXIO) or is refused after fstat, never hangs. */
const EXISTING_FLAGS = O.WRONLY | O.APPEND | O.NOFOLLOW | O.NONBLOCK;

function* openAppendPlan(file: string, options: AppendOptions, env: HermesEnvironment): Plan<Opened> {
  const kind = getKind(options.kind);
  checkRawPath(file);
  const target = path.resolve(file);
  const mode = fileModeFor(kind, env);
  const held = new Held();
  try {
    // The directory chain is reached through descriptors on every open: a link that leads out of the root is
    // refused even when the file already exists there.
    const reached = yield* reachDirPlan(
      path.dirname(target),
      { env, root: options.root, createFor: options.createParents === false ? undefined : kind },
      held,
    );
    const warnings = [...reached.warnings];
    const dir = reached.dir;
    const name = path.basename(target);
    checkName(name, target);
    let created = false;
    let fd = yield* openExisting(dir, name, target);
    if (fd === undefined) {
      try {
        fd = yield* call('open', target, 'open', at(dir, name), O.WRONLY | O.APPEND | O.CREAT | O.EXCL | O.NOFOLLOW | O.NONBLOCK, mode);
        created = true;
      } catch (err) {
        if (errnoCode(err) !== 'EEXIST') throw toPolicyError(err, 'open', target, `open ${target} for append`);
        fd = yield* openExisting(dir, name, target); // another writer created it first (and may have removed it again)
      }
    }
    if (fd === undefined) {
      throw new FsPolicyError({ code: 'ENOENT', step: 'open', path: target, message: `${target} vanished while opening it for append` });
    }
    try {
      const st = yield* op('open', target, 'fstat', fd);
      if (created) {
        checkRegular(target, st, 'open');
        // open(2) masks the mode with the umask; make it exact. Only ever on create: never re-tighten.
        yield* op('fchmod', target, 'fchmod', fd, mode);
        if (kind.ownership && !env.managed.managed && (env.uid !== undefined || env.gid !== undefined)) {
          yield* bestEffort(warnings, 'fchown', target, 'fchown', fd, env.uid ?? -1, env.gid ?? -1);
        }
        // With `fsync`, records are promised to survive a power loss; the file's name must too.
        if (options.fsync === true) yield* fsyncDir(dir, 'open');
      } else {
        // Checked on the descriptor: what was opened is what is written to.
        verifyForAppend(target, st, kind, env, currentUid() === 0 ? (yield* statOf(reached.root, held)).uid : undefined);
      }
      const out = yield* movedOut(reached, dir, env, held);
      if (out !== undefined) {
        if (created) yield* bestEffort(warnings, 'unlink', target, 'unlink', at(dir, name));
        throw movedOutError(dir, out, 'open');
      }
      const watch = yield* watchedRoot(reached, env, held);
      return { fd, path: target, created, mode: created ? mode : st.mode & 0o7777, createdDirs: reached.created, warnings, watch };
    } catch (err) {
      yield* bestEffort(warnings, 'close', target, 'close', fd);
      throw err;
    }
  } finally {
    yield* held.release();
  }
}

/** Opens an existing file for append; undefined when it does not exist. */
function* openExisting(dir: DirRef, name: string, target: string): Plan<number | undefined> {
  try {
    return yield* call('open', target, 'open', at(dir, name), EXISTING_FLAGS, 0);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') {
      throw new FsPolicyError({
        code: 'ESYMLINK',
        step: 'open',
        path: target,
        message: `refusing to append to ${target}: it is a symbolic link`,
        cause: err,
      });
    }
    if (code === 'ENXIO' || code === 'ENODEV' || code === 'EOPNOTSUPP') {
      throw new FsPolicyError({
        code: 'ENOTREGULAR',
        step: 'open',
        path: target,
        message: `refusing to append to ${target}: not a regular file (a FIFO, socket or device)`,
        cause: err,
      });
    }
    if (code === 'EISDIR') {
      throw new FsPolicyError({ code: 'EISDIR', step: 'open', path: target, message: `refusing to append to ${target}: it is a directory`, cause: err });
    }
    throw toPolicyError(err, 'open', target, `open ${target} for append`);
  }
}

/** What a torn record left behind, for the next record of the same handle. */
interface TornState {
  /** True when the file may end in the middle of a record of ours (a newline must come first). */
  unterminated: boolean;
}

/**
 * One write(2) per record: with O_APPEND the kernel places it whole at the end, so concurrent writers never
 * interleave inside a line. A short write (the device refused the rest; libuv drops the errno after partial
 * progress) never truncates the file — another writer's line may already follow our fragment. Instead the
 * fragment is terminated with a newline, so every other line still parses, and the failure is reported.
 */
function* writeRecordPlan(fd: number, file: string, record: Uint8Array, sync: boolean, torn?: TornState, watch?: string): Plan<number> {
  if (record.length === 0) return 0;
  let data = record;
  if (torn?.unterminated === true) data = Buffer.concat([NEWLINE, record]);
  const n = yield* op('write', file, 'write', fd, data, 0, data.length);
  if (n === data.length) {
    if (torn !== undefined) torn.unterminated = false;
    if (sync) yield* op('fsync', file, 'fsync', fd);
    if (watch !== undefined) yield* checkStillInside(fd, file, watch);
    return record.length;
  }
  if (n === 0) {
    throw new FsPolicyError({
      code: 'ESHORT_WRITE',
      step: 'short-write',
      path: file,
      message: `append to ${file} failed: the device accepted none of the ${String(record.length)} bytes; nothing was written`,
    });
  }
  // Our partial record is in the file. Terminate it.
  let cause: FsPolicyError | undefined;
  let terminated = false;
  try {
    terminated = (yield* call('write', file, 'write', fd, NEWLINE, 0, 1)) === 1;
  } catch (err) {
    cause = toPolicyError(err, 'write', file, `append to ${file}`);
  }
  if (torn !== undefined) torn.unterminated = !terminated;
  throw new FsPolicyError({
    code: cause?.code ?? 'ETORN_RECORD',
    step: cause === undefined ? 'short-write' : 'write',
    path: file,
    message:
      `append to ${file} failed after ${String(n)} of ${String(data.length)} bytes (${cause?.code ?? 'short write'}); ` +
      (terminated
        ? 'the partial record was terminated with a newline, so every other line still parses'
        : 'the file ends with the partial record; the next record of this handle starts on a new line'),
    ...(cause?.errno === undefined ? {} : { errno: cause.errno }),
    cause,
  });
}

const NEWLINE = Buffer.from('\n');

/** The file's own descriptor must still name a path inside the home (it cannot be reached by name any more otherwise). */
function* checkStillInside(fd: number, file: string, watch: string): Plan<void> {
  const now = yield* op('write', file, 'readlink', selfFd(fd, file));
  if (isInside(now, watch)) return;
  throw new FsPolicyError({
    code: 'ERACE',
    step: 'write',
    path: file,
    message: `${file} was moved out of the home (it is now ${now}) by another process; the record was appended there, not in the home`,
  });
}

function* appendOncePlan(file: string, record: Uint8Array, options: AppendOptions, env: HermesEnvironment): Plan<AppendResult> {
  const opened = yield* openAppendPlan(file, options, env);
  try {
    const bytes = yield* writeRecordPlan(opened.fd, opened.path, record, options.fsync === true, undefined, opened.watch);
    return {
      path: opened.path,
      created: opened.created,
      mode: opened.mode,
      createdDirs: opened.createdDirs,
      warnings: opened.warnings,
      bytes,
    };
  } finally {
    yield* bestEffort([], 'close', opened.path, 'close', opened.fd);
  }
}

/** One JSON value as one line (serialised before any I/O). */
export function jsonLine(value: unknown, file: string): Buffer {
  return Buffer.from(jsonText(value, file), 'utf8');
}

/** One JSON value as one line of text, or ESERIALIZE. */
function jsonText(value: unknown, file: string): string {
  return serializeJsonText(value, file, { indent: 0 });
}

/**
 * Appends one record to `file` as a single write: the file is created owner-only (the kind's mode,
 * exactly) if missing; an existing file must be a regular file of ours with one link and no group/other
 * write (checked on the descriptor; otherwise a typed error) and keeps the mode its owner chose; a symlink or
 * a FIFO is refused without blocking; a short write is an error, never a silently torn line.
 */
export async function privateAppend(file: string, record: string | Uint8Array, options: AppendOptions): Promise<AppendResult> {
  const env = options.env ?? loadEnvironment();
  return runAsync(appendOncePlan(file, bytesOf(record, file), options, env));
}

/** Synchronous form of {@link privateAppend}. */
export function privateAppendSync(file: string, record: string | Uint8Array, options: AppendOptions): AppendResult {
  const env = options.env ?? loadEnvironment();
  return runSync(appendOncePlan(file, bytesOf(record, file), options, env));
}

/** Appends `value` as one JSON line (serialised first: a value that cannot be serialised writes nothing). */
export async function appendJsonLine(file: string, value: unknown, options: AppendOptions): Promise<AppendResult> {
  return privateAppend(file, jsonLine(value, file), options);
}

/** Synchronous form of {@link appendJsonLine}. */
export function appendJsonLineSync(file: string, value: unknown, options: AppendOptions): AppendResult {
  return privateAppendSync(file, jsonLine(value, file), options);
}

/**
 * An open append-only file for hot paths: the same guarantees as privateAppend without an open per record.
 *
 * - Async appends issued together (in the same turn of the event loop, or while a write is in flight) are
 *   group-committed: written in call order by one write(2) — still whole lines, never interleaved with other
 *   writers — and each promise settles only after its own record is on the file (fsynced with `fsync`).
 * - Order: records keep the order in which `append*` was called, sync and async mixed, with one exception: a
 *   batch already handed to the kernel when a sync call (or `closeSync`) comes can land after what that call
 *   writes. Everything still queued is written first, synchronously.
 * - `close()` waits for queued appends; `closeSync()` writes them synchronously, then closes — the descriptor
 *   is closed only after any batch in flight has finished, so no record can reach a reused descriptor.
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
  /** Waits for pending async appends, then closes. */
  close(): Promise<void>;
  closeSync(): void;
  readonly closed: boolean;
}

/** Upper bound of one group commit, so a burst never builds one huge buffer. */
const GROUP_COMMIT_BYTES = 1 << 20;

interface Pending {
  /** Kept as a string until the batch is written: one encode per batch instead of one per record. */
  rec: string | Uint8Array;
  bytes: number;
  resolve: (n: number) => void;
  reject: (err: unknown) => void;
}

function encodeBatch(batch: readonly Pending[]): Uint8Array {
  return batch.every((b) => typeof b.rec === 'string')
    ? Buffer.from(batch.map((b) => b.rec as string).join(''), 'utf8')
    : Buffer.concat(batch.map((b) => (typeof b.rec === 'string' ? Buffer.from(b.rec, 'utf8') : b.rec)));
}

function joinRecords(records: readonly (string | Uint8Array)[], file: string): Uint8Array {
  return Buffer.concat(records.map((r) => bytesOf(r, file)));
}

function makeHandle(opened: Opened, options: AppendOptions): AppendHandle {
  const fd = opened.fd;
  const file = opened.path;
  const perRecordSync = options.fsync === true;
  const torn: TornState = { unterminated: false };
  let closed = false;
  let fdClosed = false;
  let closeError: FsPolicyError | undefined;
  const queue: Pending[] = [];
  let draining: Promise<void> | undefined;
  let inFlight = false;
  const ensureOpen = (): void => {
    if (closed) {
      throw new FsPolicyError({ code: 'EBADF', step: 'write', path: file, message: `append handle for ${file} is closed` });
    }
  };
  const takeBatch = (): Pending[] => {
    let bytes = 0;
    let count = 0;
    while (count < queue.length && (count === 0 || bytes + (queue[count]?.bytes ?? 0) <= GROUP_COMMIT_BYTES)) {
      bytes += queue[count]?.bytes ?? 0;
      count++;
    }
    return queue.splice(0, count);
  };
  /** Writes everything still queued, synchronously, in order (sync calls and closeSync come after it). */
  const flushQueueSync = (): void => {
    while (queue.length > 0) {
      const batch = takeBatch();
      try {
        runSync(writeRecordPlan(fd, file, encodeBatch(batch), perRecordSync, torn, opened.watch));
        for (const b of batch) b.resolve(b.bytes);
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
  };
  const closeFdSync = (): void => {
    if (fdClosed) return;
    fdClosed = true;
    try {
      runSync(op('close', file, 'close', fd));
    } catch (err) {
      closeError = toPolicyError(err, 'close', file, `close ${file}`);
    }
  };
  const drain = async (): Promise<void> => {
    await Promise.resolve(); // let appends issued in this turn join the first batch
    while (queue.length > 0 && !fdClosed) {
      const batch = takeBatch();
      inFlight = true;
      try {
        await runAsync(writeRecordPlan(fd, file, encodeBatch(batch), perRecordSync, torn, opened.watch));
        for (const b of batch) b.resolve(b.bytes);
      } catch (err) {
        for (const b of batch) b.reject(err);
      } finally {
        inFlight = false;
      }
    }
    draining = undefined;
    if (closed) closeFdSync(); // a closeSync() that came while a batch was in flight
  };
  const enqueue = (rec: string | Uint8Array): Promise<number> => {
    ensureOpen();
    const bytes = typeof rec === 'string' ? Buffer.byteLength(rec, 'utf8') : rec.length;
    if (bytes === 0) return Promise.resolve(0);
    return new Promise<number>((resolve, reject) => {
      queue.push({ rec, bytes, resolve, reject });
      draining ??= drain();
    });
  };
  const writeNowSync = (data: Uint8Array): number => {
    ensureOpen();
    flushQueueSync();
    return runSync(writeRecordPlan(fd, file, data, perRecordSync, torn, opened.watch));
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
        return Promise.reject(err instanceof Error ? err : new Error(String(err)));
      }
    },
    appendSync(record) {
      return writeNowSync(bytesOf(record, file));
    },
    appendJson(value) {
      try {
        return enqueue(jsonText(value, file));
      } catch (err) {
        return Promise.reject(err instanceof Error ? err : new Error(String(err)));
      }
    },
    appendJsonSync(value) {
      return writeNowSync(jsonLine(value, file));
    },
    appendMany(records) {
      try {
        return enqueue(joinRecords(records, file));
      } catch (err) {
        return Promise.reject(err instanceof Error ? err : new Error(String(err)));
      }
    },
    appendManySync(records) {
      return writeNowSync(joinRecords(records, file));
    },
    async sync() {
      ensureOpen();
      await draining;
      await runAsync(op('fsync', file, 'fsync', fd));
    },
    syncSync() {
      ensureOpen();
      flushQueueSync();
      runSync(op('fsync', file, 'fsync', fd));
    },
    async close() {
      if (closed) return;
      await draining;
      closed = true; // (closeSync may have run while waiting: then the descriptor is closed already)
      closeFdSync();
      if (closeError !== undefined) throw closeError;
    },
    closeSync() {
      if (closed) return;
      closed = true;
      flushQueueSync();
      if (!inFlight) closeFdSync(); // else the drain loop closes it once the batch in flight settles
      if (closeError !== undefined) throw closeError;
    },
  };
}

/** Opens `file` for repeated appends with privateAppend's guarantees; close it when done. */
export async function openAppendHandle(file: string, options: AppendOptions): Promise<AppendHandle> {
  const env = options.env ?? loadEnvironment();
  return makeHandle(await runAsync(openAppendPlan(file, options, env)), options);
}

/** Synchronous form of {@link openAppendHandle}. */
export function openAppendHandleSync(file: string, options: AppendOptions): AppendHandle {
  const env = options.env ?? loadEnvironment();
  return makeHandle(runSync(openAppendPlan(file, options, env)), options);
}
