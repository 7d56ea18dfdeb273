import type * as fs from 'node:fs';
import * as path from 'node:path';
import { currentGid, currentUid, FsPolicyError, toPolicyError } from './errors.js';
import { type HermesEnvironment, loadEnvironment } from './env.js';
import { call, O, type Plan, runAsync, runSync } from './internal/io.js';
import { movedOut, movedOutError, reachDirPlan, type Reached } from './internal/reach.js';
import { at, checkName, checkRawPath, componentsBelow, type DirRef, fsyncDir, Held, lstatAt, realOf, statOf, walkPlan } from './internal/resolve.js';
import { bestEffort, isInside, op } from './internal/steps.js';
import { tempNameFor } from './internal/tempname.js';
import { checkRegular, verifyForReplace } from './internal/verify.js';
import { getLogger } from './logger.js';
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

export { TEMP_FILE_PATTERN } from './internal/tempname.js';

/** The target reached: the directory that holds it, its name there, and what is there now. */
interface Target {
  readonly dir: DirRef;
  readonly name: string;
  readonly existing: fs.Stats | undefined;
}

/**
 * Resolves the file `name` in the reached directory. A symlink there is followed by the resolver — one step
 * at a time, through descriptors — only while it stays inside the root; a dangling or escaping link is
 * refused and its target never created.
 */
