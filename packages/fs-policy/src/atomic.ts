import { randomBytes } from 'node:crypto';
import type * as fs from 'node:fs';
import * as path from 'node:path';
import { currentGid, currentUid, errnoCode, FsPolicyError, toPolicyError } from './errors.js';
import { type HermesEnvironment, loadEnvironment } from './env.js';
import { call, O, type Plan, runAsync, runSync } from './internal/io.js';
import { bestEffort, isInside, lstatOrNull, op } from './internal/steps.js';
import { getLogger } from './logger.js';
import { secureMkdirPlan } from './mkdir.js';
import { fileModeFor, getKind, type KindRef, selectFileMode } from './registry.js';

export type Durability = 'file' | 'file+dir';

export interface AtomicWriteOptions {
  /** The artifact kind: decides the parent directory's mode and the mode of a new file. */
  kind: KindRef;
  /** The resolved environment; loaded from process.env when omitted. */
  env?: HermesEnvironment;
  /** An explicit final mode; wins over the existing file's mode and the kind's. */
  mode?: number;
  /** `file+dir` (default) also fsyncs the directory so the rename survives a power loss. */
  durable?: Durability;
  /** A symlinked target is followed only while its real path stays inside this root (default: the home). */
  root?: string;
  /** Create missing parent directories with the kind's mode (default true). */
  createParents?: boolean;
  /** false: fail with EEXIST instead of replacing an existing file (atomic no-clobber create). */
  overwrite?: boolean;
}

export interface WriteResult {
  /** The file that now holds the data (the real path when the target was a permitted symlink). */
  readonly path: string;
  /** The path the caller asked for. */
  readonly requestedPath: string;
  readonly bytes: number;
  /** The final permission bits of the file. */
  readonly mode: number;
  /** True when no file existed at the target before. */
  readonly createdFile: boolean;
  /** Directories this call created. */
  readonly createdDirs: readonly string[];
  readonly durable: Durability;
  readonly warnings: readonly string[];
}

/** The name pattern of this package's temp and rollback files: `.<target>.<pid>.<12 hex>.tmp|bak`. */
export const TEMP_FILE_PATTERN = /^\.(.+)\.(\d+)\.([0-9a-f]{12})\.(tmp|bak)$/;

export function tempNameFor(target: string, suffix: 'tmp' | 'bak'): string {
  return path.join(
    path.dirname(target),
    `.${path.basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.${suffix}`,
  );
}

interface ResolvedTarget {
  real: string;
  existing: fs.Stats | undefined;
}

/** Resolves the write target: a permitted symlink is followed to its real path; anything else is refused. */
function* resolveTarget(target: string, root: string): Plan<ResolvedTarget> {
  const st = yield* lstatOrNull(target);
  if (st === undefined) return { real: target, existing: undefined };
  if (st.isSymbolicLink()) {
    const linkText = yield* op('resolve', target, 'readlink', target);
    let real: string;
    try {
      real = yield* call('resolve', target, 'realpath', target);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') {
        throw new FsPolicyError({
          code: 'EDANGLING_LINK',
          step: 'resolve',
          path: target,
          message: `${target} -> ${linkText} is a dangling link; refusing to create its target`,
        });
      }
      throw toPolicyError(err, 'resolve', target, `realpath ${target}`);
    }
    const realRoot = yield* op('resolve', root, 'realpath', root);
    if (!isInside(real, realRoot)) {
      throw new FsPolicyError({
        code: 'ESYMLINK_ESCAPE',
        step: 'resolve',
        path: target,
        message: `${target} -> ${linkText} resolves to ${real}, outside ${realRoot}; refusing to write through it`,
      });
    }
    const realSt = yield* op('resolve', real, 'lstat', real);
    checkRegular(real, realSt);
    return { real, existing: realSt };
  }
  checkRegular(target, st);
  return { real: target, existing: st };
}

function checkRegular(p: string, st: fs.Stats): void {
  if (st.isDirectory()) {
    throw new FsPolicyError({ code: 'EISDIR', step: 'resolve', path: p, message: `${p} is a directory` });
  }
  if (!st.isFile()) {
    throw new FsPolicyError({
      code: 'ENOTREGULAR',
      step: 'resolve',
      path: p,
      message: `${p} is not a regular file`,
    });
  }
}

