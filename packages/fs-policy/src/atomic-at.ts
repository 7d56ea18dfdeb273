/**
 * Atomic writes into a directory already held ({@link holdDirectorySync}): the `dir_fd=` form of
 * {@link atomicWrite}, for batch writers (a spool flush) that write many entries of one directory.
 */
import * as path from 'node:path';
import { currentUid, FsPolicyError } from './errors.js';
import { type HermesEnvironment, loadEnvironment } from './env.js';
import { type Plan, runAsync, runSync } from './internal/io.js';
import { homeOwnerPlan } from './internal/owners.js';
import type { Reached } from './internal/reach.js';
import { asRoot, checkName, type DirRef, Held } from './internal/resolve.js';
import { verifyForReplace } from './internal/verify.js';
import { commitPlan } from './atomic-publish.js';
import { type AtomicWriteOptions, bytesOf, type WriteResult } from './atomic.js';
import { resolveTargetPlan } from './atomic-target.js';
import { fileModeFor, getKind, selectFileMode } from './registry.js';
import { type HeldDirectory, leaseHeldDir } from './scan.js';

/** The options of {@link atomicWriteAt}: those of {@link atomicWrite} that apply to an entry of a held directory. */
export type AtomicWriteAtOptions = Pick<AtomicWriteOptions, 'kind' | 'env' | 'mode' | 'durable' | 'overwrite'>;

function* atomicWriteAtPlan(dir: HeldDirectory, ref: DirRef, name: string, data: Uint8Array, options: AtomicWriteAtOptions, env: HermesEnvironment): Plan<WriteResult> {
  const kind = getKind(options.kind);
  const requestedPath = dir.display(name);
  checkName(name, requestedPath);
  const durable = options.durable ?? 'file+dir';
  const warnings: string[] = [];
  const held = new Held();
  // The held directory was reached (and, as root, chain-checked) when it was held: it is the root here, so a
  // link in it is followed only while it stays inside it.
  const root = asRoot(ref);
  const reached: Reached = { root, contained: true, stack: [root], dir: root, created: [], warnings: [], uid: currentUid() };
  try {
    const { dir: at, name: leaf, existing } = yield* resolveTargetPlan(reached, name, held);
    const real = path.join(at.path, leaf);
    if (existing !== undefined && options.overwrite === false) {
      throw new FsPolicyError({ code: 'EEXIST', step: 'resolve', path: real, message: `${real} already exists` });
    }
    const homeOwner = existing === undefined ? undefined : yield* homeOwnerPlan(reached, env, held);
    const inherit = existing === undefined ? false : verifyForReplace(real, existing, kind, env, homeOwner, warnings, reached.uid).inheritMode;
    const finalMode = selectFileMode({
      explicit: options.mode,
      existing: inherit ? existing?.mode : undefined,
      kindMode: fileModeFor(kind, env),
      retighten: kind.file.retighten,
    });
    const result = yield* commitPlan(
      {
        dir: at,
        name: leaf,
        real,
        data,
        finalMode,
        existing,
        ownership: kind.ownership,
        env,
        uid: reached.uid,
        durable,
        overwrite: options.overwrite !== false,
        // Where the held directory itself is now is its holder's concern (it holds it for that).
        // eslint-disable-next-line require-yield
        guard: function* () {
          return undefined;
        },
        movedOutError: () => new FsPolicyError({ code: 'ERACE', step: 'resolve', path: real, message: `${real} moved` }),
      },
      warnings,
    );
    return { path: real, requestedPath, bytes: data.length, mode: finalMode, createdFile: existing === undefined, createdDirs: [], durable, warnings: result };
  } finally {
    yield* held.release();
  }
}

/**
 * Replaces the entry `name` (one component) of a held directory with `data`, with the guarantees of
 * {@link atomicWrite} — readers see the old or the new content, the file never has a wrong mode, a failure
 * leaves the entry as it was and no temp file — and no path lookup above the directory: the write acts in the
 * very directory that was held (and checked) when {@link holdDirectorySync} returned, wherever it has been
 * renamed since. A link at `name` is followed only while it stays inside that directory. A directory closed while
 * the write is under way keeps its descriptor until the write has settled.
 */
export async function atomicWriteAt(dir: HeldDirectory, name: string, data: string | Uint8Array, options: AtomicWriteAtOptions): Promise<WriteResult> {
  const env = options.env ?? loadEnvironment();
  const bytes = bytesOf(data, dir.display(name));
  const lease = leaseHeldDir(dir);
  try {
    return await runAsync(atomicWriteAtPlan(dir, lease.ref, name, bytes, options, env));
  } finally {
    lease.done();
  }
}

/** Synchronous form of {@link atomicWriteAt}, for shutdown paths. */
export function atomicWriteAtSync(dir: HeldDirectory, name: string, data: string | Uint8Array, options: AtomicWriteAtOptions): WriteResult {
  const env = options.env ?? loadEnvironment();
  const bytes = bytesOf(data, dir.display(name));
  const lease = leaseHeldDir(dir);
  try {
    return runSync(atomicWriteAtPlan(dir, lease.ref, name, bytes, options, env));
  } finally {
    lease.done();
  }
}
