import type * as fs from 'node:fs';
import * as path from 'node:path';
import { currentUid, errnoCode, FsPolicyError, toPolicyError } from './errors.js';
import { type HermesEnvironment, loadEnvironment } from './env.js';
import { anchorMode, O_PATH, selfFd } from './internal/anchor.js';
import { call, O, type Plan, runAsync, runSync } from './internal/io.js';
import { boundaryFor, reachDirPlan } from './internal/reach.js';
import { at, checkName, checkRawPath, type DirRef, Held, heldAsPath, lstatAt, statOf } from './internal/resolve.js';
import { op } from './internal/steps.js';
import { getLogger } from './logger.js';
import { dirModeFor, fileMaxModeFor, formatMode, getKind, type KindRef } from './registry.js';

/**
 * What an audit saw of an entry. A repair made later acts only if the descriptor it opens still shows the
 * same object (`dev`, `ino`, type, owner, link count); anything that changed is left and reported.
 */
export interface ExpectedEntry {
  readonly dev: number;
  readonly ino: number;
  readonly type: 'dir' | 'file';
  readonly uid?: number;
  readonly nlink?: number;
}

export interface ReconcileOptions {
  env?: HermesEnvironment;
  /**
   * The operator's explicit repair (`hermes-fs doctor --fix`): on a managed install a directory missing
   * group rwx or setgid is widened (a legacy 0700 becomes 2770). Runtime code never passes this.
   */
  operator?: boolean;
  /** Report what would change without changing it. */
  dryRun?: boolean;
  /** Act only if the directory is still what an audit saw. */
  expect?: ExpectedEntry;
  /** Links below this root must stay inside it (default: the home). */
  root?: string;
}

export type ReconcileAction = 'none' | 'changed' | 'would-change' | 'left';

export interface ReconcileResult {
  readonly path: string;
  readonly action: ReconcileAction;
  /** Permission bits before, or null when the entry does not exist. */
  readonly before: number | null;
  readonly after: number | null;
  /** The mode policy asks for, or null when policy asks nothing of this entry. */
  readonly expected: number | null;
  readonly warnings: readonly string[];
}

/**
 * The mode policy wants for an existing directory of `kind`: unmanaged, the kind's mode; managed, the
 * current mode plus group rwx and setgid — but only for the operator; the runtime asks nothing (null).
 */
export function expectedDirMode(current: number, ref: KindRef, env: HermesEnvironment, operator: boolean): number | null {
  if (!env.managed.managed) return dirModeFor(ref, env);
  if (!operator) return null;
  return (current | 0o2070) & 0o7777;
}

/**
 * True when tightening `before` to `expected` would take group access from a setgid, group-shared directory
 * (the managed layout) although nothing trusted said the install is unmanaged — neither HERMES_MANAGED nor a
 * trusted marker (an untrusted or unreadable one decides nothing). Tightening it then would be the seeds' bug
 * on a guess: the service group's other uid loses access to its own home.
 */
function unguardedTightening(before: number, expected: number, env: HermesEnvironment): boolean {
  if (env.managed.managed || env.managed.source === 'env' || env.managed.source === 'marker') return false;
  const sharedLayout = (before & 0o2000) !== 0 && (before & 0o070) !== 0;
  return sharedLayout && (before & 0o070 & ~expected) !== 0;
}

const LEAVE_CODES = new Set(['EPERM', 'EROFS', 'ENOTSUP', 'EOPNOTSUPP', 'EINVAL']);

interface Opened {
  readonly fd: number;
  readonly st: fs.Stats;
  /** True for an O_PATH descriptor: the mode is changed through `/proc/self/fd/<fd>`, never by opening the file. */
  readonly pathOnly: boolean;
}

type Entry = { kind: 'missing' } | { kind: 'link' } | { kind: 'open'; entry: Opened };

/**
 * Opens the entry `target` without following a link at its last component: a directory with
 * `O_DIRECTORY`, a file with `O_PATH` (Linux; nothing is opened for I/O, so a FIFO cannot block and a device
 * is never touched), else `O_RDONLY|O_NONBLOCK`. The home itself (the root) is the descriptor `reach` opened.
 */
