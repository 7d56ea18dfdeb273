/**
 * The write protocol of an atomic write, once the target is resolved and checked: a temp file with every byte,
 * the mode, the owner and an fsync; then the publish — rename (replace), link (no-clobber), or an exclusive
 * create where the filesystem has no hard links — then the directory fsync, with a rollback when that fails.
 *
 * Where the native layer is in force and the filesystem has unnamed files, the temp is made with `O_TMPFILE`
 * (atomic-tmpfile.ts): it has no name until it is complete and fsynced, then it is linked to the target
 * (no-clobber) or to a temp name that is renamed over the target. Elsewhere the temp is named from its creation
 * on. What is checked is the same either way. Every file this protocol creates and cannot remove again is
 * named: in the error (`leftovers`, and its message) and in a log line.
 */
import type * as fs from 'node:fs';
import * as path from 'node:path';
import { errnoCode, FsPolicyError, toPolicyError } from './errors.js';
import type { HermesEnvironment } from './env.js';
import { selfFd } from './internal/anchor.js';
import { call, O, type Plan } from './internal/io.js';
import { at, type DirRef, fsyncDir, lstatAt } from './internal/resolve.js';
import { bestEffort, op } from './internal/steps.js';
import { tempNameFor } from './internal/tempname.js';
import { getLogger } from './logger.js';
import { applyOwner, exclusivePublishPlan, removeIfMine, writeAll } from './atomic-file.js';
import { endsTheWrite, type TempKind, tmpfileFlags } from './atomic-tmpfile.js';

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

/** What a commit reports: its warnings, and how the temp was made. */
export interface Committed {
  readonly warnings: string[];
  readonly temp: TempKind;
}

/** Runs the commit. Any failure is thrown with the files it left behind named. */
export function* commitPlan(c: Commit, warnings: string[]): Plan<Committed> {
  const leftovers: string[] = [];
  let temp: TempKind = 'named';
  try {
    const flags = tmpfileFlags();
    const mark = warnings.length;
    if (flags !== undefined && (yield* commitSteps(c, warnings, leftovers, flags))) {
      temp = 'tmpfile';
    } else {
      // No unnamed temp here (or it could not be named): nothing was named; the named temp, from the start.
      warnings.length = mark;
      yield* commitSteps(c, warnings, leftovers, undefined);
    }
  } catch (err) {
    throw withLeftovers(err, c.real, leftovers);
  }
  if (leftovers.length > 0) {
    // Committed, but a rollback copy could not be removed: the write succeeded; say what is left.
    warnings.push(`${c.real}: left behind: ${leftovers.join(', ')}`);
    getLogger().warn('atomic write left files behind', { path: c.real, leftovers, fix: removeFix(leftovers) });
  }
  return { warnings, temp };
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

/**
 * One attempt of the protocol. `tmpfile`: the flags of an unnamed temp (`O_TMPFILE`), or undefined for a named
 * one. Answers false, having named and changed nothing, when the unnamed temp could not be made or named (see
 * endsTheWrite); the caller then runs the named protocol.
 */
function* commitSteps(c: Commit, warnings: string[], leftovers: string[], tmpfile: number | undefined): Plan<boolean> {
  const { dir, name, real, data } = c;
  const tmpName = tempNameFor(name, 'tmp');
  const tmp = path.join(dir.path, tmpName);
  // The temp as messages name it: its path, or while it has none the directory it is made in.
  const shown = tmpfile === undefined ? tmp : `an unnamed temp file in ${dir.path}`;
  let fd: number | undefined;
  // True while the temp name exists: it is removed on every failure (once committed, it no longer exists).
  let tmpExists = false;
  try {
    try {
      fd =
        tmpfile === undefined
          ? yield* call('open', real, 'open', at(dir, tmpName), O.WRONLY | O.CREAT | O.EXCL | O.NOFOLLOW, 0o600)
          : yield* call('open', real, 'open', selfFd(dir.fd, dir.path), tmpfile, 0o600);
    } catch (err) {
      // The unnamed temp could not be made: the named protocol runs and answers (see endsTheWrite).
      if (tmpfile !== undefined) return false;
      throw toPolicyError(err, 'open', real, `create the temp file ${tmp}`);
    }
    const file = fd;
    tmpExists = tmpfile === undefined;
    yield* writeAll(fd, real, shown, data);
    yield* op('fchmod', real, 'fchmod', fd, c.finalMode);
    yield* applyOwner(fd, shown, c.existing, c.ownership, c.env, c.uid, warnings);
    // The identity of the new version: a rollback touches the target only while it is still this inode.
    // (Also for a no-clobber write with an unnamed temp: the target is this call's from the link on.)
    let mine = c.durable === 'file+dir' || (tmpfile !== undefined && !c.overwrite) ? yield* op('fsync', real, 'fstat', fd) : undefined;
    yield* op('fsync', real, 'fsync', fd);
    if (tmpfile === undefined) {
      const closing = fd;
      fd = undefined;
      yield* op('close', real, 'close', closing);
    }

    // Commit point: the directory must still be inside the root (a descriptor follows it wherever it is moved).
    const before = yield* c.guard();
    if (before !== undefined) throw c.movedOutError(before);

    if (tmpfile !== undefined) {
      // The complete, fsynced file gets its first name: the target itself (no-clobber: an existing name is
      // EEXIST, never replaced), or the temp name that is renamed over the target below.
      const first = c.overwrite ? tmpName : name;
      try {
        yield* call('link', real, 'link', file, at(dir, first));
      } catch (err) {
        if (!endsTheWrite(err)) return false; // closed below, so gone: nothing was named
        throw toPolicyError(err, 'link', real, c.overwrite ? `name the temp file ${tmp}` : `link ${real}`);
      }
      tmpExists = c.overwrite;
      fd = undefined;
      try {
        yield* op('close', real, 'close', file);
      } catch (err) {
        // No-clobber: the target has been this file since the link; it goes again, as on any failure.
        if (!c.overwrite) yield* removeIfMine(dir, name, real, mine, warnings, leftovers);
        throw err;
      }
    }

    let backup: string | undefined;
    if (!c.overwrite) {
      if (tmpfile === undefined) {
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
      }
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
    return true;
  } finally {
    // An unnamed temp that is closed before it was named is gone: nothing to remove.
    if (fd !== undefined) yield* bestEffort(warnings, 'close', shown, 'close', fd);
    if (tmpExists && !(yield* bestEffort(warnings, 'unlink', tmp, 'unlink', at(dir, tmpName)))) leftovers.push(tmp);
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
