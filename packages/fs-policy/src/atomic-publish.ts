/**
 * The write protocol of an atomic write, once the target is resolved and checked: temp file, every byte, mode,
 * owner, fsync, then the publish — rename (replace), link (no-clobber), or an exclusive create where the
 * filesystem has no hard links — then the directory fsync, with a rollback when that fails. Every file this
 * protocol creates and cannot remove again is named: in the error (`leftovers`, and its message) and in a log
 * line.
 */
import type * as fs from 'node:fs';
import * as path from 'node:path';
import { currentGid, errnoCode, FsPolicyError, toPolicyError } from './errors.js';
import type { HermesEnvironment } from './env.js';
import { call, O, type Plan } from './internal/io.js';
import { at, type DirRef, fsyncDir, lstatAt } from './internal/resolve.js';
import { bestEffort, op } from './internal/steps.js';
import { tempNameFor } from './internal/tempname.js';
import { getLogger } from './logger.js';

export type Durability = 'file' | 'file+dir';

/** What the commit needs to know about the write. */
export interface Commit {
  readonly dir: DirRef;
  readonly name: string;
  /** The logical path of the target (for messages). */
  readonly real: string;
  readonly data: Uint8Array;
  readonly finalMode: number;
  /** The file being replaced (checked: a trusted owner), or undefined for a new file. */
  readonly existing: fs.Stats | undefined;
  /** The kind applies HERMES_UID/HERMES_GID to new files. */
  readonly ownership: boolean;
  readonly env: HermesEnvironment;
  /** The effective uid the write acts as (read once, when its directory was reached). */
  readonly uid: number;
  readonly durable: Durability;
  /** false: fail with EEXIST rather than replace (no-clobber create). */
  readonly overwrite: boolean;
  /** Where the directory is now when it was moved out of the root, else undefined (checked at commit points). */
  readonly guard: () => Plan<string | undefined>;
  readonly movedOutError: (now: string) => FsPolicyError;
}

/** errno codes with which link(2) says the filesystem has no hard links (vfat, some FUSE filesystems). */
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP']);

/** Runs the commit; returns the warnings. Any failure is thrown with the files it left behind named. */
export function* commitPlan(c: Commit, warnings: string[]): Plan<string[]> {
  const leftovers: string[] = [];
  try {
    yield* commitSteps(c, warnings, leftovers);
  } catch (err) {
    throw withLeftovers(err, c.real, leftovers);
  }
  if (leftovers.length > 0) {
    // Committed, but a rollback copy could not be removed: the write succeeded; say what is left.
    warnings.push(`${c.real}: left behind: ${leftovers.join(', ')}`);
    getLogger().warn('atomic write left files behind', { path: c.real, leftovers, fix: removeFix(leftovers) });
  }
  return warnings;
}

function removeFix(leftovers: readonly string[]): string {
  return `remove ${leftovers.join(' and ')} once the cause (the failing unlink or rename) is fixed; \`hermes-fs doctor --fix\` sweeps temp files of dead writers`;
}

/** The error, with `leftovers` set and named in its message, and logged. Without leftovers: unchanged. */
function withLeftovers(err: unknown, real: string, leftovers: readonly string[]): FsPolicyError {
  const e = toPolicyError(err, 'write', real, `atomic write of ${real}`);
  if (leftovers.length === 0) return e;
  const out = new FsPolicyError({
    code: e.code,
    step: e.step,
    path: e.path,
    message: `${e.detail}; left behind: ${leftovers.join(', ')}`,
    hint: `${e.hint} Then ${removeFix(leftovers)}.`,
    ...(e.errno === undefined ? {} : { errno: e.errno }),
    committed: e.committed,
    leftovers: [...e.leftovers, ...leftovers.filter((l) => !e.leftovers.includes(l))],
    cause: e.cause ?? err,
  });
  getLogger().error('atomic write failed and left files behind', {
    path: real,
    code: out.code,
    errno: out.errno,
    step: out.step,
    leftovers: out.leftovers,
    fix: out.hint,
  });
  return out;
}

