import * as path from 'node:path';
import { currentUid, errnoCode, FsPolicyError, toPolicyError } from './errors.js';
import { type HermesEnvironment, loadEnvironment } from './env.js';
import { call, O, type Plan, runAsync, runSync } from './internal/io.js';
import { bestEffort, lstatOrNull, op } from './internal/steps.js';
import { getLogger } from './logger.js';
import { dirModeFor, fileMaxModeFor, formatMode, getKind, type KindRef } from './registry.js';

export interface ReconcileOptions {
  env?: HermesEnvironment;
  /**
   * The operator's explicit repair (`hermes-fs doctor --fix`): on a managed install a directory missing
   * group rwx or setgid is widened (a legacy 0700 becomes 2770). Runtime code never passes this.
   */
  operator?: boolean;
  /** Report what would change without changing it. */
  dryRun?: boolean;
}

export type ReconcileAction = 'none' | 'changed' | 'would-change' | 'left';

export interface ReconcileResult {
  readonly path: string;
  readonly action: ReconcileAction;
  /** Permission bits before, or null when the directory does not exist. */
  readonly before: number | null;
  readonly after: number | null;
  /** The mode policy asks for, or null when policy asks nothing of this directory. */
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

const LEAVE_CODES = new Set(['EPERM', 'EROFS', 'ENOTSUP', 'EOPNOTSUPP', 'EINVAL']);

function* reconcilePlan(dir: string, ref: KindRef, env: HermesEnvironment, options: ReconcileOptions): Plan<ReconcileResult> {
  getKind(ref);
  const target = path.resolve(dir);
  const warnings: string[] = [];
  const st = yield* lstatOrNull(target);
  if (st === undefined) return { path: target, action: 'none', before: null, after: null, expected: null, warnings };
  if (st.isSymbolicLink()) {
    warnings.push(`${target} is a symbolic link; its target's mode is the operator's and is left as it is`);
    return { path: target, action: 'left', before: null, after: null, expected: null, warnings };
  }
  if (!st.isDirectory()) {
    throw new FsPolicyError({ code: 'ENOTDIR', step: 'lstat', path: target, message: `${target} is not a directory` });
  }
  const before = st.mode & 0o7777;
  const expected = expectedDirMode(before, ref, env, options.operator === true);
  if (expected === null || expected === before) {
    return { path: target, action: 'none', before, after: before, expected, warnings };
  }
  const uid = currentUid();
  if (uid !== 0 && st.uid !== uid) {
    const line = `${target} is owned by uid ${st.uid}, not ${uid}: mode ${formatMode(before)} left as it is (policy asks ${formatMode(expected)})`;
    warnings.push(line);
    getLogger().warn(line, { path: target, uid });
    return { path: target, action: 'left', before, after: before, expected, warnings };
  }
  if (options.dryRun === true) return { path: target, action: 'would-change', before, after: before, expected, warnings };
  const fd = yield* op('open', target, 'open', target, O.RDONLY | O.DIRECTORY | O.NOFOLLOW, 0);
  try {
    try {
      yield* call('fchmod', target, 'fchmod', fd, expected);
    } catch (err) {
      const code = errnoCode(err);
      if (code !== undefined && LEAVE_CODES.has(code)) {
        const line = `${target}: chmod ${formatMode(expected)} refused (${code}); mode ${formatMode(before)} left as it is`;
        warnings.push(line);
        getLogger().warn(line, { path: target, code, uid });
        return { path: target, action: 'left', before, after: before, expected, warnings };
      }
      throw toPolicyError(err, 'fchmod', target, `chmod ${target}`);
    }
    const afterSt = yield* op('lstat', target, 'fstat', fd);
    return { path: target, action: 'changed', before, after: afterSt.mode & 0o7777, expected, warnings };
  } finally {
    yield* bestEffort(warnings, 'close', target, 'close', fd);
  }
}

/**
 * Brings an existing directory to the mode policy asks for, through an fd opened without following links.
 * Guarded: a directory owned by someone else, a link, or a refused chmod (EPERM, EROFS, …) is left as it
 * is and reported as a warning; runtime code never changes a managed directory.
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
  /** Report what would change without changing it. */
  dryRun?: boolean;
}

function* reconcileFilePlan(file: string, ref: KindRef, env: HermesEnvironment, options: ReconcileFileOptions): Plan<ReconcileResult> {
  const target = path.resolve(file);
  const warnings: string[] = [];
  const st = yield* lstatOrNull(target);
  if (st === undefined) return { path: target, action: 'none', before: null, after: null, expected: null, warnings };
  if (st.isSymbolicLink()) {
    warnings.push(`${target} is a symbolic link; its target is left as it is`);
    return { path: target, action: 'left', before: null, after: null, expected: null, warnings };
  }
  if (!st.isFile()) {
    throw new FsPolicyError({ code: 'ENOTREGULAR', step: 'lstat', path: target, message: `${target} is not a regular file` });
  }
  const before = st.mode & 0o7777;
  // Only ever remove group/other bits the policy does not allow; never widen, never touch the owner's.
  const excess = before & 0o077 & ~fileMaxModeFor(ref, env);
  const expected = before & ~excess;
  if (excess === 0) return { path: target, action: 'none', before, after: before, expected, warnings };
  const uid = currentUid();
  if (uid !== 0 && st.uid !== uid) {
    const line = `${target} is owned by uid ${st.uid}, not ${uid}: mode ${formatMode(before)} left as it is (policy allows ${formatMode(expected)} at most)`;
    warnings.push(line);
    getLogger().warn(line, { path: target, uid });
    return { path: target, action: 'left', before, after: before, expected, warnings };
  }
  if (options.dryRun === true) return { path: target, action: 'would-change', before, after: before, expected, warnings };
  const fd = yield* op('open', target, 'open', target, O.RDONLY | O.NOFOLLOW | O.NONBLOCK, 0);
  try {
    const fst = yield* op('open', target, 'fstat', fd);
    if (fst.ino !== st.ino || fst.dev !== st.dev) {
      warnings.push(`${target} was replaced while being checked; left as it is`);
      return { path: target, action: 'left', before, after: before, expected, warnings };
    }
    yield* op('fchmod', target, 'fchmod', fd, expected);
    return { path: target, action: 'changed', before, after: expected, expected, warnings };
  } finally {
    yield* bestEffort(warnings, 'close', target, 'close', fd);
  }
}

/**
 * The operator's repair of an existing file (`hermes-fs doctor --fix`): removes group/other permission bits
 * the kind does not allow (owner-only unmanaged; at most group rw when managed) through an fd opened
 * without following links. Never widens; a link, or a file owned by someone else, is left and reported.
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
