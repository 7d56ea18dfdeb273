/**
 * The steps of an atomic write that fill a file: every byte, the owner, and the exclusive create that publishes
 * where the filesystem has no hard links.
 */
import type * as fs from 'node:fs';
import { currentGid, FsPolicyError, toPolicyError } from './errors.js';
import type { HermesEnvironment } from './env.js';
import { call, O, type Plan } from './internal/io.js';
import { at, type DirRef, lstatAt } from './internal/resolve.js';
import { bestEffort, op } from './internal/steps.js';
import { getLogger } from './logger.js';
import type { Commit } from './atomic-publish.js';

/** Writes every byte of `data` at the descriptor's position; a write that makes no progress is ESHORT_WRITE. */
export function* writeAll(fd: number, real: string, file: string, data: Uint8Array): Plan<void> {
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
export function* exclusivePublishPlan(c: Commit, warnings: string[], leftovers: string[]): Plan<fs.Stats> {
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
 * Removes the entry `name` again, but only while it still holds the file `mine` (another writer's file there is
 * never touched); an entry that may be this call's but cannot be removed, or looked at, is added to `leftovers`.
 */
export function* removeIfMine(dir: DirRef, name: string, real: string, mine: fs.Stats | undefined, warnings: string[], leftovers: string[]): Plan<void> {
  let now: fs.Stats | undefined;
  try {
    now = yield* lstatAt(dir, name, real);
  } catch {
    leftovers.push(real); // cannot be looked at: not touched, named
    return;
  }
  if (now === undefined || now.dev !== mine?.dev || now.ino !== mine.ino) return; // gone, or not this call's file
  if (!(yield* bestEffort(warnings, 'unlink', real, 'unlink', at(dir, name)))) leftovers.push(real);
}

/**
 * Ownership of the new version. As root, a replaced file's owner is kept — it was checked to be root, the
 * home's owner or HERMES_UID (verifyForReplace), so content is never chowned to anyone else; a new file takes
 * HERMES_UID/HERMES_GID where the kind says so (unmanaged only). Refusals are warnings, never hidden; `file` is the
 * temp as messages name it.
 */
export function* applyOwner(
  fd: number,
  file: string,
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
      warnings.push(`${file}: the replaced file was owned by uid ${existing.uid}; the new version is owned by uid ${uid}`);
    }
  } else if (ownership && !env.managed.managed) {
    wantUid = env.uid ?? -1;
    wantGid = env.gid ?? -1;
  }
  if (wantUid === -1 && wantGid === -1) return;
  const ok = yield* bestEffort(warnings, 'fchown', file, 'fchown', fd, wantUid, wantGid);
  if (!ok) getLogger().warn('file owner not applied', { path: file, uid, wantUid, wantGid });
}
