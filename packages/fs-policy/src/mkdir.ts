import * as path from 'node:path';
import { currentUid, errnoCode, FsPolicyError, toPolicyError } from './errors.js';
import { type HermesEnvironment, loadEnvironment } from './env.js';
import { call, O, type Plan, runAsync, runSync } from './internal/io.js';
import { bestEffort, isInside, levels, lstatOrNull, op } from './internal/steps.js';
import { getLogger } from './logger.js';
import { dirModeFor, getKind, type KindRef } from './registry.js';

export interface SecureMkdirOptions {
  /** The resolved environment; loaded from process.env when omitted. */
  env?: HermesEnvironment;
  /**
   * Links at or below this directory must stay inside it (default: the Hermes home). Links above it are
   * the operator's business and are followed.
   */
  root?: string;
}

export interface MkdirResult {
  /** The directory, absolute. */
  readonly path: string;
  /** Every level this call created, outermost first. Levels that existed are not listed (and not touched). */
  readonly created: readonly string[];
  /** The final mode (permission bits incl. setgid) of the directory. */
  readonly mode: number;
  /** Things left as they were that a user should know about (e.g. an ownership change refused). */
  readonly warnings: readonly string[];
}

function danglingError(link: string, target: string): FsPolicyError {
  return new FsPolicyError({
    code: 'EDANGLING_LINK',
    step: 'resolve',
    path: link,
    message: `Directory link is unavailable: ${link} -> ${target} (its target does not exist or is not mounted); nothing was created`,
  });
}

/** @internal The plan behind secureMkdir; other primitives embed it. */
export function* secureMkdirPlan(
  dir: string,
  ref: KindRef,
  env: HermesEnvironment,
  rootOption?: string,
): Plan<MkdirResult> {
  const kind = getKind(ref);
  const target = path.resolve(dir);
  const root = path.resolve(rootOption ?? env.home);
  const mode = dirModeFor(kind, env);
  const created: string[] = [];
  const warnings: string[] = [];
  let realRoot: string | undefined;
  let finalMode = 0;

  // Fast path for the common case (the directory exists, nothing in the chain below the root is a link):
  // one lstat per level below the root, none above it.
  if (isInside(target, root)) {
    const st = yield* lstatOrNull(target);
    if (st?.isDirectory() === true) {
      let linked = false;
      for (let level = path.dirname(target); level !== root && isInside(level, root); level = path.dirname(level)) {
        const lst = yield* lstatOrNull(level);
        if (lst?.isDirectory() !== true) {
          linked = true;
          break;
        }
      }
      if (!linked) return { path: target, created, mode: st.mode & 0o7777, warnings };
    }
  }

  const home = path.resolve(env.home);
  for (const level of levels(target)) {
    let st = yield* lstatOrNull(level);
    if (st === undefined) {
      if (level === home) refuseToInventHome(home, env);
      try {
        yield* call('mkdir', level, 'mkdir', level, mode ?? 0o777);
      } catch (err) {
        if (errnoCode(err) !== 'EEXIST') throw toPolicyError(err, 'mkdir', level, `mkdir ${level}`);
        st = yield* lstatOrNull(level); // lost a race with another creator: treat as existing
      }
      if (st === undefined) {
        created.push(level);
        finalMode = yield* applyCreatedDirMode(level, mode, kind.ownership, env, warnings);
        continue;
      }
    }
    if (st.isSymbolicLink()) {
      const linkText = yield* op('resolve', level, 'readlink', level);
      let resolved;
      try {
        resolved = yield* call('resolve', level, 'stat', level);
      } catch (err) {
        if (errnoCode(err) === 'ENOENT') throw danglingError(level, linkText);
        throw toPolicyError(err, 'resolve', level, `stat ${level}`);
      }
      if (!resolved.isDirectory()) {
        throw new FsPolicyError({
          code: 'ENOTDIR',
          step: 'resolve',
          path: level,
          message: `${level} -> ${linkText} is a link to something that is not a directory`,
        });
      }
      if (isInside(level, root) && level !== root) {
        realRoot ??= yield* op('resolve', root, 'realpath', root);
        const real = yield* op('resolve', level, 'realpath', level);
        if (!isInside(real, realRoot)) {
          throw new FsPolicyError({
            code: 'ESYMLINK_ESCAPE',
            step: 'resolve',
            path: level,
            message: `${level} -> ${linkText} leads outside ${root} (to ${real}); refusing to create or write through it`,
          });
        }
      }
      finalMode = resolved.mode & 0o7777;
      continue;
    }
    if (!st.isDirectory()) {
      throw new FsPolicyError({
        code: 'ENOTDIR',
        step: 'mkdir',
        path: level,
        message: `${level} exists and is not a directory`,
      });
    }
    finalMode = st.mode & 0o7777;
  }
  return { path: target, created, mode: finalMode, warnings };
}

