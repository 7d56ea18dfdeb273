/**
 * The roots of an operation: the directories reached by path (the operator's part of a path, above the home or
 * an explicit root), opened once and held, from which the resolver walks everything else through descriptors.
 * In fallback mode every such open passes the fail-closed gate first.
 */
import * as path from 'node:path';
import { errnoCode, FsPolicyError, toPolicyError } from '../errors.js';
import { anchorMode, selfFd } from './anchor.js';
import { refuseUnsafeFallback } from './fallback.js';
import { call, O, type Plan } from './io.js';
import { type DirRef, dirFlags, type Held, type RootRef } from './resolve.js';
import { op } from './steps.js';

/**
 * Opens an existing directory by path, letting the kernel follow links (the operator's part of a path). Every
 * root of every operation is opened here: in fallback mode an operation that did not pass the gate with its
 * environment (the scan, the sweep) is refused when the process is privileged.
 */
function* openByPath(p: string, held: Held): Plan<RootRef | undefined> {
  if (!held.pathFallbackAdmitted) refuseUnsafeFallback({ path: p, intent: 'read' });
  let fd: number;
  try {
    fd = yield* call('resolve', p, 'open', p, dirFlags(), 0);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT') return undefined;
    if (code === 'ENOTDIR') {
      throw new FsPolicyError({ code: 'ENOTDIR', step: 'resolve', path: p, message: `${p} (or a component of it) is not a directory` });
    }
    throw toPolicyError(err, 'resolve', p, `open directory ${p}`);
  }
  return held.add<RootRef>({ fd, path: p });
}

/**
 * A root given by path and not opened yet: the common case needs only the first component below it, which
 * is opened by `<root>/<first>` with O_NOFOLLOW — the same lookup as opening the root and then the first
 * component relative to it. The root is opened when something needs it (an absolute link, `..`, its owner).
 */
export function lazyRoot(p: string): RootRef {
  return { fd: -1, path: p };
}

/** Opens a lazily given root (by path, the operator's part) the first time it is needed. */
export function* materialize<T extends DirRef>(dir: T, held: Held): Plan<T> {
  if (dir.fd >= 0) return dir;
  const opened = yield* openByPath(dir.path, held);
  if (opened === undefined) throw new FsPolicyError({ code: 'ENOENT', step: 'resolve', path: dir.path, message: `${dir.path} does not exist` });
  dir.fd = opened.fd;
  return dir;
}

/** Opens `<root>/<name>` as a directory (no link at `name`); undefined on any failure (the caller takes the long way). */
export function* tryOpenBelow(root: string, name: string, held: Held): Plan<DirRef | undefined> {
  const p = path.join(root, name);
  if (!held.pathFallbackAdmitted) refuseUnsafeFallback({ path: p, intent: 'read' });
  try {
    const fd = yield* call('resolve', p, 'open', p, dirFlags() | O.NOFOLLOW, 0);
    return held.add<DirRef>({ fd, path: p });
  } catch {
    return undefined;
  }
}

/** The real path of a held directory (from its descriptor on Linux). */
export function* realOf(dir: DirRef): Plan<string> {
  if (dir.fd < 0) return yield* op('resolve', dir.path, 'realpath', dir.path);
  return anchorMode() === 'procfd' ? yield* op('resolve', dir.path, 'readlink', selfFd(dir.fd, dir.path)) : yield* op('resolve', dir.path, 'realpath', dir.path);
}

/** A directory reached by a walk, promoted to the root of what follows. */
export function asRoot(dir: DirRef): RootRef {
  return { ...dir };
}

export interface AnchorResult {
  /** The deepest existing directory at or above the requested one, held open. */
  readonly anchor: RootRef;
  /** The components below the anchor that do not exist yet. */
  readonly missing: readonly string[];
}

/** Opens the deepest existing directory at or above `target` (absolute, normalised). */
export function* anchorAt(target: string, held: Held): Plan<AnchorResult> {
  const missing: string[] = [];
  let cur = target;
  for (;;) {
    const ref = yield* openByPath(cur, held);
    if (ref !== undefined) return { anchor: ref, missing: missing.reverse() };
    const parent = path.dirname(cur);
    if (parent === cur) {
      throw new FsPolicyError({ code: 'ENOENT', step: 'resolve', path: target, message: `no existing directory above ${target}` });
    }
    missing.push(path.basename(cur));
    cur = parent;
  }
}
