import * as path from 'node:path';
import { errnoCode, toPolicyError } from './errors.js';
import { TEMP_FILE_PATTERN } from './atomic.js';
import { call, type Plan, runAsync, runSync } from './internal/io.js';
import { op } from './internal/steps.js';

export interface TempFile {
  readonly path: string;
  /** The file the temp belonged to. */
  readonly target: string;
  readonly pid: number;
  /** `tmp`: an unfinished write; `bak`: a rollback copy of a previous version. */
  readonly type: 'tmp' | 'bak';
  readonly pidAlive: boolean;
  readonly ageMs: number;
  readonly size: number;
  /** Dead writer, or older than the age limit: safe to remove. */
  readonly stale: boolean;
}

export interface SweepOptions {
  /** Descend into subdirectories (default true; links are never followed). */
  recursive?: boolean;
  /** Age after which a temp file is stale even when its pid is alive (default one hour). */
  maxAgeMs?: number;
  /** Clock, for tests. */
  now?: number;
  /** Remove the stale ones (default false: only report). */
  remove?: boolean;
}

export interface SweepResult {
  readonly found: readonly TempFile[];
  readonly removed: readonly string[];
  readonly errors: readonly { path: string; code: string }[];
}

/** Parses this package's temp-file name, or returns null for any other name. */
export function parseTempName(name: string): { target: string; pid: number; type: 'tmp' | 'bak' } | null {
  const m = TEMP_FILE_PATTERN.exec(name);
  if (m === null) return null;
  return { target: m[1] ?? '', pid: Number(m[2]), type: m[4] === 'bak' ? 'bak' : 'tmp' };
}

/** True when a process with this pid exists (EPERM means it exists but belongs to someone else). */
export function pidAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errnoCode(err) === 'EPERM';
  }
}

function* sweepPlan(roots: readonly string[], options: SweepOptions): Plan<SweepResult> {
  const now = options.now ?? Date.now();
  const maxAge = options.maxAgeMs ?? 3_600_000;
  const found: TempFile[] = [];
  const removed: string[] = [];
  const errors: { path: string; code: string }[] = [];
  const stack = roots.map((r) => path.resolve(r));
  while (stack.length > 0) {
    const dir = stack.pop() ?? '';
    let entries;
    try {
      entries = yield* call('readdir', dir, 'readdir', dir);
    } catch (err) {
      const code = errnoCode(err) ?? 'EUNKNOWN';
      if (code !== 'ENOENT') errors.push({ path: dir, code });
      continue;
    }
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (options.recursive !== false) stack.push(full);
        continue;
      }
      if (!entry.isFile()) continue;
      const parsed = parseTempName(entry.name);
      if (parsed === null) continue;
      let st;
      try {
        st = yield* call('lstat', full, 'lstat', full);
      } catch (err) {
        if (errnoCode(err) === 'ENOENT') continue; // finished meanwhile
        throw toPolicyError(err, 'lstat', full, `lstat ${full}`);
      }
      const alive = pidAlive(parsed.pid);
      const ageMs = Math.max(0, now - st.mtimeMs);
      const temp: TempFile = {
        path: full,
        target: path.join(dir, parsed.target),
        pid: parsed.pid,
        type: parsed.type,
        pidAlive: alive,
        ageMs,
        size: st.size,
        stale: !alive || ageMs > maxAge,
      };
      found.push(temp);
      if (options.remove === true && temp.stale) {
        try {
          yield* op('unlink', full, 'unlink', full);
          removed.push(full);
        } catch (err) {
          errors.push({ path: full, code: errnoCode((err as { cause?: unknown }).cause) ?? 'EUNKNOWN' });
        }
      }
    }
  }
  found.sort((a, b) => a.path.localeCompare(b.path));
  return { found, removed, errors };
}

/**
 * Finds this package's own leftover temp files (`.<name>.<pid>.<hex>.tmp|bak`) under `roots`; a file is
 * stale when its writer is dead or it is older than an hour. With `remove`, deletes the stale ones.
 * Files of other programs are never matched.
 */
export async function sweepTempFiles(roots: string | readonly string[], options: SweepOptions = {}): Promise<SweepResult> {
  return runAsync(sweepPlan(typeof roots === 'string' ? [roots] : roots, options));
}

/** Synchronous form of {@link sweepTempFiles}. */
export function sweepTempFilesSync(roots: string | readonly string[], options: SweepOptions = {}): SweepResult {
  return runSync(sweepPlan(typeof roots === 'string' ? [roots] : roots, options));
}
