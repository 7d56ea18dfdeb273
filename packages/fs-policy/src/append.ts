import * as path from 'node:path';
import { currentUid, errnoCode, FsPolicyError, toPolicyError } from './errors.js';
import { type HermesEnvironment, loadEnvironment } from './env.js';
import { call, O, type Plan, runAsync, runSync } from './internal/io.js';
import { bestEffort, op } from './internal/steps.js';
import { serializeJsonText } from './atomic.js';
import { secureMkdirPlan } from './mkdir.js';
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
}

function* openAppendPlan(file: string, options: AppendOptions, env: HermesEnvironment): Plan<Opened> {
  const kind = getKind(options.kind);
  const target = path.resolve(file);
  const warnings: string[] = [];
  let createdDirs: readonly string[] = [];
  const mode = fileModeFor(kind, env);
  // O_NONBLOCK: a FIFO planted under the artifact's name fails (ENXIO) instead of hanging the agent;
  // it changes nothing for regular files.
  const existingFlags = O.WRONLY | O.APPEND | O.NOFOLLOW | O.NONBLOCK;
  let fd: number | undefined;
  let created = false;
  // The directory chain is checked on every open (a link that leads out of the root is refused even when
  // the file already exists there); the check costs one lstat per level below the root.
  if (options.createParents !== false) {
    const dir = yield* secureMkdirPlan(path.dirname(target), kind, env, options.root);
    createdDirs = dir.created;
    warnings.push(...dir.warnings);
  }
  fd = yield* openExisting(target, existingFlags, true);
  if (fd === undefined) {
    try {
      fd = yield* call('open', target, 'open', target, O.WRONLY | O.APPEND | O.CREAT | O.EXCL | O.NOFOLLOW, mode);
      created = true;
    } catch (err) {
      if (errnoCode(err) !== 'EEXIST') throw toPolicyError(err, 'open', target, `open ${target} for append`);
      fd = yield* openExisting(target, existingFlags, false); // another writer created it first
    }
  }
  if (fd === undefined) {
    throw new FsPolicyError({ code: 'ENOENT', step: 'open', path: target, message: `${target} vanished while opening it for append` });
  }
  try {
    const st = yield* op('open', target, 'fstat', fd);
    if (!st.isFile()) {
      throw new FsPolicyError({
        code: 'ENOTREGULAR',
        step: 'open',
        path: target,
        message: `refusing to append to ${target}: not a regular file`,
      });
    }
    if (created) {
      // open(2) masks the mode with the umask; make it exact. Only ever on create: never re-tighten.
      yield* op('fchmod', target, 'fchmod', fd, mode);
      if (kind.ownership && !env.managed.managed && (env.uid !== undefined || env.gid !== undefined)) {
        yield* bestEffort(warnings, 'fchown', target, 'fchown', fd, env.uid ?? -1, env.gid ?? -1);
      }
    } else {
      if (st.nlink > 1) warnings.push(`${target} has ${st.nlink} hard links; appended data is visible through all of them`);
      if (st.uid !== currentUid()) warnings.push(`${target} is owned by uid ${st.uid}, not by this process`);
    }
    return {
      fd,
      path: target,
      created,
      mode: created ? mode : st.mode & 0o7777,
      createdDirs,
      warnings,
    };
  } catch (err) {
    yield* bestEffort(warnings, 'close', target, 'close', fd);
    throw err;
  }
}

/** Opens an existing file for append; undefined when it does not exist (and `missingOk`). */
function* openExisting(target: string, flags: number, missingOk: boolean): Plan<number | undefined> {
  try {
    return yield* call('open', target, 'open', target, flags, 0);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT' && missingOk) return undefined;
    if (code === 'ELOOP') {
      throw new FsPolicyError({
        code: 'ESYMLINK',
        step: 'open',
        path: target,
        message: `refusing to append to ${target}: it is a symbolic link`,
        cause: err,
      });
    }
    if (code === 'ENXIO') {
      throw new FsPolicyError({
        code: 'ENOTREGULAR',
        step: 'open',
        path: target,
        message: `refusing to append to ${target}: not a regular file (a FIFO or socket)`,
        cause: err,
      });
    }
    throw toPolicyError(err, 'open', target, `open ${target} for append`);
  }
}