function* openEntry(target: string, type: 'dir' | 'file', env: HermesEnvironment, root: string | undefined, held: Held): Plan<Entry> {
  const boundary = boundaryFor(target, env, root);
  if (type === 'dir' && boundary === target) {
    let r;
    try {
      r = yield* reachDirPlan(target, { env, root }, held);
    } catch (err) {
      if (err instanceof FsPolicyError && err.code === 'ENOENT') return { kind: 'missing' };
      throw err;
    }
    return { kind: 'open', entry: { fd: r.dir.fd, st: yield* statOf(r.dir, held), pathOnly: heldAsPath() } };
  }
  let parent: DirRef;
  try {
    parent = (yield* reachDirPlan(path.dirname(target), { env, root }, held)).dir;
  } catch (err) {
    if (err instanceof FsPolicyError && err.code === 'ENOENT') return { kind: 'missing' };
    throw err;
  }
  const name = path.basename(target);
  checkName(name, target);
  const pathOnly = type === 'file' && anchorMode() === 'procfd' && O_PATH !== 0;
  const flags =
    type === 'dir' ? O.RDONLY | O.DIRECTORY | O.NOFOLLOW : pathOnly ? O_PATH | O.NOFOLLOW : O.RDONLY | O.NOFOLLOW | O.NONBLOCK;
  let fd: number;
  try {
    fd = yield* call('open', target, 'open', at(parent, name), flags, 0);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT') return { kind: 'missing' };
    if (code === 'ELOOP' || code === 'ENOTDIR' || code === 'ENXIO') {
      const lst = yield* lstatAt(parent, name, target);
      if (lst === undefined) return { kind: 'missing' };
      if (lst.isSymbolicLink()) return { kind: 'link' };
      throw new FsPolicyError({
        code: type === 'dir' ? 'ENOTDIR' : 'ENOTREGULAR',
        step: 'open',
        path: target,
        message: `${target} is not a ${type === 'dir' ? 'directory' : 'regular file'}`,
      });
    }
    throw toPolicyError(err, 'open', target, `open ${target}`);
  }
  const st = yield* op('open', target, 'fstat', fd);
  held.add<DirRef>({ fd, path: target, st });
  if (st.isSymbolicLink()) return { kind: 'link' }; // O_PATH|O_NOFOLLOW opens a link itself
  return { kind: 'open', entry: { fd, st, pathOnly } };
}

/** Whether what is open is still what the audit saw; the reason when not. */
function changedSince(st: fs.Stats, expect: ExpectedEntry | undefined): string | undefined {
  if (expect === undefined) return undefined;
  const type = st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other';
  if (st.dev !== expect.dev || st.ino !== expect.ino) return 'it was replaced by another object';
  if (type !== expect.type) return `it is now a ${type}`;
  if (expect.uid !== undefined && st.uid !== expect.uid) return `its owner changed to uid ${String(st.uid)}`;
  if (expect.nlink !== undefined && st.nlink !== expect.nlink) return `its link count changed to ${String(st.nlink)}`;
  return undefined;
}

function* chmodEntry(entry: Opened, target: string, mode: number): Plan<void> {
  if (entry.pathOnly) yield* call('fchmod', target, 'chmod', selfFd(entry.fd, target), mode);
  else yield* call('fchmod', target, 'fchmod', entry.fd, mode);
}

/** Applies `expected` through the descriptor; a refused chmod (EPERM, EROFS, …) becomes a warning. */
function* applyMode(entry: Opened, target: string, before: number, expected: number, warnings: string[]): Plan<ReconcileResult> {
  try {
    yield* chmodEntry(entry, target, expected);
  } catch (err) {
    const code = errnoCode(err);
    if (code !== undefined && LEAVE_CODES.has(code)) {
      const line = `${target}: chmod ${formatMode(expected)} refused (${code}); mode ${formatMode(before)} left as it is`;
      warnings.push(line);
      getLogger().warn(line, { path: target, code, uid: currentUid() });
      return { path: target, action: 'left', before, after: before, expected, warnings };
    }
    throw toPolicyError(err, 'fchmod', target, `chmod ${target}`);
  }
  const after = yield* op('fchmod', target, 'fstat', entry.fd);
  return { path: target, action: 'changed', before, after: after.mode & 0o7777, expected, warnings };
}

