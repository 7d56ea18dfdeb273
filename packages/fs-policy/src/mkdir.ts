import * as path from 'node:path';
import { type HermesEnvironment, loadEnvironment } from './env.js';
import { type Plan, runAsync, runSync } from './internal/io.js';
import { movedOut, movedOutError, reachDirPlan } from './internal/reach.js';
import { Held, statOf } from './internal/resolve.js';
import type { KindRef } from './registry.js';

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

/** @internal The plan behind secureMkdir. */
export function* secureMkdirPlan(dir: string, ref: KindRef, env: HermesEnvironment, rootOption?: string): Plan<MkdirResult> {
  const held = new Held();
  try {
    const r = yield* reachDirPlan(dir, { env, root: rootOption, createFor: ref }, held);
    const out = yield* movedOut(r, r.dir, env, held);
    if (out !== undefined) throw movedOutError(r.dir, out, 'mkdir');
    return { path: path.resolve(dir), created: r.created, mode: (yield* statOf(r.dir, held)).mode & 0o7777, warnings: r.warnings };
  } finally {
    yield* held.release();
  }
}

/**
 * Creates `dir` and any missing parents for an artifact `kind`. Every level this call creates gets the
 * kind's mode exactly (managed installs: at most 2770 — the setgid parent and the service umask decide);
 * levels that already existed are left untouched. Each level is reached through the descriptor of its
 * parent: a link below the root that leads out of it, or a dangling link, is refused with a diagnostic and
 * its target is never created, whatever another process swaps meanwhile.
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