function* writeRecordPlan(fd: number, file: string, record: Uint8Array, sync: boolean): Plan<number> {
  if (record.length === 0) return 0;
  // One write(2) per record: with O_APPEND the kernel places it whole at the end, so concurrent
  // writers never interleave inside a line.
  const n = yield* op('write', file, 'write', fd, record, 0, record.length);
  if (n === record.length) {
    if (sync) yield* op('fsync', file, 'fsync', fd);
    return n;
  }
  // A short count: the device refused the rest, and libuv drops the errno after partial progress.
  // Writing the rest once more yields that errno; then our partial bytes (the file's tail) are cut off
  // so the file keeps only whole lines.
  let failure: FsPolicyError | undefined;
  let extra = 0;
  try {
    extra = yield* call('write', file, 'write', fd, record, n, record.length - n);
  } catch (err) {
    failure = toPolicyError(err, 'write', file, `append to ${file}`);
  }
  const st = yield* op('short-write', file, 'fstat', fd);
  yield* op('short-write', file, 'ftruncate', fd, Math.max(0, st.size - n - extra));
  throw new FsPolicyError({
    code: failure?.code ?? 'ESHORT_WRITE',
    step: failure === undefined ? 'short-write' : 'write',
    path: file,
    message: `append to ${file} failed after ${n} of ${record.length} bytes (${failure?.message ?? 'short write'}); the partial record was removed`,
    ...(failure?.errno === undefined ? {} : { errno: failure.errno }),
    cause: failure,
  });
}

function* appendOncePlan(file: string, record: Uint8Array, options: AppendOptions, env: HermesEnvironment): Plan<AppendResult> {
  const opened = yield* openAppendPlan(file, options, env);
  try {
    const bytes = yield* writeRecordPlan(opened.fd, opened.path, record, options.fsync === true);
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

function encode(record: string | Uint8Array): Uint8Array {
  return typeof record === 'string' ? Buffer.from(record, 'utf8') : record;
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
 * exactly) if missing, an existing file keeps the mode its owner chose, a symlink is refused, and a
 * short write is an error, never a silently torn line.
 */
export async function privateAppend(file: string, record: string | Uint8Array, options: AppendOptions): Promise<AppendResult> {
  const env = options.env ?? loadEnvironment();
  return runAsync(appendOncePlan(file, encode(record), options, env));
}

/** Synchronous form of {@link privateAppend}. */
export function privateAppendSync(file: string, record: string | Uint8Array, options: AppendOptions): AppendResult {
  const env = options.env ?? loadEnvironment();
  return runSync(appendOncePlan(file, encode(record), options, env));
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
 * Async appends issued together (in the same turn of the event loop, or while a write is in flight) are
 * group-committed: written in call order by one write(2) — still whole lines, never interleaved with other
 * writers — and each promise settles only after its own record is on the file (fsynced with `fsync`).
 */
export interface AppendHandle extends AppendOpenInfo {
  append(record: string | Uint8Array): Promise<number>;
  appendSync(record: string | Uint8Array): number;
  appendJson(value: unknown): Promise<number>;
  appendJsonSync(value: unknown): number;
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

function makeHandle(opened: Opened, options: AppendOptions): AppendHandle {
  const fd = opened.fd;
  const file = opened.path;
  const perRecordSync = options.fsync === true;
  let closed = false;
  const queue: Pending[] = [];
  let draining: Promise<void> | undefined;
  const ensureOpen = (): void => {
    if (closed) {
      throw new FsPolicyError({ code: 'EBADF', step: 'write', path: file, message: `append handle for ${file} is closed` });
    }
  };
  const drain = async (): Promise<void> => {
    await Promise.resolve(); // let appends issued in this turn join the first batch
    while (queue.length > 0) {
      let bytes = 0;
      let count = 0;
      while (count < queue.length && (count === 0 || bytes + (queue[count]?.bytes ?? 0) <= GROUP_COMMIT_BYTES)) {
        bytes += queue[count]?.bytes ?? 0;
        count++;
      }
      const batch = queue.splice(0, count);
      const data = batch.every((b) => typeof b.rec === 'string')
        ? Buffer.from(batch.map((b) => b.rec as string).join(''), 'utf8')
        : Buffer.concat(batch.map((b) => encode(b.rec)));
      try {
        await runAsync(writeRecordPlan(fd, file, data, perRecordSync));
        for (const b of batch) b.resolve(b.bytes);
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
    draining = undefined;
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
      return enqueue(record);
    },
    appendSync(record) {
      ensureOpen();
      return runSync(writeRecordPlan(fd, file, encode(record), perRecordSync));
    },
    appendJson(value) {
      try {
        return enqueue(jsonText(value, file));
      } catch (err) {
        return Promise.reject(err instanceof Error ? err : new Error(String(err)));
      }
    },
    appendJsonSync(value) {
      ensureOpen();
      return runSync(writeRecordPlan(fd, file, jsonLine(value, file), perRecordSync));
    },
    async sync() {
      ensureOpen();
      await draining;
      await runAsync(op('fsync', file, 'fsync', fd));
    },
    syncSync() {
      ensureOpen();
      runSync(op('fsync', file, 'fsync', fd));
    },
    async close() {
      if (closed) return;
      await draining;
      closed = true;
      await runAsync(op('close', file, 'close', fd));
    },
    closeSync() {
      if (closed) return;
      closed = true;
      runSync(op('close', file, 'close', fd));
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
