import * as path from 'node:path';
import { errnoCode, toPolicyError } from './errors.js';
import { type HermesEnvironment, loadEnvironment } from './env.js';
import { call, O, type Plan, runAsync, runSync } from './internal/io.js';
import { reachDirPlan } from './internal/reach.js';
import { at, checkName, checkRawPath, Held, lstatAt, raceError } from './internal/resolve.js';
import { bestEffort, op } from './internal/steps.js';
import { checkRegular } from './internal/verify.js';
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
      const st = yield* lstatAt(reached.dir, name, target);
      if (st === undefined) throw raceError(target);
      checkRegular(target, st, 'verify');
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
 * Makes sure `file` exists, creating it empty with the kind's mode (exactly) when missing; an existing
 * file is left as it is. Used before handing a path to a library that creates files at its own mode
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