/** @internal The plan behind atomicWrite. */
export function* atomicWritePlan(
  target: string,
  data: Uint8Array,
  options: AtomicWriteOptions,
  env: HermesEnvironment,
): Plan<WriteResult> {
  const kind = getKind(options.kind);
  const requestedPath = path.resolve(target);
  const root = path.resolve(options.root ?? env.home);
  const durable = options.durable ?? 'file+dir';
  const warnings: string[] = [];

  let createdDirs: readonly string[] = [];
  if (options.createParents !== false) {
    const dir = yield* secureMkdirPlan(path.dirname(requestedPath), kind, env, root);
    createdDirs = dir.created;
    warnings.push(...dir.warnings);
  }
  const { real, existing } = yield* resolveTarget(requestedPath, root);
  if (existing !== undefined && options.overwrite === false) {
    throw new FsPolicyError({ code: 'EEXIST', step: 'resolve', path: real, message: `${real} already exists` });
  }
  const dir = path.dirname(real);
  const finalMode = selectFileMode({
    explicit: options.mode,
    existing: existing === undefined ? undefined : existing.mode,
    kindMode: fileModeFor(kind, env),
    retighten: kind.file.retighten,
  });

  const tmp = tempNameFor(real, 'tmp');
  let fd: number | undefined;
  let tmpExists = false;
  let committed = false;
  try {
    fd = yield* op('open', real, 'open', tmp, O.WRONLY | O.CREAT | O.EXCL | O.NOFOLLOW, 0o600);
    tmpExists = true;
    let offset = 0;
    while (offset < data.length) {
      const n = yield* op('write', real, 'write', fd, data, offset, data.length - offset);
      if (n <= 0) {
        throw new FsPolicyError({
          code: 'ESHORT_WRITE',
          step: 'short-write',
          path: real,
          message: `short write to ${tmp} (for ${real}): ${offset} of ${data.length} bytes accepted`,
        });
      }
      offset += n;
    }
    yield* op('fchmod', real, 'fchmod', fd, finalMode);
    yield* applyOwner(fd, tmp, existing, kind.ownership, env, warnings);
    yield* op('fsync', real, 'fsync', fd);
    const closing = fd;
    fd = undefined;
    yield* op('close', real, 'close', closing);

    let backup: string | undefined;
    if (options.overwrite === false) {
      yield* op('link', real, 'link', tmp, real);
      committed = true;
      yield* bestEffort(warnings, 'unlink', tmp, 'unlink', tmp);
      tmpExists = false;
    } else {
      if (existing !== undefined && durable === 'file+dir') {
        // A hard link to the old version lets a failed directory fsync roll the target back.
        const bak = tempNameFor(real, 'bak');
        try {
          yield* call('link', bak, 'link', real, bak);
          backup = bak;
        } catch {
          backup = undefined; // no hard links here (e.g. FAT): the write stays atomic, only rollback is lost
        }
      }
      try {
        yield* op('rename', real, 'rename', tmp, real);
      } catch (err) {
        if (backup !== undefined) yield* bestEffort(warnings, 'unlink', backup, 'unlink', backup);
        throw err;
      }
      tmpExists = false;
      committed = true;
    }

    if (durable === 'file+dir') {
      try {
        yield* fsyncDirPlan(dir);
      } catch (err) {
        // Not durable: put the previous state back so the caller's view ("it failed") is the truth.
        if (backup !== undefined) yield* bestEffort(warnings, 'rename', real, 'rename', backup, real);
        else if (existing === undefined) yield* bestEffort(warnings, 'unlink', real, 'unlink', real);
        committed = backup === undefined && existing !== undefined;
        const e = toPolicyError(err, 'fsync-dir', dir, `fsync of directory ${dir}`);
        throw new FsPolicyError({
          code: e.code,
          step: 'fsync-dir',
          path: dir,
          message: committed
            ? `${e.message}; the new content of ${real} is in place but may not survive a power loss`
            : `${e.message}; ${real} was restored to its previous state`,
          ...(e.errno === undefined ? {} : { errno: e.errno }),
          committed,
          cause: err,
        });
      }
    }
    if (backup !== undefined) yield* bestEffort(warnings, 'unlink', backup, 'unlink', backup);
    return {
      path: real,
      requestedPath,
      bytes: data.length,
      mode: finalMode,
      createdFile: existing === undefined,
      createdDirs,
      durable,
      warnings,
    };
  } finally {
    if (fd !== undefined) yield* bestEffort(warnings, 'close', tmp, 'close', fd);
    if (tmpExists && !committed) yield* bestEffort(warnings, 'unlink', tmp, 'unlink', tmp);
  }
}

/** @internal fsync of a directory, so renames and creations inside it are durable. */
export function* fsyncDirPlan(dir: string): Plan<void> {
  const dfd = yield* op('fsync-dir', dir, 'open', dir, O.RDONLY | O.DIRECTORY, 0);
  try {
    yield* op('fsync-dir', dir, 'fsync', dfd);
  } finally {
    yield* bestEffort([], 'close', dir, 'close', dfd);
  }
}

/**
 * Ownership of the new version: as root, an existing file keeps its owner; a new file takes
 * HERMES_UID/HERMES_GID where the kind says so (unmanaged only). Refusals are warnings, never hidden.
 */