function left(target: string, before: number | null, expected: number | null, warnings: string[], line: string): ReconcileResult {
  warnings.push(line);
  getLogger().warn(line, { path: target, uid: currentUid() });
  return { path: target, action: 'left', before, after: before, expected, warnings };
}

function* reconcilePlan(dir: string, ref: KindRef, env: HermesEnvironment, options: ReconcileOptions): Plan<ReconcileResult> {
  getKind(ref);
  checkRawPath(dir);
  const target = path.resolve(dir);
  const warnings: string[] = [];
  const held = new Held();
  try {
    const e = yield* openEntry(target, 'dir', env, options.root, held);
    if (e.kind === 'missing') return { path: target, action: 'none', before: null, after: null, expected: null, warnings };
    if (e.kind === 'link') {
      warnings.push(`${target} is a symbolic link; its target's mode is the operator's and is left as it is`);
      return { path: target, action: 'left', before: null, after: null, expected: null, warnings };
    }
    const st = e.entry.st;
    const before = st.mode & 0o7777;
    const changed = changedSince(st, options.expect);
    if (changed !== undefined) return left(target, before, null, warnings, `${target} changed since it was audited (${changed}); left as it is`);
    const expected = expectedDirMode(before, ref, env, options.operator === true);
    if (expected === null || expected === before) {
      return { path: target, action: 'none', before, after: before, expected, warnings };
    }
    if (options.operator !== true && unguardedTightening(before, expected, env)) {
      return left(
        target,
        before,
        expected,
        warnings,
        `${target} is setgid and group-shared (mode ${formatMode(before)}, the managed layout) but nothing trusted says whether the install ` +
          `is managed (${env.managed.source === 'unknown' ? 'the .managed marker could not be looked up' : 'no HERMES_MANAGED, no trusted .managed marker'}): ` +
          `left as it is; set HERMES_MANAGED (or have root or the home's owner write the marker), or run hermes-fs doctor --fix --unmanaged`,
      );
    }
    const uid = currentUid();
    if (uid !== 0 && st.uid !== uid) {
      return left(target, before, expected, warnings, `${target} is owned by uid ${String(st.uid)}, not ${String(uid)}: mode ${formatMode(before)} left as it is (policy asks ${formatMode(expected)})`);
    }
    if (options.dryRun === true) return { path: target, action: 'would-change', before, after: before, expected, warnings };
    return yield* applyMode(e.entry, target, before, expected, warnings);
  } finally {
    yield* held.release();
  }
}

/**
 * Brings an existing directory to the mode policy asks for, through a descriptor reached one component at a
 * time from the root (a link at its place is never followed). Guarded: a directory owned by someone else, a
 * link, a directory that changed since the audit (`expect`), or a refused chmod (EPERM, EROFS, …) is left as
 * it is and reported as a warning; runtime code never changes a managed directory, nor takes group access
 * from a setgid group-shared one unless HERMES_MANAGED or a trusted marker said the install is unmanaged.
 */
export async function reconcileDir(dir: string, kind: KindRef, options: ReconcileOptions = {}): Promise<ReconcileResult> {
  const env = options.env ?? loadEnvironment();
  return runAsync(reconcilePlan(dir, kind, env, options));
}

/** Synchronous form of {@link reconcileDir}. */
export function reconcileDirSync(dir: string, kind: KindRef, options: ReconcileOptions = {}): ReconcileResult {
  const env = options.env ?? loadEnvironment();
  return runSync(reconcilePlan(dir, kind, env, options));
}

