/**
 * Atomic writes into a directory already held ({@link holdDirectorySync}): the `dir_fd=` form of
 * {@link atomicWrite}, for batch writers (a spool flush) that write many entries of one directory.
 */
import { currentUid } from './errors.js';
import { type HermesEnvironment, loadEnvironment } from './env.js';
import { type Plan, runAsync, runSync } from './internal/io.js';
import type { Reached } from './internal/reach.js';
import { asRoot, checkName, type DirRef, Held } from './internal/resolve.js';
import { type AtomicWriteOptions, bytesOf, type WriteResult, writeEntryPlan } from './atomic.js';
import { getKind } from './registry.js';
import { type HeldDirectory, leaseHeldDir } from './scan.js';

/** The options of {@link atomicWriteAt}: those of {@link atomicWrite} that apply to an entry of a held directory. */
export type AtomicWriteAtOptions = Pick<AtomicWriteOptions, 'kind' | 'env' | 'mode' | 'durable' | 'overwrite'>;

function* atomicWriteAtPlan(dir: HeldDirectory, ref: DirRef, name: string, data: Uint8Array, options: AtomicWriteAtOptions, env: HermesEnvironment): Plan<WriteResult> {
  getKind(options.kind); // an unknown kind is refused before any I/O
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
    const w = yield* writeEntryPlan(reached, name, data, options, durable, env, held, warnings, false);
    return { path: w.real, requestedPath, bytes: data.length, mode: w.finalMode, createdFile: w.created, createdDirs: [], durable, temp: w.temp, warnings: w.warnings };
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
