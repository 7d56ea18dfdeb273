import * as path from 'node:path';
import { errnoCode, FsPolicyError, toPolicyError } from './errors.js';
import { selfFd } from './internal/anchor.js';
import { pidExists, writerLiveness } from './liveness.js';
import { call, O, type Plan, runAsync, runSync } from './internal/io.js';
import { anchorAt, at, type DirRef, Held, lstatAt, statOf } from './internal/resolve.js';
import { refuseUnsafeFallback, sharedDirReason } from './internal/fallback.js';
import { MAX_TREE_DEPTH, type TooDeep } from './scan.js';
import { parseTempName } from './internal/tempname.js';

export { parseTempName, type ParsedTempName } from './internal/tempname.js';

export interface TempFile {
  readonly path: string;
  /** The file the temp belonged to (its name may be cut for targets longer than NAME_MAX allows). */
  readonly target: string;
  readonly pid: number;
  /** The writer's pid namespace, when its name says. */
  readonly pidns: string | undefined;
  /** `tmp`: an unfinished write; `bak`: a rollback copy of a previous version. */
  readonly type: 'tmp' | 'bak';
  /**
   * Whether the writer is alive: true/false when its pid can be checked from here (same pid namespace), false
   * also when the process with that pid started after the file's last write (a recycled pid); null when it
   * cannot be checked (another namespace: a container sharing the volume) — then only age decides.
   */
  readonly pidAlive: boolean | null;
  readonly ageMs: number;
  readonly size: number;
  /** A writer known to be dead, or older than the age limit: safe to remove. */
  readonly stale: boolean;
}

export interface SweepOptions {
  /** Descend into subdirectories (default true; links are never followed). */
  recursive?: boolean;
  /** Age after which a temp file is stale even when its pid is alive (default one hour). */
  maxAgeMs?: number;
  /** Clock, for tests. */
  now?: number;
  /** Remove the stale ones (default false: only report). */
  remove?: boolean;
  /**
   * Directories (absolute) not to descend into — e.g. the gateway's spool, whose temp files may hold complete
   * payloads that its salvage adopts, and that must therefore never be swept.
   */
  exclude?: readonly string[];
  /**
   * Directories (absolute) whose own temp files are reported but never removed; their subdirectories are
   * swept as usual (the gateway's spool: its salvage, not the sweep, decides about the temps directly in it).
   */
  keep?: readonly string[];
}

export interface SweepResult {
  readonly found: readonly TempFile[];
  readonly removed: readonly string[];
  readonly errors: readonly { path: string; code: string }[];
  /**
   * Directories deeper than {@link MAX_TREE_DEPTH} below a root: not entered, so temps in them were neither
   * found nor removed. Empty when every directory was walked.
   */
  readonly tooDeep: readonly TooDeep[];
}

interface SweepOut {
  found: TempFile[];
  removed: string[];
  errors: { path: string; code: string }[];
  tooDeep: TooDeep[];
}

/** True when a process with this pid exists (EPERM means it exists but belongs to someone else). */
export const pidAlive = pidExists;

/**
 * Whether the writer of a temp is alive, as far as this process can tell ({@link writerLiveness}): a pid means
 * something only inside the namespace it was taken in, and a process that started after the temp's last write
 * is not its writer (the pid was recycled). Null when it cannot be checked from here.
 */
function writerAlive(pid: number, pidns: string | undefined, mtimeMs: number): boolean | null {
  const verdict = writerLiveness(pid, pidns, mtimeMs).state;
  return verdict === 'unknown' ? null : verdict === 'alive';
}