/**
 * The home itself is never invented where its absence means something: a managed home is created by the
 * package manager, and a missing named profile was deleted (or never created) on purpose.
 */
function refuseToInventHome(home: string, env: HermesEnvironment): void {
  if (env.managed.managed) {
    throw new FsPolicyError({
      code: 'EMANAGED_MISSING',
      step: 'mkdir',
      path: home,
      message: `Required directory does not exist: ${home} (managed install: the package manager creates the home)`,
    });
  }
  if (path.basename(path.dirname(home)) === 'profiles') {
    throw new FsPolicyError({
      code: 'EPROFILE_MISSING',
      step: 'mkdir',
      path: home,
      message: `Named profile home does not exist: ${home}; refusing to recreate it`,
    });
  }
}

/** Sets the exact mode (and configured owner) of a directory this call just created, through its fd. */
function* applyCreatedDirMode(
  level: string,
  mode: number | null,
  ownership: boolean,
  env: HermesEnvironment,
  warnings: string[],
): Plan<number> {
  const fd = yield* op('open', level, 'open', level, O.RDONLY | O.DIRECTORY | O.NOFOLLOW, 0);
  try {
    if (mode !== null) {
      // mkdir(2) masks with the umask and never sets setgid; fchmod makes the mode exact.
      yield* op('fchmod', level, 'fchmod', fd, mode);
      const wantsOwner = ownership && (env.uid !== undefined || env.gid !== undefined);
      if (wantsOwner) {
        const ok = yield* bestEffort(warnings, 'fchown', level, 'fchown', fd, env.uid ?? -1, env.gid ?? -1);
        if (!ok) {
          getLogger().warn('HERMES_UID/HERMES_GID not applied (needs root); directory left owned by the process', {
            path: level,
            uid: currentUid(),
          });
        }
      }
    }
    const st = yield* op('lstat', level, 'fstat', fd);
    return st.mode & 0o7777;
  } finally {
    yield* bestEffort(warnings, 'close', level, 'close', fd);
  }
}

/**
 * Creates `dir` and any missing parents for an artifact `kind`. Every level this call creates gets the
 * kind's mode exactly (managed installs: no explicit mode, so the setgid parent and the service umask
 * decide); levels that already existed are left untouched. A dangling link in the chain, or a link below
 * the root that leads out of it, is refused with a diagnostic and its target is never created.
 */
export async function secureMkdir(dir: string, kind: KindRef, options: SecureMkdirOptions = {}): Promise<MkdirResult> {
  const env = options.env ?? loadEnvironment();
  return runAsync(secureMkdirPlan(dir, kind, env, options.root));
}

/** Synchronous form of {@link secureMkdir}, for shutdown paths. */
export function secureMkdirSync(dir: string, kind: KindRef, options: SecureMkdirOptions = {}): MkdirResult {
  const env = options.env ?? loadEnvironment();
  return runSync(secureMkdirPlan(dir, kind, env, options.root));
}