function* commitSteps(c: Commit, warnings: string[], leftovers: string[]): Plan<void> {
  const { dir, name, real, data } = c;
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
    yield* writeAll(fd, real, tmp, data);
    yield* op('fchmod', real, 'fchmod', fd, c.finalMode);
    yield* applyOwner(fd, tmp, c.existing, c.ownership, c.env, c.uid, warnings);
    // The identity of the new version: a rollback touches the target only while it is still this inode.
    let mine = c.durable === 'file+dir' ? yield* op('fsync', real, 'fstat', fd) : undefined;
    yield* op('fsync', real, 'fsync', fd);
    const closing = fd;
    fd = undefined;
    yield* op('close', real, 'close', closing);

    // Commit point: the directory must still be inside the root (a descriptor follows it wherever it is moved).
    const before = yield* c.guard();
    if (before !== undefined) throw c.movedOutError(before);

    let backup: string | undefined;
    if (!c.overwrite) {
      try {
        yield* call('link', real, 'link', at(dir, tmpName), at(dir, name));
      } catch (err) {
        if (!NO_HARD_LINKS.has(errnoCode(err) ?? '')) throw toPolicyError(err, 'link', real, `link ${real}`);
        // No hard links here: publish by an exclusive create of the final name instead (see exclusivePublish).
        mine = yield* exclusivePublishPlan(c, warnings, leftovers);
        warnings.push(`${real}: the filesystem has no hard links (link: ${errnoCode(err) ?? 'error'}); published by an exclusive create`);
      }
      if (!(yield* bestEffort(warnings, 'unlink', tmp, 'unlink', at(dir, tmpName)))) leftovers.push(tmp);
      tmpExists = false;
    } else {
      if (c.existing !== undefined && c.durable === 'file+dir') {
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
        if (backup !== undefined && !(yield* bestEffort(warnings, 'unlink', path.join(dir.path, backup), 'unlink', at(dir, backup)))) {
          leftovers.push(path.join(dir.path, backup));
        }
        throw err;
      }
      tmpExists = false;
    }

    if (c.durable === 'file+dir') {
      try {
        yield* fsyncDir(dir);
      } catch (err) {
        throw yield* rollbackPlan(err, c, mine, backup, warnings, leftovers);
      }
    }
    const after = yield* c.guard();
    if (after !== undefined) {
      // Moved out while committing: leave that directory as it was moved (previous version back, or our file
      // removed), and report the write as failed.
      if (backup !== undefined) {
        if (!(yield* bestEffort(warnings, 'rename', real, 'rename', at(dir, backup), at(dir, name)))) leftovers.push(path.join(dir.path, backup));
      } else if (c.existing === undefined || !c.overwrite) {
        if (!(yield* bestEffort(warnings, 'unlink', real, 'unlink', at(dir, name)))) leftovers.push(real);
      }
      throw c.movedOutError(after);
    }
    if (backup !== undefined && !(yield* bestEffort(warnings, 'unlink', path.join(dir.path, backup), 'unlink', at(dir, backup)))) {
      leftovers.push(path.join(dir.path, backup));
    }
  } finally {
    if (fd !== undefined) yield* bestEffort(warnings, 'close', tmp, 'close', fd);
    if (tmpExists && !(yield* bestEffort(warnings, 'unlink', tmp, 'unlink', at(dir, tmpName)))) leftovers.push(tmp);
  }
}

/** Writes every byte of `data` at the descriptor's position; a write that makes no progress is ESHORT_WRITE. */
function* writeAll(fd: number, real: string, file: string, data: Uint8Array): Plan<void> {
  let offset = 0;
  while (offset < data.length) {
    const n = yield* op('write', real, 'write', fd, data, offset, data.length - offset);
    if (n <= 0) {
      throw new FsPolicyError({
        code: 'ESHORT_WRITE',
        step: 'short-write',
        path: real,
        message: `short write to ${file} (for ${real}): ${String(offset)} of ${String(data.length)} bytes accepted`,
      });
    }
    offset += n;
  }
}

