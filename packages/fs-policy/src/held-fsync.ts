/**
 * fsync of a directory held by {@link holdDirectorySync}: the directory is re-opened read-only through its
 * descriptor (`held.self`), never looked up by its logical name, so a group member who swaps the name for a
 * link meanwhile cannot make the fsync land on another directory. With `expected` (the identity the caller
 * took when it held the directory), the opened directory is checked to be that one before it is fsynced —
 * the check that matters in fallback mode, where `held.self` is a path.
 */
import { FsPolicyError } from './errors.js';
import { O, type Plan, runAsync, runSync } from './internal/io.js';
import { bestEffort, op } from './internal/steps.js';
import type { HeldDirectory } from './scan.js';

/** The identity a held directory must still have (from an `fstat`/`stat` through its descriptor). */
export interface DirIdentity {
  readonly dev: number;
  readonly ino: number;
}

function* fsyncHeldPlan(held: HeldDirectory, expected: DirIdentity | undefined): Plan<void> {
  const fd = yield* op('fsync-dir', held.path, 'open', held.self, O.RDONLY | O.DIRECTORY, 0);
  try {
    if (expected !== undefined) {
      const st = yield* op('fsync-dir', held.path, 'fstat', fd);
      if (st.dev !== expected.dev || st.ino !== expected.ino) {
        throw new FsPolicyError({
          code: 'ERACE',
          step: 'fsync-dir',
          path: held.path,
          message: `${held.path} is no longer the directory that was held (replaced meanwhile); it was not fsynced`,
        });
      }
    }
    yield* op('fsync-dir', held.path, 'fsync', fd);
  } finally {
    yield* bestEffort([], 'close', held.path, 'close', fd);
  }
}

/**
 * Makes the entries of a held directory durable: one fsync of the very directory the descriptor holds.
 * Throws a typed FsPolicyError (step `fsync-dir`, the logical path); `ERACE` when `expected` is given and the
 * directory reached is not that one.
 */
export async function fsyncHeldDirectory(held: HeldDirectory, expected?: DirIdentity): Promise<void> {
  await runAsync(fsyncHeldPlan(held, expected));
}

/** Synchronous form of {@link fsyncHeldDirectory}. */
export function fsyncHeldDirectorySync(held: HeldDirectory, expected?: DirIdentity): void {
  runSync(fsyncHeldPlan(held, expected));
}
