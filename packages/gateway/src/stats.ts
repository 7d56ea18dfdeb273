import { sweepTempFilesSync } from '@hermes/fs-policy';
import { classifyPayload, isRecord } from './payload.js';
import { requireHeld, sys } from './held.js';
import { readSpoolPayload } from './read.js';
import { codeOf, heldOr, listDir, statFiles } from './spool-dir.js';
import { spoolLocation, type SpoolLocationOptions } from './spool.js';

export interface SpoolStatsOptions extends SpoolLocationOptions {
  /** The clock, epoch milliseconds (tests). */
  now?: number;
}

export interface SpoolStats {
  readonly dir: string;
  readonly exists: boolean;
  /** `*.json` payload files (every kind, including snapshots and files this uid cannot read). */
  count: number;
  bytes: number;
  /** Smallest / largest finite `ts` among the readable payloads (epoch seconds), or null. */
  oldestTs: number | null;
  newestTs: number | null;
  /** Readable payloads by `reason` (`shutdown`, `adapter_shutdown`, `transcript_cap_drop`, …). */
  readonly byReason: Record<string, number>;
  /** Readable payloads by kind (`pending`, `overflow`, `transcript_cap_drop`, `agent_history`, `unknown`). */
  readonly byKind: Record<string, number>;
  /** Agent-history snapshots waiting for the operator. */
  snapshots: number;
  /** The snapshots' size and age, as {@link prune} sees it. */
  readonly snapshotFiles: SpoolAge & { count: number; bytes: number; /** Smallest finite `ts`, or null. */ oldestTs: number | null };
  /** Payloads that are not valid JSON objects. */
  unparseable: number;
  /** `.bad` files (rows the session store rejected); their age is by modification time, as {@link prune} sees it. */
  readonly bad: SpoolAge & { count: number; bytes: number };
  /** Payloads this uid cannot read, by owner (they belong to another uid's recovery). */
  readonly foreign: { readonly path: string; readonly uid: number }[];
  /** Leftover temp files of interrupted writes (fs-policy's sweep); `stale` ones are safe to remove. */
  readonly tempFiles: { count: number; stale: number; bytes: number };
  readonly errors: { readonly path: string; readonly code: string }[];
}

/** The age of the oldest file of a category. */
export interface SpoolAge {
  /** The oldest modification time, epoch milliseconds, or null when there is no such file. */
  oldestMtime: number | null;
  /**
   * The age of the oldest file at `now`, in milliseconds, as {@link prune} measures it (`.bad`: by modification
   * time; snapshots: by `ts`, else modification time); null when there is no such file.
   */
  oldestAgeMs: number | null;
}

function bump(map: Record<string, number>, key: string): void {
  map[key] = (map[key] ?? 0) + 1;
}

function euid(): number {
  return typeof process.geteuid === 'function' ? process.geteuid() : -1;
}

function older(age: SpoolAge, mtime: number, ageMs: number): void {
  age.oldestMtime = age.oldestMtime === null ? mtime : Math.min(age.oldestMtime, mtime);
  age.oldestAgeMs = age.oldestAgeMs === null ? ageMs : Math.max(age.oldestAgeMs, ageMs);
}

/** A picture of the spool for operators and dashboards: size, age, kinds, quarantined and leftover files. */
export function spoolStats(options: string | SpoolStatsOptions = {}): SpoolStats {
  const opts: SpoolStatsOptions = typeof options === 'string' ? { home: options } : options;
  const loc = spoolLocation(opts);
  return heldOr(
    loc,
    () => spoolStatsHeld(opts, loc.dir),
    () => emptyStats(loc.dir),
    (code) => ({ ...emptyStats(loc.dir), exists: true, errors: [{ path: loc.dir, code }] }),
  );
}

function emptyStats(dir: string): SpoolStats {
  return {
    dir,
    exists: false,
    count: 0,
    bytes: 0,
    oldestTs: null,
    newestTs: null,
    byReason: {},
    byKind: {},
    snapshots: 0,
    snapshotFiles: { count: 0, bytes: 0, oldestTs: null, oldestMtime: null, oldestAgeMs: null },
    unparseable: 0,
    bad: { count: 0, bytes: 0, oldestMtime: null, oldestAgeMs: null },
    foreign: [],
    tempFiles: { count: 0, stale: 0, bytes: 0 },
    errors: [],
  };
}

function spoolStatsHeld(opts: SpoolStatsOptions, dir: string): SpoolStats {
  const now = opts.now ?? Date.now();
  const stats: SpoolStats = emptyStats(dir);
  const entries = listDir(dir, stats.errors);
  if (entries === undefined) return { ...stats, exists: stats.errors.length > 0 };
  const result: SpoolStats = { ...stats, exists: true };
  for (const { name, path: p, st } of statFiles(dir, entries, result.errors)) {
    const size = st.size;
    if (name.endsWith('.bad')) {
      result.bad.count++;
      result.bad.bytes += size;
      older(result.bad, st.mtimeMs, now - st.mtimeMs);
      continue;
    }
    if (!name.endsWith('.json')) continue;
    result.count++;
    result.bytes += size;
    let payload: unknown;
    try {
      payload = readSpoolPayload(requireHeld(dir), name);
    } catch (err) {
      const code = codeOf(err);
      if (code === 'EACCES' || code === 'EPERM') {
        const uid = st.uid;
        if (uid !== euid()) {
          result.foreign.push({ path: p, uid });
          continue;
        }
        result.errors.push({ path: p, code });
        continue;
      }
      if (code === 'ENOENT') continue;
      result.unparseable++;
      continue;
    }
    if (!isRecord(payload)) {
      result.unparseable++;
      continue;
    }
    const kind = classifyPayload(payload);
    bump(result.byKind, kind);
    if (typeof payload.reason === 'string') bump(result.byReason, payload.reason);
    const ts = payload.ts;
    const hasTs = typeof ts === 'number' && Number.isFinite(ts) && ts > 0;
    if (hasTs) {
      result.oldestTs = result.oldestTs === null ? ts : Math.min(result.oldestTs, ts);
      result.newestTs = result.newestTs === null ? ts : Math.max(result.newestTs, ts);
    }
    if (kind === 'agent_history') {
      result.snapshots++;
      const snap = result.snapshotFiles;
      snap.count++;
      snap.bytes += size;
      if (hasTs) snap.oldestTs = snap.oldestTs === null ? ts : Math.min(snap.oldestTs, ts);
      older(snap, st.mtimeMs, hasTs ? now - ts * 1000 : now - st.mtimeMs);
    }
  }
  const sweep = sweepTempFilesSync(sys(dir), { recursive: false, now });
  result.tempFiles.count = sweep.found.length;
  result.tempFiles.stale = sweep.found.filter((t) => t.stale).length;
  result.tempFiles.bytes = sweep.found.reduce((n, t) => n + t.size, 0);
  result.errors.push(...sweep.errors.map((e) => ({ ...e, path: dir })));
  return result;
}
