import type * as fs from 'node:fs';
import * as path from 'node:path';
import { errnoCode, FsPolicyError } from './errors.js';
import { type HermesEnvironment, loadEnvironment } from './env.js';
import { atFd, selfFd } from './internal/anchor.js';
import { call, O, type Plan, runSync } from './internal/io.js';
import { chainCheckPlan, reachDirPlan } from './internal/reach.js';
import { anchorAt, at, checkName, dirFlags, type DirRef, Held, lstatAt, materialize, realOf, statOf } from './internal/resolve.js';

/** One entry met by {@link scanTreeSync}. */
export interface ScanEntry {
  /** Absolute logical path (the root's path joined with `rel`). */
  readonly path: string;
  /** Path relative to the root (`''` for the root itself). */
  readonly rel: string;
  readonly name: string;
  /** `lstat` of the entry, taken relative to its parent's descriptor. */
  readonly stat: fs.Stats;
  /** For a symbolic link: its text (never followed). */
  readonly linkText?: string;
}

export interface ScanVisitor {
  /** Return false to skip descending into this directory. */
  directory(entry: ScanEntry): boolean | undefined;
  file(entry: ScanEntry): void;
  symlink(entry: ScanEntry): void;
  /** FIFOs, sockets and devices: reported, never opened. */
  other?(entry: ScanEntry): void;
}

export interface ScanResult {
  /** `fstat` of the root as it was opened (an auditor compares later repairs of the root with it). */
  readonly root: fs.Stats;
  /** The root's real path, read from its descriptor. */
  readonly realPath: string;
  /** Entries that could not be read (`code`), or that changed under the scan (`ERACE`). */
  readonly errors: readonly { path: string; code: string }[];
  /**
   * Directories the walk met but did not enter because they lie deeper than {@link MAX_TREE_DEPTH}: nothing
   * below them was visited. Empty when the whole tree was walked.
   */
  readonly tooDeep: readonly TooDeep[];
}

/**
 * How deep the tree walks ({@link scanTreeSync}, the sweep) go below their root: a directory at this depth is
 * still visited, its subdirectories are reported as {@link TooDeep} and not entered. Bounds the descriptors
 * and the stack a walk uses on a tree a member of the group built to exhaust them.
 */
export const MAX_TREE_DEPTH = 256;

/** A limit a walk met: the directory at `path` (at `depth` levels below the root) was not entered. */
export interface TooDeep {
  readonly type: 'too-deep';
  readonly path: string;
  readonly depth: number;
  readonly limit: number;
}

interface ScanOut {
  readonly errors: { path: string; code: string }[];
  readonly tooDeep: TooDeep[];
}

function* scanDir(dir: DirRef, rel: string, visitor: ScanVisitor, out: ScanOut, held: Held, depth: number): Plan<void> {
  const { errors } = out;
  let names: fs.Dirent[];
  try {
    names = yield* call('readdir', dir.path, 'readdir', selfFd(dir.fd, dir.path));
  } catch (err) {
    errors.push({ path: dir.path, code: errnoCode(err) ?? 'EUNKNOWN' });
    return;
  }
  names.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const descend: ScanEntry[] = [];
  for (const d of names) {
    const full = path.join(dir.path, d.name);
    const relName = rel === '' ? d.name : `${rel}/${d.name}`;
    let st: fs.Stats | undefined;
    try {
      st = yield* lstatAt(dir, d.name, full);
    } catch (err) {
      errors.push({ path: full, code: err instanceof FsPolicyError ? err.code : 'EUNKNOWN' });
      continue;
    }
    if (st === undefined) continue; // removed meanwhile
    const entry: ScanEntry = { path: full, rel: relName, name: d.name, stat: st };
    if (st.isSymbolicLink()) {
      let text = '?';
      try {
        text = yield* call('resolve', full, 'readlink', at(dir, d.name));
      } catch {
        // replaced meanwhile: the link's text is unknown
      }
      visitor.symlink({ ...entry, linkText: text });
    } else if (st.isDirectory()) {
      if (visitor.directory(entry) !== false) descend.push(entry);
    } else if (st.isFile()) {
      visitor.file(entry);
    } else {
      visitor.other?.(entry);
    }
  }
  if (depth >= MAX_TREE_DEPTH) {
    // Said, never silent: each directory left unvisited is named with its depth.
    for (const sub of descend) out.tooDeep.push({ type: 'too-deep', path: sub.path, depth: depth + 1, limit: MAX_TREE_DEPTH });
    return;
  }
  for (const sub of descend) {
    let fd: number;
    try {
      fd = yield* call('resolve', sub.path, 'open', at(dir, sub.name), dirFlags() | O.NOFOLLOW, 0);
    } catch (err) {
      const code = errnoCode(err);
      // Replaced by a link or a file between lstat and open: not entered.
      errors.push({ path: sub.path, code: code === 'ELOOP' || code === 'ENOTDIR' || code === 'ENOENT' ? 'ERACE' : (code ?? 'EUNKNOWN') });
      continue;
    }
    const ref = held.add<DirRef>({ fd, path: sub.path });
    const st = yield* statOf(ref, held);
    if (st.dev !== sub.stat.dev || st.ino !== sub.stat.ino) {
      errors.push({ path: sub.path, code: 'ERACE' });
    } else {
      yield* scanDir(ref, sub.rel, visitor, out, held, depth + 1);
    }
    yield* held.releaseOne(ref);
  }
}

