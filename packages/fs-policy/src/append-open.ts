/**
 * Opening a file for append: the directory chain reached through descriptors, the file created owner-only or
 * an existing one checked on its descriptor. Shared by the one-shot appenders and the append handle.
 */
import * as path from 'node:path';
import { errnoCode, FsPolicyError, toPolicyError } from './errors.js';
import type { HermesEnvironment } from './env.js';
import { call, O, type Plan } from './internal/io.js';
import { movedOut, movedOutError, reachDirPlan, watchedRoot } from './internal/reach.js';
import { homeOwnerPlan } from './internal/owners.js';
import { at, checkName, checkRawPath, type DirRef, fsyncDir, Held } from './internal/resolve.js';
import { bestEffort, op } from './internal/steps.js';
import { checkRegular, verifyForAppend } from './internal/verify.js';
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

/** @internal An open append target. */
export interface Opened extends AppendOpenInfo {
  fd: number;
  /**
   * The home's real path when others may rename entries in it (managed): after each write the file's own
   * descriptor must still name a path inside it, or the write is reported as having left the home.
   */
  watch: string | undefined;
  /** The file's size when it was opened (fstat of the descriptor). */
  size: number;
  /** False when the file could be opened for writing only: its last byte cannot be read (see append-record). */
  readable: boolean;
}

/**
 * Flags for an existing file. Read and write, so the last byte can be read through the same descriptor (a
 * record must start on a new line); O_NONBLOCK so a planted FIFO never blocks — it is refused after fstat.
 */
const EXISTING_FLAGS = O.RDWR | O.APPEND | O.NOFOLLOW | O.NONBLOCK;
/** The same for a file this uid may write but not read (its owner chose a write-only mode). */
const EXISTING_WRITE_ONLY = O.WRONLY | O.APPEND | O.NOFOLLOW | O.NONBLOCK;

/** @internal Reaches the directory, opens (or creates) the file and checks it on its descriptor. */
export function* openAppendPlan(file: string, options: AppendOptions, env: HermesEnvironment): Plan<Opened> {
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
    let found = yield* openExisting(dir, name, target);
    if (found === undefined) {
      try {
        const fd = yield* call('open', target, 'open', at(dir, name), O.RDWR | O.APPEND | O.CREAT | O.EXCL | O.NOFOLLOW | O.NONBLOCK, mode);
        found = { fd, readable: true };
        created = true;
      } catch (err) {
        if (errnoCode(err) !== 'EEXIST') throw toPolicyError(err, 'open', target, `open ${target} for append`);
        found = yield* openExisting(dir, name, target); // another writer created it first (and may have removed it again)
      }
    }
    if (found === undefined) {
      throw new FsPolicyError({ code: 'ENOENT', step: 'open', path: target, message: `${target} vanished while opening it for append` });
    }
    const fd = found.fd;
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
        // A FIFO, socket or device opens read-write without blocking; it is refused here, before any write.
        if (!st.isFile() && !st.isDirectory() && !st.isSymbolicLink()) throw notRegular(target);
        // Checked on the descriptor: what was opened is what is written to.
        verifyForAppend(target, st, kind, env, yield* homeOwnerPlan(reached, env, held), reached.uid);
      }
      const out = yield* movedOut(reached, dir, env, held);
      if (out !== undefined) {
        if (created) yield* bestEffort(warnings, 'unlink', target, 'unlink', at(dir, name));
        throw movedOutError(dir, out, 'open');
      }
      const watch = yield* watchedRoot(reached, env, held);
      return {
        fd,
        path: target,
        created,
        mode: created ? mode : st.mode & 0o7777,
        createdDirs: reached.created,
        warnings,
        watch,
        size: st.size,
        readable: found.readable,
      };
    } catch (err) {
      yield* bestEffort(warnings, 'close', target, 'close', fd);
      throw err;
    }
  } finally {
    yield* held.release();
  }
}

function notRegular(target: string, cause?: unknown): FsPolicyError {
  return new FsPolicyError({
    code: 'ENOTREGULAR',
    step: 'open',
    path: target,
    message: `refusing to append to ${target}: not a regular file (a FIFO, socket or device)`,
    ...(cause === undefined ? {} : { cause }),
  });
}

/** Opens an existing file for append; undefined when it does not exist. */
function* openExisting(dir: DirRef, name: string, target: string): Plan<{ fd: number; readable: boolean } | undefined> {
  let readable = true;
  try {
    try {
      return { fd: yield* call('open', target, 'open', at(dir, name), EXISTING_FLAGS, 0), readable };
    } catch (err) {
      if (errnoCode(err) !== 'EACCES') throw err;
      // Writable but not readable for this uid: append without reading the last byte (see append-record).
      readable = false;
      return { fd: yield* call('open', target, 'open', at(dir, name), EXISTING_WRITE_ONLY, 0), readable };
    }
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
    if (code === 'ENXIO' || code === 'ENODEV' || code === 'EOPNOTSUPP') throw notRegular(target, err);
    if (code === 'EISDIR') {
      throw new FsPolicyError({ code: 'EISDIR', step: 'open', path: target, message: `refusing to append to ${target}: it is a directory`, cause: err });
    }
    throw toPolicyError(err, 'open', target, `open ${target} for append`);
  }
}
