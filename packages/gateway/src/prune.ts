/**
 * The operator's explicit clean-up of the spool: `.bad` files, agent-history snapshots, `.partial` files and
 * stale temp files older than a retention. It never deletes a message recovery can deliver: a real run first
 * salvages the temp files killed writers left, exactly as recovery does ({@link salvageTemps}), and a temp
 * whose bytes are a complete payload (or batch) is kept whatever its age, and reported with the reason.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { hintFor, readRegularFileSync, sweepTempFilesSync, type TempFile } from '@hermes/fs-policy';
import { isBatchName, parseBatch } from './batch.js';
import { requireHeld, sys } from './held.js';
import { parseJsonTolerant } from './json.js';
import { spoolNameClass } from './list-read.js';
import { type GatewayLogger, loggerFor } from './log.js';
import { classifyPayload, isRecord } from './payload.js';
import { readSpoolPayload, spoolTextOf } from './read.js';
import { DEFAULT_SALVAGE_MIN_AGE_MS, salvageTemps } from './salvage.js';
import { incompleteBecause, maxTempBytes, tempTarget } from './salvage-temp.js';
import type { SalvageLeftReason, SalvageReport } from './salvage-types.js';
import { codeOf, heldOr, listDir, statFiles } from './spool-dir.js';
import { spoolLocation, type SpoolLocationOptions } from './spool.js';

/**
 * What {@link prune} may delete: `.bad` files, agent-history snapshots, `.partial` files (incomplete temps
 * salvage moved aside; in a dry run also the incomplete temps it would move aside), and stale temp files that
 * hold no complete payload (complete JSON of no payload shape, rollback copies).
 */
export type PruneCategory = 'bad' | 'snapshots' | 'partial' | 'temp';