function* scanPlan(rootPath: string, visitor: ScanVisitor): Plan<ScanResult> {
  const held = new Held();
  const out: ScanOut = { errors: [], tooDeep: [] };
  const root = path.resolve(rootPath);
  try {
    const { anchor, missing } = yield* anchorAt(root, held);
    if (missing.length > 0) throw new FsPolicyError({ code: 'ENOENT', step: 'resolve', path: root, message: `${root} does not exist` });
    const rootStat = yield* statOf(anchor, held);
    const realPath = yield* realOf(anchor);
    if (visitor.directory({ path: root, rel: '', name: path.basename(root), stat: rootStat }) !== false) {
      yield* scanDir(anchor, '', visitor, out, held, 0);
    }
    return { root: rootStat, realPath, errors: out.errors, tooDeep: out.tooDeep };
  } finally {
    yield* held.release();
  }
}

/**
 * Walks a tree through directory descriptors, for auditors: every entry is `lstat`ed relative to its parent's
 * descriptor, a directory is entered only through a descriptor opened without following a link and checked to
 * be the one just seen, links are reported with their text and never followed, FIFOs and devices are reported
 * and never opened. An entry swapped under the scan is reported as `ERACE`, not entered. Directories deeper
 * than {@link MAX_TREE_DEPTH} are visited but not entered, and listed in `tooDeep`: no limit is silent.
 */
export function scanTreeSync(root: string, visitor: ScanVisitor): ScanResult {
  return runSync(scanPlan(root, visitor));
}

/**
 * The check made before acting on a home as root (or as any uid other processes could redirect): every
 * directory above it must be owned by root or the home's owner — not HERMES_UID, which only names the uid
 * created files are given to — and writable by nobody else (sticky directories excepted), every link on the
 * way must sit in such a directory, and the home must not be `/`. A home that does not exist yet has no owner:
 * only root is trusted on the way to it. With `uid` (HERMES_UID) given, the home must belong to root or to that
 * uid. Returns the home's `lstat` after resolving links; throws `EUNSAFE_PATH` (naming the directory others
 * could change), `EFOREIGN_OWNER` or `EDANGEROUS_HOME`.
 */
export function checkHomeChainSync(home: string, env: { readonly uid?: number | undefined }): fs.Stats {
  const top = path.resolve(home);
  if (top === path.parse(top).root) {
    throw new FsPolicyError({ code: 'EDANGEROUS_HOME', step: 'resolve', path: top, message: `refusing to use ${top} as the Hermes home: it is the filesystem root` });
  }
  return runSync(chainCheckPlan(top, env));
}

/** A directory held open for a batch of operations on its entries (see {@link holdDirectorySync}). */
export interface HeldDirectory {
  /** The directory's logical path: use it in messages and reports. */
  readonly path: string;
  /** A path that reaches the directory itself through its descriptor (for `opendir`/`readdir`). */
  readonly self: string;
  /**
   * The path to pass to an fs call for the entry `name` (one component) of this directory: resolved relative to
   * the held descriptor on Linux, so whatever is renamed or linked in place of the directory meanwhile, the call
   * acts here. Never show it: messages use {@link HeldDirectory.display}.
   */
  at(name: string): string;
  /**
   * Opens the entry `name` (one component) of this directory, like `fs.openSync(at(name), flags, mode)`: the
   * same call on the held descriptor, made with `openat` when the native layer is in force (no `/proc` walk).
   * Errors are `fs`-shaped (code, errno, a descriptor path: pass them through {@link HeldDirectory.explain}).
   */
  openSync(name: string, flags: number, mode?: number): number;
  /** Removes the entry `name` of this directory, like `fs.unlinkSync(at(name))` (`unlinkat` when native). */
  unlinkSync(name: string): void;
  /** The logical path of `name` in this directory (for messages and reports). */
  display(name: string): string;
  /** An fs error with its message and `path` rewritten from the descriptor path to the logical one. */
  explain<E>(err: E): E;
  close(): void;
}