function* sweepDir(
  dir: DirRef,
  options: SweepOptions,
  now: number,
  maxAge: number,
  out: SweepOut,
  held: Held,
  depth: number,
): Plan<void> {
  let entries;
  try {
    entries = yield* call('readdir', dir.path, 'readdir', selfFd(dir.fd, dir.path));
  } catch (err) {
    out.errors.push({ path: dir.path, code: errnoCode(err) ?? 'EUNKNOWN' });
    return;
  }
  const keep = options.keep?.some((x) => path.resolve(x) === dir.path) === true;
  for (const entry of entries) {
    const full = path.join(dir.path, entry.name);
    if (entry.isDirectory()) {
      if (options.recursive === false) continue;
      if (options.exclude?.some((x) => path.resolve(x) === full) === true) continue;
      if (depth >= MAX_TREE_DEPTH) {
        // Not entered, and said: a temp below here is neither found nor removed.
        out.tooDeep.push({ type: 'too-deep', path: full, depth: depth + 1, limit: MAX_TREE_DEPTH });
        continue;
      }
      let fd: number;
      try {
        // O_NOFOLLOW: a directory swapped for a link between readdir and here is not entered.
        fd = yield* call('readdir', full, 'open', at(dir, entry.name), O.RDONLY | O.DIRECTORY | O.NOFOLLOW, 0);
      } catch (err) {
        const code = errnoCode(err);
        if (code !== 'ENOENT' && code !== 'ELOOP' && code !== 'ENOTDIR') out.errors.push({ path: full, code: code ?? 'EUNKNOWN' });
        continue;
      }
      const sub = held.add<DirRef>({ fd, path: full });
      try {
        yield* sweepDir(sub, options, now, maxAge, out, held, depth + 1);
      } finally {
        // One descriptor per level of the current path, not one per directory of the tree.
        yield* held.releaseOne(sub);
      }
      continue;
    }
    if (!entry.isFile()) continue;
    const parsed = parseTempName(entry.name);
    if (parsed === null) continue;
    const st = yield* lstatAt(dir, entry.name, full);
    if (st?.isFile() !== true) continue; // finished (or replaced) meanwhile
    const alive = writerAlive(parsed.pid, parsed.pidns, st.mtimeMs);
    const ageMs = Math.max(0, now - st.mtimeMs);
    const temp: TempFile = {
      path: full,
      target: path.join(dir.path, parsed.target),
      pid: parsed.pid,
      pidns: parsed.pidns,
      type: parsed.type,
      pidAlive: alive,
      ageMs,
      size: st.size,
      stale: alive === false || ageMs > maxAge,
    };
    out.found.push(temp);
    if (options.remove === true && temp.stale && !keep) {
      try {
        // Relative to the directory descriptor: the name is removed from this directory, wherever it now is.
        yield* call('unlink', full, 'unlink', at(dir, entry.name));
        out.removed.push(full);
      } catch (err) {
        const code = errnoCode(err);
        if (code !== 'ENOENT') out.errors.push({ path: full, code: code ?? 'EUNKNOWN' });
      }
    }
  }
}

function* sweepPlan(roots: readonly string[], options: SweepOptions): Plan<SweepResult> {
  const now = options.now ?? Date.now();
  const maxAge = options.maxAgeMs ?? 3_600_000;
  const out: SweepOut = { found: [], removed: [], errors: [], tooDeep: [] };
  for (const r of roots) {
    const root = path.resolve(r);
    const held = new Held();
    try {
      const { anchor, missing } = yield* anchorAt(root, held);
      if (missing.length > 0) continue; // nothing to sweep
      if (options.remove === true) {
        // Without descriptors, removing by name in a tree others can rename in is refused (EUNSAFE_FALLBACK).
        refuseUnsafeFallback({ path: root, intent: 'write', shared: sharedDirReason(root, yield* statOf(anchor, held)) });
      }
      yield* sweepDir(anchor, options, now, maxAge, out, held, 0);
    } catch (err) {
      if (err instanceof FsPolicyError && err.code === 'ENOENT') continue;
      throw err instanceof FsPolicyError ? err : toPolicyError(err, 'readdir', root, `sweep ${root}`);
    } finally {
      yield* held.release();
    }
  }
  out.found.sort((a, b) => a.path.localeCompare(b.path));
  return out;
}

/**
 * Finds this package's own leftover temp files (`.<name>.<pid>-<pidns>.<hex>.tmp|bak`) under `roots`; a file
 * is stale when its writer is known to be dead, or it is older than an hour. A writer in another pid
 * namespace (a container sharing the volume) cannot be checked from here: only age decides for it, so a
 * live writer's temp is never taken for an orphan. The walk and every removal go through directory
 * descriptors; links are never followed. With `remove`, deletes the stale ones (never those directly in a
 * `keep` directory). Files of other programs are never matched. Directories deeper than
 * {@link MAX_TREE_DEPTH} are not entered and are listed in `tooDeep`: no limit is silent.
 */
export async function sweepTempFiles(roots: string | readonly string[], options: SweepOptions = {}): Promise<SweepResult> {
  return runAsync(sweepPlan(typeof roots === 'string' ? [roots] : roots, options));
}

/** Synchronous form of {@link sweepTempFiles}. */
export function sweepTempFilesSync(roots: string | readonly string[], options: SweepOptions = {}): SweepResult {
  return runSync(sweepPlan(typeof roots === 'string' ? [roots] : roots, options));
}
