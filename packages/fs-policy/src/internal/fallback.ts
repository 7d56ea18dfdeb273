/**
 * Failing closed without descriptors.
 *
 * In `fallback` mode (no usable `/proc/self/fd`, see `anchor.ts`) every name is reached by path and checked
 * by `dev`/`ino` afterwards: a rename between two steps can go unnoticed, so whoever can rename entries on the
 * way can redirect the operation. That is acceptable only for a single user acting on a home nobody else can
 * write. Refused with `EUNSAFE_FALLBACK`:
 *
 * - every operation of a privileged actor: euid 0, or `HERMES_UID`/`HERMES_GID` set (the process acts for
 *   another uid);
 * - every write, create, chmod or chown into a group-shared home: managed, `HERMES_HOME_MODE` with group or
 *   other write, or a top directory that its group or others can write (non-sticky).
 *
 * The only way past is the explicit opt-in: `HERMES_ALLOW_PATH_FALLBACK=1` in the environment together with
 * `loadEnvironment({ allowPathFallback: true })` (which sets `env.allowPathFallback`); it is logged.
 */
import type * as fs from 'node:fs';
import { currentUid, FsPolicyError } from '../errors.js';
import type { HermesEnvironment } from '../env.js';
import { getLogger } from '../logger.js';
import { anchorMode, fallbackReason } from './anchor.js';

/** What an operation does to the tree: `write` covers create, write, rename, unlink, chmod and chown. */
export type Intent = 'read' | 'write';

/** The part of the environment the gate reads. */
export type FallbackEnv = Pick<HermesEnvironment, 'uid' | 'gid' | 'managed' | 'homeMode'> & {
  readonly allowPathFallback?: boolean | undefined;
};

function blank(v: string | undefined): boolean {
  return v === undefined || v.trim() === '';
}

/**
 * Why this process acts for others, or undefined: euid 0, or HERMES_UID/HERMES_GID given (by the environment
 * object, or — for operations without one — by the process's own variables).
 */
export function privilegeOf(env: Pick<HermesEnvironment, 'uid' | 'gid'> | undefined): string | undefined {
  if (currentUid() === 0) return 'the process runs as root (euid 0)';
  const uidSet = env === undefined ? !blank(process.env.HERMES_UID) : env.uid !== undefined;
  const gidSet = env === undefined ? !blank(process.env.HERMES_GID) : env.gid !== undefined;
  if (uidSet || gidSet) return `${uidSet ? 'HERMES_UID' : 'HERMES_GID'} is set (the process acts for another uid)`;
  return undefined;
}

/** Why others may rename entries in this home by its configuration (managed, or a group/other-writable HERMES_HOME_MODE), or undefined. */
export function sharedHomeReason(env: Pick<HermesEnvironment, 'managed' | 'homeMode'>): string | undefined {
  if (env.managed.managed) return 'the home is a managed, group-shared install';
  if ((env.homeMode.mode & 0o022) !== 0) return `HERMES_HOME_MODE=0${env.homeMode.mode.toString(8)} lets others write the home`;
  return undefined;
}

/** Why others may rename entries in the directory `st` describes (group/other write, not sticky), or undefined. */
export function sharedDirReason(dir: string, st: fs.Stats): string | undefined {
  if ((st.mode & 0o022) === 0 || (st.mode & 0o1000) !== 0) return undefined;
  return `${dir} is writable by ${(st.mode & 0o020) !== 0 ? 'its group' : 'others'} (mode ${(st.mode & 0o7777).toString(8).padStart(4, '0')})`;
}

const logged = new Set<string>();

function logOnce(level: 'warn' | 'error', message: string, fields: Record<string, unknown>): void {
  if (logged.has(message)) return;
  if (logged.size >= 256) logged.clear();
  logged.add(message);
  getLogger()[level](message, fields);
}

export interface FallbackRequest {
  /** The path the operation was asked to act on (named in the error). */
  readonly path: string;
  readonly intent: Intent;
  /** The environment of the operation; undefined for primitives that take none (privilege then comes from the process). */
  readonly env?: FallbackEnv | undefined;
  /** Evidence that the tree is shared (a reason in words), beyond what `env` says. */
  readonly shared?: string | undefined;
}

/**
 * In fallback mode, throws `EUNSAFE_FALLBACK` (logged once per reason with the path and the fix) when the actor
 * is privileged, or when it writes into a shared tree — unless the environment carries the explicit opt-in,
 * which is then logged as a warning. A no-op in `procfd` mode.
 */
export function refuseUnsafeFallback(req: FallbackRequest): void {
  if (anchorMode() !== 'fallback') return;
  const shared = req.intent === 'write' ? (req.shared ?? (req.env === undefined ? undefined : sharedHomeReason(req.env))) : undefined;
  const why = privilegeOf(req.env) ?? shared;
  if (why === undefined) return;
  const reason = fallbackReason() ?? 'reason unknown';
  if (req.env?.allowPathFallback === true) {
    logOnce('warn', `acting by path although ${why}: descriptors are unavailable (${reason}); allowed by HERMES_ALLOW_PATH_FALLBACK=1 and allowPathFallback, so a concurrent rename can redirect this operation`, {
      path: req.path,
    });
    return;
  }
  const err = new FsPolicyError({
    code: 'EUNSAFE_FALLBACK',
    step: 'resolve',
    path: req.path,
    message: `refusing to ${req.intent === 'write' ? 'change' : 'read'} ${req.path} by path: descriptors are unavailable (${reason}) and ${why}`,
  });
  logOnce('error', err.detail, { path: req.path, code: err.code, errno: null, hint: err.hint });
  throw err;
}