/**
 * Opens a directory for repeated operations on its entries (a spool, say), reached the way every primitive
 * reaches its directory: the home (or `root`) by path, every level below it through descriptors, a link that
 * leaves the root refused. Operations made through {@link HeldDirectory.at} then act on this very directory
 * even if a member of the service group swaps it for a link. ENOENT (typed) when it does not exist.
 * `intent` (default `write`) says whether the caller will change entries: without descriptors (fallback mode)
 * a privileged process is always refused, and a `write` into a shared home too (`EUNSAFE_FALLBACK`).
 */
export function holdDirectorySync(dir: string, options: { env?: HermesEnvironment; root?: string; intent?: 'read' | 'write' } = {}): HeldDirectory {
  const env = options.env ?? loadEnvironment();
  const held = new Held();
  let ref: DirRef;
  try {
    ref = runSync(reachDirPlan(dir, { env, root: options.root, intent: options.intent }, held)).dir;
    runSync(materialize(ref, held));
  } catch (err) {
    runSync(held.release());
    throw err;
  }
  // Keep only the directory's own descriptor; the levels above it are closed now.
  runSync(held.releaseAllBut(ref));
  const logical = path.resolve(dir);
  const self = selfFd(ref.fd, logical);
  const prefix = `${self}/`;
  let closed = false;
  // A closed directory's descriptor number may already name another file: never act through it.
  const usable = (name: string): void => {
    checkName(name, path.join(logical, name));
    if (closed) {
      throw new FsPolicyError({ code: 'EUNEXPECTED', step: 'resolve', path: path.join(logical, name), message: `${logical} is no longer held; refusing to act on ${name} through it`, hint: 'hold the directory again; this is a bug of the caller.' });
    }
  };
  const heldDir: HeldDirectory = {
    path: logical,
    self,
    at(name) {
      checkName(name, path.join(logical, name));
      return atFd(ref.fd, logical, name);
    },
    openSync(name, flags, mode = 0o600) {
      usable(name);
      return runSync(call('open', path.join(logical, name), 'open', atFd(ref.fd, logical, name), flags, mode));
    },
    unlinkSync(name) {
      usable(name);
      runSync(call('unlink', path.join(logical, name), 'unlink', atFd(ref.fd, logical, name)));
    },
    display(name) {
      return path.join(logical, name);
    },
    explain(err) {
      const fix = (text: string): string => text.split(prefix).join(`${logical}/`).split(self).join(logical);
      if (err instanceof Error) {
        err.message = fix(err.message);
        const e = err as Error & { path?: unknown; dest?: unknown };
        if (typeof e.path === 'string') e.path = fix(e.path);
        if (typeof e.dest === 'string') e.dest = fix(e.dest);
      }
      return err;
    },
    close() {
      if (closed) return;
      closed = true;
      heldRefs.delete(heldDir);
      // A write still using the descriptor keeps it open until it settles: closing it now would free its number
      // for the next open, and the write would go on in whatever directory got it.
      if (lease.users === 0) runSync(held.release());
      else lease.closing = true;
    },
  };
  const lease: Lease = {
    ref,
    users: 0,
    closing: false,
    release: () => {
      runSync(held.release());
    },
  };
  heldRefs.set(heldDir, lease);
  return heldDir;
}

interface Lease {
  readonly ref: DirRef;
  /** Operations using the descriptor now. */
  users: number;
  /** close() was called while some were: the last one closes it. */
  closing: boolean;
  readonly release: () => void;
}

/** The descriptor behind each open {@link HeldDirectory} (for primitives that act relative to it). */
const heldRefs = new WeakMap<HeldDirectory, Lease>();

/**
 * @internal The directory reference of a held directory, for one operation on its entries: the descriptor stays
 * open until `done()`, even if the directory is closed meanwhile. Throws EBADF (typed) once it is closed, or for
 * an object {@link holdDirectorySync} did not return.
 */
export function leaseHeldDir(dir: HeldDirectory): { readonly ref: DirRef; done(): void } {
  const lease = heldRefs.get(dir);
  if (lease === undefined) {
    throw new FsPolicyError({ code: 'EBADF', step: 'resolve', path: dir.path, message: `${dir.path} is not held (closed, or not from holdDirectorySync)` });
  }
  lease.users++;
  let done = false;
  return {
    ref: lease.ref,
    done() {
      if (done) return;
      done = true;
      lease.users--;
      if (lease.users === 0 && lease.closing) lease.release();
    },
  };
}