/** @internal */
export { reconcilePlan };

export interface ReconcileFileOptions {
  env?: HermesEnvironment;
  /**
   * The operator's repair on a managed install: a shared state file (the kind's managed mode follows the
   * service umask, e.g. `state.db`) missing the group read/write the activation grants gets it back (0600 →
   * 0660), so the service group's other uid can open it. Never others' bits. Runtime code never passes this.
   */
  operator?: boolean;
  /** Report what would change without changing it. */
  dryRun?: boolean;
  /** Act only if the file is still what an audit saw. */
  expect?: ExpectedEntry;
  /** Links below this root must stay inside it (default: the home). */
  root?: string;
}

function* reconcileFilePlan(file: string, ref: KindRef, env: HermesEnvironment, options: ReconcileFileOptions): Plan<ReconcileResult> {
  checkRawPath(file);
  const target = path.resolve(file);
  const warnings: string[] = [];
  const held = new Held();
  try {
    const e = yield* openEntry(target, 'file', env, options.root, held);
    if (e.kind === 'missing') return { path: target, action: 'none', before: null, after: null, expected: null, warnings };
    if (e.kind === 'link') {
      warnings.push(`${target} is a symbolic link; its target is left as it is`);
      return { path: target, action: 'left', before: null, after: null, expected: null, warnings };
    }
    const st = e.entry.st;
    if (!st.isFile()) {
      throw new FsPolicyError({ code: 'ENOTREGULAR', step: 'open', path: target, message: `${target} is not a regular file` });
    }
    const before = st.mode & 0o7777;
    // Only ever remove group/other bits the policy does not allow; never widen, never touch the owner's.
    const ceiling = fileMaxModeFor(ref, env);
    const excess = before & 0o077 & ~ceiling;
    const grant = options.operator === true && env.managed.managed && getKind(ref).file.managedMode === 'umask' ? ceiling & 0o060 & ~before : 0;
    const expected = (before & ~excess) | grant;
    const changed = changedSince(st, options.expect);
    if (changed !== undefined) return left(target, before, expected, warnings, `${target} changed since it was audited (${changed}); left as it is`);
    if (excess === 0 && grant === 0) return { path: target, action: 'none', before, after: before, expected, warnings };
    if (st.nlink > 1) {
      return left(target, before, expected, warnings, `${target} has ${String(st.nlink)} hard links (another name, maybe outside the home, shares it): mode ${formatMode(before)} left as it is`);
    }
    const uid = currentUid();
    if (uid !== 0 && st.uid !== uid) {
      return left(target, before, expected, warnings, `${target} is owned by uid ${String(st.uid)}, not ${String(uid)}: mode ${formatMode(before)} left as it is (policy allows ${formatMode(expected)} at most)`);
    }
    if (options.dryRun === true) return { path: target, action: 'would-change', before, after: before, expected, warnings };
    return yield* applyMode(e.entry, target, before, expected, warnings);
  } finally {
    yield* held.release();
  }
}

/**
 * The operator's repair of an existing file (`hermes-fs doctor --fix`): removes group/other permission bits
 * the kind does not allow (owner-only unmanaged; at most group rw when managed) and, with `operator` on a
 * managed install, gives a shared state file back the group rw the service group needs. The file is reached
 * through descriptors and changed through its own descriptor, never opened for I/O. Others' bits are never
 * widened; a link, a hard-linked file, a file owned by someone else, or one that changed since the audit is
 * left and reported.
 */
export async function reconcileFile(file: string, kind: KindRef, options: ReconcileFileOptions = {}): Promise<ReconcileResult> {
  const env = options.env ?? loadEnvironment();
  return runAsync(reconcileFilePlan(file, kind, env, options));
}

/** Synchronous form of {@link reconcileFile}. */
export function reconcileFileSync(file: string, kind: KindRef, options: ReconcileFileOptions = {}): ReconcileResult {
  const env = options.env ?? loadEnvironment();
  return runSync(reconcileFilePlan(file, kind, env, options));
}
