import * as path from 'node:path';
import type * as fs from 'node:fs';
import { errnoCode, FsPolicyError, toPolicyError } from './errors.js';
import { type HermesEnvironment, loadEnvironment } from './env.js';
import { call, O, type Plan, runAsync, runSync } from './internal/io.js';
import { O_PATH } from './internal/anchor.js';
import { homeOwnerPlan, trustedUseOwners } from './internal/owners.js';
import { reachDirPlan } from './internal/reach.js';
import { at, checkName, checkRawPath, type DirRef, Held, raceError } from './internal/resolve.js';
import { bestEffort, op } from './internal/steps.js';
import { verifyForUse } from './internal/verify.js';
import { fileModeFor, getKind, type KindRef } from './registry.js';

export interface EnsureFileOptions {
  kind: KindRef;
  env?: HermesEnvironment;
  root?: string;
}

export interface EnsureFileResult {
  readonly path: string;
  readonly created: boolean;
  readonly mode: number;
  readonly createdDirs: readonly string[];
  readonly warnings: readonly string[];
}

function* ensureFilePlan(file: string, options: EnsureFileOptions, env: HermesEnvironment): Plan<EnsureFileResult> {
  const kind = getKind(options.kind);
  checkRawPath(file);
  const target = path.resolve(file);
  const held = new Held();
  try {
    const reached = yield* reachDirPlan(path.dirname(target), { env, root: options.root, createFor: kind }, held);
    const warnings = [...reached.warnings];
    const name = path.basename(target);
    checkName(name, target);
    const mode = fileModeFor(kind, env);
    let fd: number;
    try {
      fd = yield* call('open', target, 'open', at(reached.dir, name), O.RDONLY | O.CREAT | O.EXCL | O.NOFOLLOW | O.NONBLOCK, mode);
    } catch (err) {
      if (errnoCode(err) !== 'EEXIST') throw toPolicyError(err, 'open', target, `create ${target}`);
      const st = yield* existingStat(reached.dir, name, target, warnings);
      verifyForUse(target, st, trustedUseOwners(env, yield* homeOwnerPlan(reached, env, held, true)));
      return { path: target, created: false, mode: st.mode & 0o7777, createdDirs: reached.created, warnings };
    }
    try {
      yield* op('fchmod', target, 'fchmod', fd, mode);
      if (kind.ownership && !env.managed.managed && (env.uid !== undefined || env.gid !== undefined)) {
        yield* bestEffort(warnings, 'fchown', target, 'fchown', fd, env.uid ?? -1, env.gid ?? -1);
      }
    } finally {
      yield* bestEffort(warnings, 'close', target, 'close', fd);
    }
    return { path: target, created: true, mode, createdDirs: reached.created, warnings };
  } finally {
    yield* held.release();
  }
}

/**
 * The fstat of the existing file `name`, through a descriptor that cannot block or follow a link: an `O_PATH`
 * descriptor where there is one (no read permission needed, a FIFO is not opened), else a non-blocking
 * read-only open. Gone meanwhile: ERACE.
 */
function* existingStat(dir: DirRef, name: string, target: string, warnings: string[]): Plan<fs.Stats> {
  let fd: number;
  try {
    fd = yield* call('verify', target, 'open', at(dir, name), (O_PATH !== 0 ? O_PATH : O.RDONLY | O.NONBLOCK) | O.NOFOLLOW, 0);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT') throw raceError(target);
    if (code === 'ELOOP') throw new FsPolicyError({ code: 'ESYMLINK', step: 'verify', path: target, message: `${target} is a symbolic link`, cause: err });
    if (code === 'ENXIO' || code === 'ENODEV' || code === 'EOPNOTSUPP') {
      throw new FsPolicyError({ code: 'ENOTREGULAR', step: 'verify', path: target, message: `${target} is not a regular file (a FIFO, socket or device)`, cause: err });
    }
    throw toPolicyError(err, 'verify', target, `open ${target} to check it`);
  }
  try {
    return yield* op('verify', target, 'fstat', fd);
  } finally {
    yield* bestEffort(warnings, 'close', target, 'close', fd);
  }
}

/**
 * Makes sure `file` exists, creating it empty with the kind's mode (exactly) when missing; an existing
 * file is left as it is, but only when it is a regular file of a trusted owner (this uid, root, the home's
 * owner or HERMES_UID) with one link, checked on a descriptor — otherwise a
 * typed error (ENOTREGULAR, ESYMLINK, EFOREIGN_OWNER, EHARDLINK). Used before handing a path to a library that creates files at its own mode
 * (SQLite creates its -wal/-shm with the database file's mode).
 */
export async function ensureFile(file: string, options: EnsureFileOptions): Promise<EnsureFileResult> {
  const env = options.env ?? loadEnvironment();
  return runAsync(ensureFilePlan(file, options, env));
}

/** Synchronous form of {@link ensureFile}. */
export function ensureFileSync(file: string, options: EnsureFileOptions): EnsureFileResult {
  const env = options.env ?? loadEnvironment();
  return runSync(ensureFilePlan(file, options, env));
}