function* applyOwner(
  fd: number,
  tmp: string,
  existing: fs.Stats | undefined,
  ownership: boolean,
  env: HermesEnvironment,
  warnings: string[],
): Plan<void> {
  const uid = currentUid();
  let wantUid = -1;
  let wantGid = -1;
  if (existing !== undefined) {
    if (uid === 0 && (existing.uid !== uid || existing.gid !== currentGid())) {
      // As root, the new version keeps the replaced file's owner (a no-op chown is skipped: it would cost
      // an inode update that the fsync then has to commit).
      wantUid = existing.uid;
      wantGid = existing.gid;
    } else if (uid === 0) {
      return;
    } else if (existing.uid !== uid) {
      warnings.push(`${tmp}: the replaced file was owned by uid ${existing.uid}; the new version is owned by uid ${uid}`);
    }
  } else if (ownership && !env.managed.managed) {
    wantUid = env.uid ?? -1;
    wantGid = env.gid ?? -1;
  }
  if (wantUid === -1 && wantGid === -1) return;
  const ok = yield* bestEffort(warnings, 'fchown', tmp, 'fchown', fd, wantUid, wantGid);
  if (!ok) getLogger().warn('file owner not applied', { path: tmp, uid, wantUid, wantGid });
}

function encode(data: string | Uint8Array): Uint8Array {
  return typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
}

/**
 * Replaces `target` with `data` atomically: readers see the old or the new content, never a mix; the file
 * never appears with a wrong mode; on any failure the target is left as it was and no temp file remains.
 * Mode: explicit, else the existing file's (unless the kind re-tightens), else the kind's.
 */
export async function atomicWrite(
  target: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions,
): Promise<WriteResult> {
  const env = options.env ?? loadEnvironment();
  return runAsync(atomicWritePlan(target, encode(data), options, env));
}

/** Synchronous form of {@link atomicWrite}, for shutdown paths. */
export function atomicWriteSync(target: string, data: string | Uint8Array, options: AtomicWriteOptions): WriteResult {
  const env = options.env ?? loadEnvironment();
  return runSync(atomicWritePlan(target, encode(data), options, env));
}

export interface AtomicJsonOptions extends AtomicWriteOptions {
  /** JSON indentation (default 2; 0 for compact). */
  indent?: number;
  /** A JSON.stringify replacer. */
  replacer?: (this: unknown, key: string, value: unknown) => unknown;
}

/**
 * Serialises `value` to JSON (before any I/O: a value that cannot be serialised fails with ESERIALIZE and
 * touches nothing), then writes it as {@link atomicWrite} does, ending with a newline.
 */
export function serializeJson(value: unknown, target: string, options: Pick<AtomicJsonOptions, 'indent' | 'replacer'> = {}): Buffer {
  return Buffer.from(serializeJsonText(value, target, options), 'utf8');
}

/** {@link serializeJson} as text (with the trailing newline). */
export function serializeJsonText(
  value: unknown,
  target: string,
  options: Pick<AtomicJsonOptions, 'indent' | 'replacer'> = {},
): string {
  let text: unknown;
  try {
    text = JSON.stringify(value, options.replacer, options.indent ?? 2);
  } catch (err) {
    throw new FsPolicyError({
      code: 'ESERIALIZE',
      step: 'serialize',
      path: target,
      message: `cannot serialise value for ${target}: ${err instanceof Error ? err.message : String(err)}`,
      cause: err,
    });
  }
  if (typeof text !== 'string') {
    throw new FsPolicyError({
      code: 'ESERIALIZE',
      step: 'serialize',
      path: target,
      message: `cannot serialise value for ${target}: JSON has no representation for ${typeof value}`,
    });
  }
  return `${text}\n`;
}

/** Atomic JSON write; see {@link atomicWrite} and {@link serializeJson}. */
export async function atomicWriteJson(target: string, value: unknown, options: AtomicJsonOptions): Promise<WriteResult> {
  const data = serializeJson(value, target, options);
  return atomicWrite(target, data, options);
}

/** Synchronous form of {@link atomicWriteJson}. */
export function atomicWriteJsonSync(target: string, value: unknown, options: AtomicJsonOptions): WriteResult {
  const data = serializeJson(value, target, options);
  return atomicWriteSync(target, data, options);
}

/**
 * Makes the entries of `dir` durable (renames, creations, unlinks inside it): one fsync of the directory.
 * Batch writers use `durable: 'file'` per file and call this once at the end.
 */
export async function fsyncDirectory(dir: string): Promise<void> {
  await runAsync(fsyncDirPlan(path.resolve(dir)));
}

/** Synchronous form of {@link fsyncDirectory}. */
export function fsyncDirectorySync(dir: string): void {
  runSync(fsyncDirPlan(path.resolve(dir)));
}
