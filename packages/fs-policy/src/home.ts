import * as path from 'node:path';
import { FsPolicyError, toPolicyError, errnoCode } from './errors.js';
import { type HermesEnvironment, loadEnvironment } from './env.js';
import { call, type Plan, runAsync, runSync } from './internal/io.js';
import { reachDirPlan } from './internal/reach.js';
import { Held } from './internal/resolve.js';
import { secureMkdirPlan } from './mkdir.js';
import { reconcilePlan, type ReconcileResult } from './reconcile.js';
import { getKind, kindDir, reconcilesExistingDir, STANDARD_SUBDIRS, type ArtifactKindName } from './registry.js';

export interface EnsureHomeOptions {
  env?: HermesEnvironment;
  /** Subdirectories to ensure (default: the standard set). */
  subdirs?: readonly ArtifactKindName[];
}

export interface EnsureHomeResult {
  readonly home: string;
  readonly managed: boolean;
  readonly created: readonly string[];
  readonly reconciled: readonly ReconcileResult[];
  readonly warnings: readonly string[];
}

function* requireDir(dir: string, env: HermesEnvironment): Plan<void> {
  const held = new Held();
  try {
    yield* reachDirPlan(dir, { env }, held);
    return;
  } catch (err) {
    if (!(err instanceof FsPolicyError) || err.code !== 'ENOENT') throw err;
  } finally {
    yield* held.release();
  }
  throw new FsPolicyError({
    code: 'EMANAGED_MISSING',
    step: 'lstat',
    path: dir,
    message: `Required directory does not exist: ${dir} (managed install: the package manager creates it)`,
  });
}

function* ensureHomePlan(env: HermesEnvironment, options: EnsureHomeOptions): Plan<EnsureHomeResult> {
  const home = env.home;
  const created: string[] = [];
  const reconciled: ReconcileResult[] = [];
  const warnings: string[] = [];
  const parent = path.dirname(home);
  if (path.basename(parent) === 'profiles') {
    // A named profile must be created explicitly; never resurrect a deleted one.
    try {
      yield* call('lstat', home, 'stat', home);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') {
        throw new FsPolicyError({
          code: 'EPROFILE_MISSING',
          step: 'lstat',
          path: home,
          message: `Named profile home does not exist: ${home}`,
        });
      }
      throw toPolicyError(err, 'lstat', home, `stat ${home}`);
    }
    // (a read-only check: whether it exists; everything that acts on it goes through the resolver)
  }
  if (env.managed.managed) {
    yield* requireDir(home, env);
    for (const name of options.subdirs ?? STANDARD_SUBDIRS) {
      if (getKind(name).requiredWhenManaged) yield* requireDir(kindDir(name, env), env);
    }
    const curator = path.join(kindDir('logs', env), 'curator');
    const r = yield* secureMkdirPlan(curator, 'logs', env);
    created.push(...r.created);
    return { home, managed: true, created, reconciled, warnings };
  }
  const dirs: [string, ArtifactKindName][] = [[home, 'home']];
  for (const name of options.subdirs ?? STANDARD_SUBDIRS) dirs.push([kindDir(name, env), name]);
  for (const [dir, kind] of dirs) {
    const r = yield* secureMkdirPlan(dir, kind, env, home);
    created.push(...r.created);
    warnings.push(...r.warnings);
    if (r.created.length === 0 && reconcilesExistingDir(kind, env)) {
      const rec = yield* reconcilePlan(dir, kind, env, {});
      if (rec.action !== 'none') reconciled.push(rec);
      warnings.push(...rec.warnings);
    }
  }
  return { home, managed: false, created, reconciled, warnings };
}

/**
 * Makes sure the Hermes home and its standard subdirectories exist with policy modes. Unmanaged: creates
 * what is missing (owner-only, or HERMES_HOME_MODE) and tightens existing levels it owns. Managed: the home
 * and the required subdirectories must already exist (the package manager creates them) and nothing is
 * chmodded. A named profile is never created implicitly.
 */
export async function ensureHermesHome(options: EnsureHomeOptions = {}): Promise<EnsureHomeResult> {
  const env = options.env ?? loadEnvironment();
  return runAsync(ensureHomePlan(env, options));
}

/** Synchronous form of {@link ensureHermesHome}. */
export function ensureHermesHomeSync(options: EnsureHomeOptions = {}): EnsureHomeResult {
  const env = options.env ?? loadEnvironment();
  return runSync(ensureHomePlan(env, options));
}