/**
 * No-clobber publish without hard links: the final name is created with O_CREAT|O_EXCL|O_NOFOLLOW through the
 * held directory (an existing file or link there is EEXIST, never followed), owner-only until complete; every
 * byte is written, the size checked on the descriptor, then the final mode and owner, then fsync.
 *
 * The trade-off against link(2): the final name exists before its content is complete. A reader can see a
 * short file meanwhile, and a crash can leave a partial file under the final name (it is owner-only until the
 * bytes are in and fsynced). A failure before the end removes the file again — only while the name still holds
 * the inode this call created — or names it in the error. Returns the new file's fstat.
 */
function* exclusivePublishPlan(c: Commit, warnings: string[], leftovers: string[]): Plan<fs.Stats> {
  const { dir, name, real, data } = c;
  let fd: number;
  try {
    fd = yield* call('open', real, 'open', at(dir, name), O.WRONLY | O.CREAT | O.EXCL | O.NOFOLLOW | O.NONBLOCK, 0o600);
  } catch (err) {
    throw toPolicyError(err, 'link', real, `create ${real} (exclusive publish)`);
  }
  let created: fs.Stats | undefined;
  let open = true;
  try {
    created = yield* op('open', real, 'fstat', fd);
    yield* writeAll(fd, real, real, data);
    const st = yield* op('write', real, 'fstat', fd);
    if (st.size !== data.length) {
      throw new FsPolicyError({
        code: 'ESHORT_WRITE',
        step: 'short-write',
        path: real,
        message: `${real} holds ${String(st.size)} bytes after writing ${String(data.length)} (exclusive publish)`,
      });
    }
    yield* op('fchmod', real, 'fchmod', fd, c.finalMode);
    yield* applyOwner(fd, real, undefined, c.ownership, c.env, c.uid, warnings);
    yield* op('fsync', real, 'fsync', fd);
    open = false;
    yield* op('close', real, 'close', fd);
    return st;
  } catch (err) {
    if (open) yield* bestEffort(warnings, 'close', real, 'close', fd);
    // Remove the incomplete file, but only while the name still holds the inode this call created.
    let now: fs.Stats | undefined;
    let looked = true;
    try {
      now = yield* lstatAt(dir, name, real);
    } catch {
      looked = false; // cannot be looked at: not touched, named below
    }
    if (now !== undefined && now.dev === created?.dev && now.ino === created.ino) {
      if (!(yield* bestEffort(warnings, 'unlink', real, 'unlink', at(dir, name)))) leftovers.push(real);
    } else if (!looked || (created === undefined && now !== undefined)) {
      leftovers.push(real); // possibly ours, but not provably: never removed blind
    }
    throw err;
  }
}

/**
 * After a failed directory fsync: put the previous state back, but only while the target is still the inode
 * this call put there (another writer's newer version is never clobbered), and say exactly what the final
 * state is. A rollback file that cannot be removed is added to `leftovers` (named in the error by the caller).
 */
function* rollbackPlan(
  err: unknown,
  c: Commit,
  mine: fs.Stats | undefined,
  backup: string | undefined,
  warnings: string[],
  leftovers: string[],
): Plan<FsPolicyError> {
  const { dir, name, real } = c;
  const hadPrevious = c.existing !== undefined;
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
    message: `${e.detail}; ${state}`,
    ...(e.errno === undefined ? {} : { errno: e.errno }),
    committed,
    cause: err,
  });
}

/**
 * Ownership of the new version. As root, a replaced file's owner is kept — it was checked to be root, the
 * home's owner or HERMES_UID (verifyForReplace), so content is never chowned to anyone else; a new file takes
 * HERMES_UID/HERMES_GID where the kind says so (unmanaged only). Refusals are warnings, never hidden.
 */
function* applyOwner(
  fd: number,
  tmp: string,
  existing: fs.Stats | undefined,
  ownership: boolean,
  env: HermesEnvironment,
  uid: number,
  warnings: string[],
): Plan<void> {
  let wantUid = -1;
  let wantGid = -1;
  if (existing !== undefined) {
    if (uid === 0 && (existing.uid !== uid || existing.gid !== currentGid())) {
      // A no-op chown is skipped: it would cost an inode update that the fsync then has to commit.
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
