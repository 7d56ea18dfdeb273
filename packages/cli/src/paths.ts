import * as path from 'node:path';
import { expandTilde, type EnvSource } from '@hermes/fs-policy';
import { SaveError } from './errors.js';
import type { SaveFormat } from './types.js';

export const FORMATS: readonly SaveFormat[] = ['json', 'md', 'html'];

/** `<home>/sessions/saved`, where every snapshot lives. */
export function savedDirOf(home: string): string {
  return path.join(home, 'sessions', 'saved');
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/**
 * `hermes_conversation_%Y%m%d_%H%M%S.<fmt>` in the process's local time zone (as the reference's
 * `datetime.now()`), with `_<n>` before the extension for the n-th name of the same second (n ≥ 2).
 */
export function defaultFileName(now: Date, format: SaveFormat, n = 1): string {
  const stamp =
    `${pad(now.getFullYear(), 4)}${pad(now.getMonth() + 1)}${pad(now.getDate())}_` +
    `${pad(now.getHours())}${pad(now.getMinutes())}${pad(now.getSeconds())}`;
  return `hermes_conversation_${stamp}${n > 1 ? `_${n}` : ''}.${format}`;
}

/** The format a file name's extension names, if any. */
export function formatFromName(name: string): SaveFormat | undefined {
  const ext = path.extname(name).toLowerCase();
  if (ext === '.json') return 'json';
  if (ext === '.md' || ext === '.markdown') return 'md';
  if (ext === '.html' || ext === '.htm') return 'html';
  return undefined;
}

/** True when `child` lies strictly below `parent` (both absolute and normalised). */
export function isBelow(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel !== '' && !rel.startsWith(`..${path.sep}`) && rel !== '..' && !path.isAbsolute(rel);
}

/**
 * Resolves an explicit file name against the saved directory: `~` is expanded, a relative name resolves
 * inside `savedDir` (not the working directory), and the result must lie below `savedDir` (lexically, or
 * below `realSavedDir`, the directory's real path, which is mapped back onto `savedDir` so fs-policy
 * checks every link under it). Anything else is an `EPATH_ESCAPE`. Links are checked by fs-policy when
 * writing (a link under `savedDir` that leads out of it is refused there).
 */
export function resolveExplicitName(
  filename: string,
  savedDir: string,
  realSavedDir: string,
  env: EnvSource | undefined,
): string {
  if (filename.trim() === '' || filename.includes('\0')) {
    throw new SaveError({ code: 'EINVALID_FILENAME', reason: `invalid file name ${JSON.stringify(filename)}` });
  }
  if (filename.endsWith('/') || filename.endsWith(path.sep)) {
    throw new SaveError({
      code: 'EINVALID_FILENAME',
      reason: `file name ${JSON.stringify(filename)} names a directory, not a file`,
    });
  }
  const target = path.resolve(savedDir, expandTilde(filename, env));
  if (isBelow(target, savedDir)) return target;
  if (realSavedDir !== savedDir && isBelow(target, realSavedDir)) {
    return path.join(savedDir, path.relative(realSavedDir, target));
  }
  throw new SaveError({
    code: 'EPATH_ESCAPE',
    reason: `${JSON.stringify(filename)} resolves to ${target}, outside ${savedDir}; snapshots are written only inside sessions/saved/`,
    path: target,
  });
}