function* resolveTargetPlan(reached: Reached, name: string, held: Held): Plan<Target> {
  let stack: DirRef[] = [...reached.stack];
  let dir = reached.dir;
  let current = name;
  const requested = path.join(reached.dir.path, name);
  for (let hops = 0; ; hops++) {
    const display = path.join(dir.path, current);
    checkName(current, display);
    const st = yield* lstatAt(dir, current, display);
    if (st === undefined) return { dir, name: current, existing: undefined };
    if (!st.isSymbolicLink()) {
      checkRegular(display, st, 'resolve');
      return { dir, name: current, existing: st };
    }
    if (hops >= 40) throw new FsPolicyError({ code: 'ELOOP', step: 'resolve', path: display, message: `too many levels of symbolic links at ${display}` });
    const text = yield* op('resolve', display, 'readlink', at(dir, current));
    let parts: string[];
    if (path.isAbsolute(text)) {
      reached.root.real ??= yield* realOf(reached.root);
      const norm = path.normalize(text);
      const base = [reached.root.real, reached.root.path].find((r) => isInside(norm, r));
      if (base === undefined) {
        throw new FsPolicyError({
          code: 'ESYMLINK_ESCAPE',
          step: 'resolve',
          path: requested,
          message: `${display} -> ${text} leads outside ${reached.root.path}; refusing to write through it`,
        });
      }
      stack = [reached.root];
      parts = componentsBelow(base, norm);
    } else {
      parts = text.split('/');
    }
    const last = parts.pop();
    if (last === undefined || last === '' || last === '.' || last === '..') {
      throw new FsPolicyError({ code: 'ENOTREGULAR', step: 'resolve', path: display, message: `${display} -> ${text} does not name a file` });
    }
    try {
      stack = yield* walkPlan(reached.root, stack, parts, {}, held);
    } catch (err) {
      if (err instanceof FsPolicyError && err.code === 'ENOENT') {
        throw new FsPolicyError({ code: 'EDANGLING_LINK', step: 'resolve', path: requested, message: `${display} -> ${text} is a dangling link; refusing to create its target` });
      }
      throw err;
    }
    dir = stack[stack.length - 1] ?? reached.root;
    current = last;
    const next = yield* lstatAt(dir, current, path.join(dir.path, current));
    if (next === undefined) {
      throw new FsPolicyError({ code: 'EDANGLING_LINK', step: 'resolve', path: requested, message: `${display} -> ${text} is a dangling link; refusing to create its target` });
    }
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
  checkRawPath(target);
  const requestedPath = path.resolve(target);
  const durable = options.durable ?? 'file+dir';
  const warnings: string[] = [];
  const held = new Held();
  try {
    const reached = yield* reachDirPlan(
      path.dirname(requestedPath),
      { env, root: options.root, createFor: options.createParents === false ? undefined : kind },
      held,
    );
    warnings.push(...reached.warnings);
    const { dir, name, existing } = yield* resolveTargetPlan(reached, path.basename(requestedPath), held);
    const real = path.join(dir.path, name);
    if (existing !== undefined && options.overwrite === false) {
      throw new FsPolicyError({ code: 'EEXIST', step: 'resolve', path: real, message: `${real} already exists` });
    }
    const rootOwner = currentUid() === 0 ? (yield* statOf(reached.root, held)).uid : undefined;
    const inherit = existing === undefined ? false : verifyForReplace(real, existing, kind, env, rootOwner, warnings).inheritMode;
    const finalMode = selectFileMode({
      explicit: options.mode,
      existing: inherit ? existing?.mode : undefined,
      kindMode: fileModeFor(kind, env),
      retighten: kind.file.retighten,
    });
    const guard = (): Plan<string | undefined> => movedOut(reached, dir, env, held);
    const result = yield* commitPlan(dir, name, real, data, finalMode, existing, kind.ownership, env, durable, options.overwrite !== false, warnings, guard);
    return {
      path: real,
      requestedPath,
      bytes: data.length,
      mode: finalMode,
      createdFile: existing === undefined,
      createdDirs: reached.created,
      durable,
      warnings: result,
    };
  } finally {
    yield* held.release();
  }
}

/** Temp file, every byte, mode, owner, fsync, then rename (or link for no-clobber), then the directory fsync. */
function* commitPlan(
  dir: DirRef,
  name: string,
  real: string,
  data: Uint8Array,
  finalMode: number,
  existing: fs.Stats | undefined,
  ownership: boolean,
  env: HermesEnvironment,
  durable: Durability,
  overwrite: boolean,
  warnings: string[],
  guard: () => Plan<string | undefined>,
): Plan<string[]> {
  const tmpName = tempNameFor(name, 'tmp');
  const tmp = path.join(dir.path, tmpName);
  let fd: number | undefined;
  // True while the temp name exists: it is removed on every failure (once committed, it no longer exists).
  let tmpExists = false;
  try {
    try {
      fd = yield* call('open', real, 'open', at(dir, tmpName), O.WRONLY | O.CREAT | O.EXCL | O.NOFOLLOW, 0o600);
    } catch (err) {
      throw toPolicyError(err, 'open', real, `create the temp file ${tmp}`);
    }
    tmpExists = true;
    let offset = 0;
    while (offset < data.length) {
      const n = yield* op('write', real, 'write', fd, data, offset, data.length - offset);
      if (n <= 0) {
        throw new FsPolicyError({
          code: 'ESHORT_WRITE',
          step: 'short-write',
          path: real,
          message: `short write to ${tmp} (for ${real}): ${String(offset)} of ${String(data.length)} bytes accepted`,
        });
      }
      offset += n;
    }
    yield* op('fchmod', real, 'fchmod', fd, finalMode);
    yield* applyOwner(fd, tmp, existing, ownership, env, warnings);
    // The identity of the new version: a rollback touches the target only while it is still this inode.
    const mine = durable === 'file+dir' ? yield* op('fsync', real, 'fstat', fd) : undefined;
    yield* op('fsync', real, 'fsync', fd);
    const closing = fd;
    fd = undefined;
    yield* op('close', real, 'close', closing);

    // Commit point: the directory must still be inside the root (a descriptor follows it wherever it is moved).
    const before = yield* guard();
    if (before !== undefined) throw movedOutError(dir, before, 'write');

    let backup: string | undefined;
    if (!overwrite) {
      yield* op('link', real, 'link', at(dir, tmpName), at(dir, name));
      yield* bestEffort(warnings, 'unlink', tmp, 'unlink', at(dir, tmpName));
      tmpExists = false;
    } else {
      if (existing !== undefined && durable === 'file+dir') {
        // A hard link to the old version lets a failed directory fsync roll the target back.
        const bak = tempNameFor(name, 'bak');
        try {
          yield* call('link', path.join(dir.path, bak), 'link', at(dir, name), at(dir, bak));
          backup = bak;
        } catch {
          // No hard links here (e.g. FAT): the write stays atomic, only the rollback copy is lost.
        }
      }
      try {
        yield* op('rename', real, 'rename', at(dir, tmpName), at(dir, name));
      } catch (err) {
        if (backup !== undefined) yield* bestEffort(warnings, 'unlink', path.join(dir.path, backup), 'unlink', at(dir, backup));
        throw err;
      }
      tmpExists = false;
    }

    if (durable === 'file+dir') {
      try {
        yield* fsyncDir(dir);
      } catch (err) {
        throw yield* rollbackPlan(err, dir, name, real, mine, backup, existing !== undefined, warnings);
      }
    }
    const after = yield* guard();
    if (after !== undefined) {
      // Moved out while committing: leave that directory as it was moved (previous version back, or our file
      // removed), and report the write as failed.
      if (backup !== undefined) yield* bestEffort(warnings, 'rename', real, 'rename', at(dir, backup), at(dir, name));
      else if (existing === undefined || !overwrite) yield* bestEffort(warnings, 'unlink', real, 'unlink', at(dir, name));
      throw movedOutError(dir, after, 'write');
    }
    if (backup !== undefined) yield* bestEffort(warnings, 'unlink', path.join(dir.path, backup), 'unlink', at(dir, backup));
    return warnings;
  } finally {
    if (fd !== undefined) yield* bestEffort(warnings, 'close', tmp, 'close', fd);
    if (tmpExists) yield* bestEffort(warnings, 'unlink', tmp, 'unlink', at(dir, tmpName));
  }
}

/**
 * After a failed directory fsync: put the previous state back, but only while the target is still the inode
 * this call put there (another writer's newer version is never clobbered), and say exactly what the final
 * state is. A leftover rollback file is removed, or named in the error.
 */
function* rollbackPlan(
  err: unknown,
  dir: DirRef,
  name: string,
  real: string,
  mine: fs.Stats | undefined,
  backup: string | undefined,
  hadPrevious: boolean,
  warnings: string[],
): Plan<FsPolicyError> {
  const e = toPolicyError(err, 'fsync-dir', dir.path, `fsync of directory ${dir.path}`);
  let now: fs.Stats | undefined;
  try {
    now = yield* lstatAt(dir, name, real);
  } catch {
    // Cannot be looked at: treated as not ours (nothing is touched).
  }
  const stillMine = now !== undefined && now.dev === mine?.dev && now.ino === mine.ino;
  let state: string;
  let committed: boolean;
  const leftovers: string[] = [];
  if (!stillMine) {
    state = `${real} was replaced by another writer meanwhile; it is left as that writer made it`;
    committed = false;
    if (backup !== undefined && !(yield* bestEffort(warnings, 'unlink', path.join(dir.path, backup), 'unlink', at(dir, backup)))) {
      leftovers.push(path.join(dir.path, backup));
    }
  } else if (backup !== undefined) {
    if (yield* bestEffort(warnings, 'rename', real, 'rename', at(dir, backup), at(dir, name))) {
      state = `${real} was restored to its previous version`;
      committed = false;
    } else {
      state = `the new content of ${real} is in place but may not survive a power loss (restoring the previous version failed)`;
      committed = true;
      leftovers.push(path.join(dir.path, backup));
    }
  } else if (!hadPrevious) {
    if (yield* bestEffort(warnings, 'unlink', real, 'unlink', at(dir, name))) {
      state = `the new file ${real} was removed again`;
      committed = false;
    } else {
      state = `the new file ${real} is in place but may not survive a power loss (removing it failed)`;
      committed = true;
    }
  } else {
    state = `the new content of ${real} is in place but may not survive a power loss (no rollback copy: the filesystem has no hard links)`;
    committed = true;
  }
  return new FsPolicyError({
    code: e.code,
    step: 'fsync-dir',
    path: dir.path,
    message: `${e.detail}; ${state}${leftovers.length > 0 ? `; left behind: ${leftovers.join(', ')}` : ''}`,
    ...(e.errno === undefined ? {} : { errno: e.errno }),
    committed,
    cause: err,
  });
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

/**
 * The bytes to write, checked before any I/O: a string (UTF-8) or a Uint8Array (a Buffer). Anything else — an
 * object, a number, an ArrayBuffer, a Uint16Array whose `length` is not its byte count — is refused.
 */
export function bytesOf(data: unknown, target: string): Uint8Array {
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  if (data instanceof Uint8Array) return data;
  const what = data === null ? 'null' : typeof data === 'object' ? (Object.getPrototypeOf(data) as { constructor?: { name?: string } } | null)?.constructor?.name ?? 'object' : typeof data;
  throw new FsPolicyError({
    code: 'EINVALID_DATA',
    step: 'serialize',
    path: target,
    message: `cannot write ${what} to ${target}: pass a string or a Uint8Array (use atomicWriteJson for values)`,
  });
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
  return runAsync(atomicWritePlan(target, bytesOf(data, target), options, env));
}

/** Synchronous form of {@link atomicWrite}, for shutdown paths. */
export function atomicWriteSync(target: string, data: string | Uint8Array, options: AtomicWriteOptions): WriteResult {
  const env = options.env ?? loadEnvironment();
  return runSync(atomicWritePlan(target, bytesOf(data, target), options, env));
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

/** fsync of a directory opened read-only (nothing is written through the descriptor). */
function* fsyncDirPlan(dir: string): Plan<void> {
  const dfd = yield* op('fsync-dir', dir, 'open', dir, O.RDONLY | O.DIRECTORY, 0);
  try {
    yield* op('fsync-dir', dir, 'fsync', dfd);
  } finally {
    yield* bestEffort([], 'close', dir, 'close', dfd);
  }
}