export interface PruneOptions extends SpoolLocationOptions {
  /** Only files older than this many days (`.bad`/`.partial`/temp: by mtime; snapshots: by `ts`, else mtime). */
  olderThanDays: number;
  /** Default true: report what would be deleted (and adopted) and change nothing. */
  dryRun?: boolean;
  /** Default `['bad', 'snapshots']`. Recoverable payloads are never pruned, under any name. */
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

/**
 * Why a temp file was kept:
 * - `complete-payload`: its bytes are a complete payload (recovery's salvage adopts it; in a real run, salvage
 *   did not: `detail` says why);
 * - `complete-batch`: a complete batch file under its temp name;
 * - the reasons salvage left a complete payload in place (`writer-alive`, `too-recent`, `conflict`, …);
 * - `foreign`: another uid's file this process cannot read (not provably incomplete);
 * - `unreadable`: it could not be read (see `errors`), so it is not provably incomplete;
 * - `changed`: it changed after it was examined; the next prune looks at it again.
 */
export type PruneKeptReason = 'complete-payload' | 'complete-batch' | SalvageLeftReason | 'unreadable' | 'changed';

export interface PruneKept {
  readonly path: string;
  readonly reason: PruneKeptReason;
  readonly detail: string;
}

export interface PruneReport {
  readonly dir: string;
  readonly dryRun: boolean;
  /** What is (dry run: would be) deleted. */
  readonly matched: PruneCandidate[];
  readonly removed: string[];
  /**
   * Complete payloads adopted from temp files under the name they were written for before anything was
   * considered — in a dry run, the complete payloads under temp names that salvage would adopt (nothing is
   * changed).
   */
  readonly salvaged: { readonly temp: string; readonly path: string; readonly bytes: number }[];
  /** Temp files kept whatever their age, and why. */
  readonly kept: PruneKept[];
  /** The salvage report of a real run (adopted, duplicates, partial, left, errors); null in a dry run. */
  salvage: SalvageReport | null;
  readonly errors: { readonly path: string; readonly code: string; readonly message?: string; readonly hint?: string }[];
}

const DAY_MS = 86_400_000;

function euid(): number {
  return typeof process.geteuid === 'function' ? process.geteuid() : -1;
}

function egid(): number {
  return typeof process.getegid === 'function' ? process.getegid() : -1;
}

interface Ctx {
  readonly dir: string;
  readonly dryRun: boolean;
  readonly include: ReadonlySet<PruneCategory>;
  readonly now: number;
  readonly limitMs: number;
  readonly logger: ReturnType<typeof loggerFor>;
  readonly report: PruneReport;
  /** What was examined, by path: deleted only while lstat still shows the same file. */
  readonly seen: Map<string, fs.Stats>;
}

/**
 * The operator's explicit clean-up of the spool; a dry run by default (nothing changes). Considers only `.bad`
 * files, agent-history snapshots, `.partial` files and stale temp files that hold no complete payload, each
 * older than `olderThanDays`. Guarantee: no message recovery can deliver is deleted — a real run first runs
 * {@link salvageTemps} (complete payloads under temp names are adopted under their final names, incomplete
 * ones moved aside as `.partial`), and any temp whose bytes are a complete payload or batch is kept and listed
 * in `kept` with the reason. Failures are in `errors` (path, errno, fix) and logged; it never throws for them.
 */
export function prune(options: PruneOptions): PruneReport {
  if (!Number.isFinite(options.olderThanDays) || options.olderThanDays < 0) {
    throw new RangeError(`olderThanDays must be a non-negative number, got ${String(options.olderThanDays)}`);
  }
  const dryRun = options.dryRun ?? true;
  const loc = spoolLocation(options);
  const { dir } = loc;
  const report: PruneReport = { dir, dryRun, matched: [], removed: [], salvaged: [], kept: [], salvage: null, errors: [] };
  const ctx: Ctx = {
    dir,
    dryRun,
    include: new Set<PruneCategory>(options.include ?? ['bad', 'snapshots']),
    now: options.now ?? Date.now(),
    limitMs: options.olderThanDays * DAY_MS,
    logger: loggerFor(options.logger),
    report,
    seen: new Map(),
  };
  return heldOr(
    loc,
    () => {
      if (!dryRun) salvageFirst(ctx, loc);
      return pruneHeld(ctx);
    },
    () => report,
    (code) => {
      report.errors.push({ path: dir, code, hint: hintFor(code, dir, euid(), egid()) });
      ctx.logger.error(`prune cannot use the spool ${dir}: ${code}`, { path: dir, code });
      return report;
    },
  );
}

/** A real run adopts what recovery would adopt before it looks at ages (the spool stays held: one descriptor). */
function salvageFirst(ctx: Ctx, loc: ReturnType<typeof spoolLocation>): void {
  const s = salvageTemps({ home: loc.home, env: loc.env, logger: ctx.logger, now: ctx.now });
  ctx.report.salvage = s;
  ctx.report.salvaged.push(...s.adopted);
  ctx.report.errors.push(...s.errors.map((e) => ({ path: e.path, code: e.code, message: e.message, hint: e.hint })));
}

function consider(ctx: Ctx, p: string, category: PruneCategory, ageMs: number, st: fs.Stats): void {
  if (!ctx.include.has(category) || ageMs <= ctx.limitMs) return;
  ctx.seen.set(p, st);
  ctx.report.matched.push({ path: p, category, ageDays: ageMs / DAY_MS, bytes: st.size });
}

function pruneHeld(ctx: Ctx): PruneReport {
  const { dir, report, now } = ctx;
  const entries = listDir(dir, report.errors) ?? [];
  const withTemps = ctx.include.has('temp') || ctx.include.has('partial');
  const sweep = withTemps ? sweepTemps(ctx) : new Map<string, TempFile>();
  for (const { name, path: p, st } of statFiles(dir, entries, report.errors)) {
    const cls = spoolNameClass(name);
    if (cls === 'bad') consider(ctx, p, 'bad', now - st.mtimeMs, st);
    else if (cls === 'partial') consider(ctx, p, 'partial', now - st.mtimeMs, st);
    else if (cls === 'temp') {
      if (withTemps) temp(ctx, name, p, st, sweep.get(name));
    } else if (cls === 'json') snapshot(ctx, name, p, st);
    else {
      // A rollback copy (fs-policy's `.bak`): never a payload; stale ones go with the temps.
      const t = sweep.get(name);
      if (t?.type === 'bak' && t.stale) consider(ctx, p, 'temp', t.ageMs, st);
    }
  }
  report.matched.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  if (!ctx.dryRun) remove(ctx);
  log(ctx);
  return report;
}

/** fs-policy's view of its own temp files in the spool (the writer's liveness, staleness), by name. */
function sweepTemps(ctx: Ctx): Map<string, TempFile> {
  const out = new Map<string, TempFile>();
  try {
    const sweep = sweepTempFilesSync(sys(ctx.dir), { recursive: false, now: ctx.now });
    for (const t of sweep.found) out.set(path.basename(t.path), t);
    ctx.report.errors.push(...sweep.errors.map((e) => ({ ...e, path: ctx.dir })));
  } catch (err) {
    ctx.report.errors.push({ path: ctx.dir, code: codeOf(err), hint: hintFor(codeOf(err), ctx.dir, euid(), egid()) });
  }
  return out;
}

function snapshot(ctx: Ctx, name: string, p: string, st: fs.Stats): void {
  if (!ctx.include.has('snapshots')) return;
  let payload: unknown;
  try {
    payload = readSpoolPayload(requireHeld(ctx.dir), name);
  } catch {
    return; // unreadable or unparseable: not provably a snapshot, never pruned
  }
  if (!isRecord(payload) || classifyPayload(payload) !== 'agent_history') return;
  const ts = payload.ts;
  const ageMs = typeof ts === 'number' && Number.isFinite(ts) && ts > 0 ? ctx.now - ts * 1000 : ctx.now - st.mtimeMs;
  consider(ctx, p, 'snapshots', ageMs, st);
}

/** One temp file: kept when it may hold a message, else judged by the retention (see {@link PruneCategory}). */
function temp(ctx: Ctx, name: string, p: string, st: fs.Stats, swept: TempFile | undefined): void {
  const { report } = ctx;
  const target = tempTarget(name)?.target ?? name;
  let bytes: Buffer;
  try {
    bytes = readRegularFileSync(sys(p), { maxBytes: maxTempBytes(target) }).data;
  } catch (err) {
    const code = codeOf(err);
    if (code === 'ENOENT') return; // adopted or renamed meanwhile
    if ((code === 'EACCES' || code === 'EPERM') && st.uid !== euid()) {
      report.kept.push({ path: p, reason: 'foreign', detail: `uid ${String(st.uid)}'s file; that uid's recovery salvages it` });
      return;
    }
    report.kept.push({ path: p, reason: 'unreadable', detail: `cannot read it (${code}): not provably incomplete` });
    report.errors.push({ path: p, code, hint: hintFor(code, p, euid(), egid()) });
    return;
  }
  const verdict = incompleteBecause(bytes, target);
  const ageMs = ctx.now - st.mtimeMs;
  if (verdict === undefined) {
    const left = report.salvage?.left.find((l) => l.temp === p);
    if (ctx.dryRun) {
      // Salvage's own rule: a writer that may be alive keeps its temp until the last write is a minute old.
      if (swept?.pidAlive !== false && ageMs < DEFAULT_SALVAGE_MIN_AGE_MS) {
        const reason = swept?.pidAlive === true ? 'writer-alive' : 'too-recent';
        report.kept.push({ path: p, reason, detail: `complete, ${String(Math.round(ageMs))} ms old and its writer may still rename it; never deleted` });
        return;
      }
      report.salvaged.push({ temp: p, path: path.join(ctx.dir, target), bytes: bytes.length });
      report.kept.push({ path: p, reason: 'complete-payload', detail: `complete: salvage (recovery, or prune --yes) adopts it as ${target}; never deleted` });
    } else {
      report.kept.push({ path: p, reason: left?.reason ?? 'complete-payload', detail: left?.detail ?? `a complete payload salvage did not adopt (see errors); never deleted` });
    }
    return;
  }
  if ('notPayload' in verdict) {
    if (isBatchName(target) && completeBatch(bytes)) {
      report.kept.push({ path: p, reason: 'complete-batch', detail: `a complete batch file under its temp name (${target}); never deleted` });
      return;
    }
    if (swept?.stale === true) consider(ctx, p, 'temp', swept.ageMs, st);
    return;
  }
  // Incomplete. A dry run reports what a real run does: salvage moves it aside as .partial (when its writer is
  // gone or it is old enough), and the .partial file then follows the retention.
  if (ctx.dryRun) {
    if (swept?.pidAlive === false || ageMs >= DEFAULT_SALVAGE_MIN_AGE_MS) consider(ctx, p, 'partial', ageMs, st);
    return;
  }
  // Left by salvage (a write in progress) or not movable: only a stale one goes, with the temps.
  if (swept?.stale === true) consider(ctx, p, 'temp', swept.ageMs, st);
}

function completeBatch(bytes: Buffer): boolean {
  try {
    return parseBatch(parseJsonTolerant(spoolTextOf(bytes.toString('utf8')).text)).batch !== undefined;
  } catch {
    return false;
  }
}

/** Deletes what matched, each only while it is still the file that was examined (same inode, size, mtime). */
function remove(ctx: Ctx): void {
  const { report, logger } = ctx;
  for (const c of report.matched) {
    const was = ctx.seen.get(c.path);
    let now: fs.Stats | undefined;
    try {
      now = fs.lstatSync(sys(c.path));
    } catch (err) {
      if (codeOf(err) === 'ENOENT') continue;
      now = undefined;
    }
    if (was !== undefined && (now?.ino !== was.ino || now.dev !== was.dev || now.size !== was.size || now.mtimeMs !== was.mtimeMs)) {
      report.kept.push({ path: c.path, reason: 'changed', detail: 'it changed after it was examined; the next prune looks at it again' });
      continue;
    }
    try {
      fs.unlinkSync(sys(c.path));
      report.removed.push(c.path);
    } catch (err) {
      const code = codeOf(err);
      if (code === 'ENOENT') continue;
      const hint = hintFor(code, c.path, euid(), egid());
      report.errors.push({ path: c.path, code, hint });
      logger.error('prune could not remove a spool file', { path: c.path, code, uid: euid(), hint });
    }
  }
}

function log(ctx: Ctx): void {
  const { report, logger, dir } = ctx;
  const complete = report.kept.filter((k) => k.reason !== 'changed' && k.reason !== 'unreadable').length;
  try {
    if (complete > 0) {
      logger.info(`prune kept ${String(complete)} temp file(s) that may hold messages (${report.dryRun ? 'salvage would adopt the complete payloads' : 'see kept'})`, { path: dir });
    }
    if (!report.dryRun) {
      logger.info(`pruned ${String(report.removed.length)} spool file(s), adopted ${String(report.salvaged.length)} payload(s) from temp files first`, { path: dir });
    }
  } catch {
    // the report tells the story
  }
}
