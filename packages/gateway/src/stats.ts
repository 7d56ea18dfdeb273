import * as fs from 'node:fs';
import * as path from 'node:path';
import { type HermesEnvironment, sweepTempFilesSync, type TempFile } from '@hermes/fs-policy';
import { type GatewayLogger, loggerFor } from './log.js';
import { classifyPayload, isRecord } from './payload.js';
import { holdSpool, requireHeld, sys } from './held.js';
import { readSpoolPayload } from './read.js';
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

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'EUNKNOWN';
}

function bump(map: Record<string, number>, key: string): void {
  map[key] = (map[key] ?? 0) + 1;
}

function listDir(dir: string, errors: { path: string; code: string }[]): fs.Dirent[] | undefined {
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
function* statFiles(
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

/**
 * Runs `fn` with the spool held (every call on an entry relative to its descriptor); `absent()` when the spool
 * does not exist (nothing is done by path: a link may take its place), `failed(code)` when it cannot be held
 * safely (e.g. `ESYMLINK_ESCAPE`: pending_messages/ is a link leading out of the home).
 */
function heldOr<T>(loc: { dir: string; env: HermesEnvironment }, fn: () => T, absent: () => T, failed: (code: string) => T): T {
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

/** What {@link prune} may delete: `.bad` files, agent-history snapshots, stale temp files of interrupted writes. */
export type PruneCategory = 'bad' | 'snapshots' | 'temp';

export interface PruneOptions extends SpoolLocationOptions {
  /** Only files older than this many days (`.bad`/temp: by mtime; snapshots: by `ts`, else mtime). */
  olderThanDays: number;
  /** Default true: report what would be deleted and delete nothing. */
  dryRun?: boolean;
  /** Default `['bad', 'snapshots']`. Recoverable payloads are never pruned. */
  include?: readonly PruneCategory[];
  /** The clock, epoch milliseconds (tests). */
  now?: number;
  logger?: GatewayLogger;
}

export interface PruneCandidate {
  readonly path: string;
  readonly category: PruneCategory;
  readonly ageDays: number;
  readonly bytes: number;
}

export interface PruneReport {
  readonly dir: string;
  readonly dryRun: boolean;
  readonly matched: PruneCandidate[];
  readonly removed: string[];
  readonly errors: { readonly path: string; readonly code: string }[];
}

const DAY_MS = 86_400_000;

/**
 * The operator's explicit clean-up of the spool. Dry-run by default. It only ever considers `.bad` files,
 * agent-history snapshots and stale temp files; payloads recovery can still deliver are never touched (the
 * runtime removes a payload only after its receipt is committed).
 */
export function prune(options: PruneOptions): PruneReport {
  if (!Number.isFinite(options.olderThanDays) || options.olderThanDays < 0) {
    throw new RangeError(`olderThanDays must be a non-negative number, got ${String(options.olderThanDays)}`);
  }
  const logger = loggerFor(options.logger);
  const dryRun = options.dryRun ?? true;
  const include = new Set<PruneCategory>(options.include ?? ['bad', 'snapshots']);
  const now = options.now ?? Date.now();
  const limitMs = options.olderThanDays * DAY_MS;
  const loc = spoolLocation(options);
  const { dir } = loc;
  const report: PruneReport = { dir, dryRun, matched: [], removed: [], errors: [] };
  return heldOr(
    loc,
    () => pruneHeld(options, report, { dryRun, include, now, limitMs, logger }),
    () => report,
    (code) => ({ ...report, errors: [{ path: dir, code }] }),
  );
}

function pruneHeld(
  options: PruneOptions,
  report: PruneReport,
  { dryRun, include, now, limitMs, logger }: { dryRun: boolean; include: Set<PruneCategory>; now: number; limitMs: number; logger: ReturnType<typeof loggerFor> },
): PruneReport {
  const { dir } = report;
  const entries = listDir(dir, report.errors) ?? [];

  const consider = (p: string, category: PruneCategory, ageMs: number, bytes: number): void => {
    if (ageMs <= limitMs) return;
    report.matched.push({ path: p, category, ageDays: ageMs / DAY_MS, bytes });
  };

  for (const { name, path: p, st } of statFiles(dir, entries, report.errors)) {
    if (name.endsWith('.bad')) {
      if (include.has('bad')) consider(p, 'bad', now - st.mtimeMs, st.size);
      continue;
    }
    if (!include.has('snapshots') || !name.endsWith('.json')) continue;
    let payload: unknown;
    try {
      payload = readSpoolPayload(requireHeld(dir), name);
    } catch {
      continue; // unreadable or unparseable: not provably a snapshot, never pruned
    }
    if (!isRecord(payload) || classifyPayload(payload) !== 'agent_history') continue;
    const ts = payload.ts;
    const ageMs = typeof ts === 'number' && Number.isFinite(ts) && ts > 0 ? now - ts * 1000 : now - st.mtimeMs;
    consider(p, 'snapshots', ageMs, st.size);
  }
  if (include.has('temp')) {
    const sweep = sweepTempFilesSync(sys(dir), { recursive: false, now });
    for (const t of sweep.found.filter((x: TempFile) => x.stale)) consider(path.join(dir, path.basename(t.path)), 'temp', t.ageMs, t.size);
    report.errors.push(...sweep.errors.map((e) => ({ ...e, path: dir })));
  }
  report.matched.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  if (!dryRun) {
    for (const c of report.matched) {
      try {
        fs.unlinkSync(sys(c.path));
        report.removed.push(c.path);
      } catch (err) {
        if (codeOf(err) === 'ENOENT') continue;
        report.errors.push({ path: c.path, code: codeOf(err) });
        logger.error('prune could not remove a spool file', { path: c.path, code: codeOf(err) });
      }
    }
    logger.info(`pruned ${report.removed.length} spool file(s)`, { path: dir });
  }
  return report;
}
