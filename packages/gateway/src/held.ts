/**
 * The spool directory, held through @hermes/fs-policy's resolver while a recovery, a salvage, a listing or a
 * prune works in it: every call on a spool entry is made relative to the held descriptor (`sys()`), so a
 * member of the service group who swaps `pending_messages/` for a link cannot make this process read, rename
 * or delete files anywhere else. Messages keep the logical paths (`explain()`).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FsPolicyError, type HeldDirectory, type HermesEnvironment, holdDirectorySync } from '@hermes/fs-policy';

const held = new Map<string, { dir: HeldDirectory; users: number }>();

/**
 * Holds `dir` (the spool) until the returned release is called; nested holds share one descriptor. Returns
 * undefined when the directory does not exist: the caller then has nothing to act on and must not touch the
 * spool by path (a group member may put a link there a moment later, and {@link sys} would not redirect the
 * calls). Throws the typed FsPolicyError when it cannot be held safely (a link leading out of the home,
 * EACCES, …).
 */
export function holdSpool(dir: string, env: HermesEnvironment): (() => void) | undefined {
  const key = path.resolve(dir);
  const known = held.get(key);
  if (known !== undefined) {
    known.users++;
    return () => {
      release(key);
    };
  }
  let h: HeldDirectory;
  try {
    h = holdDirectorySync(key, { env });
  } catch (err) {
    if (err instanceof FsPolicyError && err.code === 'ENOENT') return undefined;
    throw err;
  }
  held.set(key, { dir: h, users: 1 });
  return () => {
    release(key);
  };
}

function release(key: string): void {
  const h = held.get(key);
  if (h === undefined) return;
  h.users--;
  if (h.users > 0) return;
  held.delete(key);
  h.dir.close();
}

/** The held directory of `dir` while a hold on it is active (undefined otherwise). */
export function heldSpool(dir: string): HeldDirectory | undefined {
  return held.get(path.resolve(dir))?.dir;
}

/**
 * The held spool of `dir` for an operation that must act through it: throws a typed error (never falls back
 * to the path) when no hold on it is active.
 */
export function requireHeld(dir: string): HeldDirectory {
  const h = heldSpool(dir);
  if (h !== undefined) return h;
  throw new FsPolicyError({
    code: 'EUNEXPECTED',
    step: 'read',
    path: dir,
    message: `${dir} is not held by this process; refusing to reach its entries by path`,
    hint: 'hold the spool (holdSpool) around the operation; this is a bug of the caller.',
  });
}

/** The path to pass to an fs call for `p` (a held spool directory itself, or an entry of it); `p` otherwise. */
export function sys(p: string): string {
  const self = held.get(p);
  if (self !== undefined) return self.dir.self;
  const parent = held.get(path.dirname(p));
  return parent === undefined ? p : parent.dir.at(path.basename(p));
}

/** An fs error with descriptor paths rewritten to the logical spool paths. */
export function explain<E>(err: E): E {
  for (const h of held.values()) h.dir.explain(err);
  return err;
}

/**
 * Streams the entries of the held spool directory to `visit`, in directory order, through the held
 * descriptor. Returns what ended the listing early (`opening`: the directory could not be opened at all), or
 * undefined when every entry was visited.
 */
export function forEachSpoolEntry(dir: string, visit: (entry: fs.Dirent) => void): { readonly err: unknown; readonly opening: boolean } | undefined {
  let handle: fs.Dir;
  try {
    handle = fs.opendirSync(sys(dir), { bufferSize: 256 });
  } catch (err) {
    return { err, opening: true };
  }
  try {
    for (;;) {
      let entry: fs.Dirent | null;
      try {
        entry = handle.readSync();
      } catch (err) {
        return { err, opening: false };
      }
      if (entry === null) return undefined;
      visit(entry);
    }
  } finally {
    handle.closeSync();
  }
}
