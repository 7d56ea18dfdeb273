/** What the spool statistics and the prune share: holding the spool, listing it, `lstat`ing its files. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { HermesEnvironment } from '@hermes/fs-policy';
import { holdSpool, sys } from './held.js';

export function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'EUNKNOWN';
}

/** The entries of the held spool `dir`; undefined (the errno recorded unless ENOENT) when it cannot be listed. */
export function listDir(dir: string, errors: { path: string; code: string }[]): fs.Dirent[] | undefined {
  try {
    return fs.readdirSync(sys(dir), { withFileTypes: true });
  } catch (err) {
    if (codeOf(err) !== 'ENOENT') errors.push({ path: dir, code: codeOf(err) });
    return undefined;
  }
}

/**
 * The regular files of `entries` (in `dir`) with their lstat; a file that vanished meanwhile is skipped, any
 * other lstat failure is recorded in `errors`.
 */
export function* statFiles(
  dir: string,
  entries: readonly fs.Dirent[],
  errors: { path: string; code: string }[],
): Generator<{ name: string; path: string; st: fs.Stats }> {
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const p = path.join(dir, entry.name);
    try {
      yield { name: entry.name, path: p, st: fs.lstatSync(sys(p)) };
    } catch (err) {
      if (codeOf(err) !== 'ENOENT') errors.push({ path: p, code: codeOf(err) });
    }
  }
}

/**
 * Runs `fn` with the spool held (every call on an entry relative to its descriptor); `absent()` when the spool
 * does not exist (nothing is done by path: a link may take its place), `failed(code)` when it cannot be held
 * safely (e.g. `ESYMLINK_ESCAPE`: pending_messages/ is a link leading out of the home).
 */
export function heldOr<T>(loc: { dir: string; env: HermesEnvironment }, fn: () => T, absent: () => T, failed: (code: string) => T): T {
  let release: (() => void) | undefined;
  try {
    release = holdSpool(loc.dir, loc.env);
  } catch (err) {
    return failed(codeOf(err));
  }
  if (release === undefined) return absent();
  try {
    return fn();
  } finally {
    release();
  }
}
