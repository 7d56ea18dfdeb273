/**
 * `hermes-fs pending prune`: @hermes/gateway's prune, a dry run unless `--yes` (the library's own default). A
 * real run salvages first, as recovery does: complete payloads killed writers left under temp names are adopted,
 * never deleted; the dry run lists them as what would be adopted.
 */
import * as path from 'node:path';
import { loadConfig } from '@hermes/config';
import { silentLogger } from '@hermes/fs-policy';
import { prune, type PruneCategory, type PruneReport } from '@hermes/gateway';
import type { RunContext } from '../commands/common.js';
import type { PendingPruneJson } from '../json/pending.js';
import { count, EXIT, type ExitCode, formatBytes, plural, printJson, println } from '../lib/output.js';
import { termSafe } from '../lib/term.js';

export interface PruneCommandOptions {
  readonly olderThan?: number;
  /** Delete for real; without it nothing is deleted. */
  readonly yes: boolean;
}

/** Files listed in text mode before "… and N more" (all of them are in --json). */
const LIST_LIMIT = 50;

/** What goes by the `.bad` retention: `.bad` files, `.partial` files, stale temps that hold no message. */
const BAD_RETENTION: readonly PruneCategory[] = ['bad', 'partial', 'temp'];

export async function pruneAction(ctx: RunContext, opts: PruneCommandOptions): Promise<ExitCode> {
  const dryRun = !opts.yes;
  const reports: PruneReport[] = [];
  let retention: PendingPruneJson['retentionDays'];
  if (opts.olderThan !== undefined) {
    retention = { bad: opts.olderThan, snapshots: opts.olderThan, source: '--older-than' };
    reports.push(prune({ home: ctx.home, olderThanDays: opts.olderThan, dryRun, include: [...BAD_RETENTION, 'snapshots'], logger: silentLogger }));
  } else {
    const loaded = await loadConfig(ctx.home);
    const p = loaded.config.gateway.pending;
    retention = { bad: p.badRetentionDays, snapshots: p.snapshotRetentionDays, source: loaded.source === 'file' ? 'config.yaml' : 'defaults' };
    reports.push(prune({ home: ctx.home, olderThanDays: p.badRetentionDays, dryRun, include: BAD_RETENTION, logger: silentLogger }));
    reports.push(prune({ home: ctx.home, olderThanDays: p.snapshotRetentionDays, dryRun, include: ['snapshots'], logger: silentLogger }));
  }
  const matched = reports.flatMap((r) => r.matched);
  const removed = reports.flatMap((r) => r.removed);
  const salvaged = reports.flatMap((r) => r.salvaged);
  const kept = reports.flatMap((r) => r.kept);
  const movedAside = reports.flatMap((r) => r.salvage?.partial ?? []);
  const errors = reports.flatMap((r) => r.errors);
  const code = errors.length > 0 ? EXIT.findings : EXIT.ok;
  if (ctx.json) {
    printJson({
      schemaVersion: 1,
      command: 'pending prune',
      ok: errors.length === 0,
      home: ctx.home,
      dryRun,
      retentionDays: retention,
      matched,
      removed,
      salvaged,
      movedAside,
      kept,
      errors,
    } satisfies PendingPruneJson);
    return code;
  }
  const name = (p: string): string => termSafe(path.basename(p));
  for (const s of salvaged.slice(0, LIST_LIMIT)) {
    println(`  ${dryRun ? 'would adopt' : 'adopted'} ${name(s.temp)} as ${name(s.path)}  (a complete payload under a temp name: never deleted)`);
  }
  if (salvaged.length > LIST_LIMIT) println(`  … and ${count(salvaged.length - LIST_LIMIT)} more (all of them with --json)`);
  const salvagedTemps = new Set(salvaged.map((s) => s.temp));
  const keptShown = kept.filter((k) => !salvagedTemps.has(k.path));
  for (const k of keptShown.slice(0, LIST_LIMIT)) println(`  kept ${name(k.path)} (${k.reason}): ${termSafe(k.detail)}`);
  if (keptShown.length > LIST_LIMIT) println(`  … and ${count(keptShown.length - LIST_LIMIT)} more (all of them with --json)`);
  for (const m of movedAside.slice(0, LIST_LIMIT)) println(`  moved aside ${name(m.temp)} as ${name(m.partialPath)} (${termSafe(m.detail)})`);
  const verb = dryRun ? 'would delete' : 'deleted';
  const removedSet = new Set(removed);
  for (const m of matched.slice(0, LIST_LIMIT)) {
    const done = dryRun || removedSet.has(m.path);
    println(`  ${done ? verb : 'could not delete'} ${m.category.padEnd(9)} ${name(m.path)}  (${m.ageDays.toFixed(1)} days, ${formatBytes(m.bytes)})`);
  }
  if (matched.length > LIST_LIMIT) println(`  … and ${count(matched.length - LIST_LIMIT)} more (all of them with --json)`);
  for (const e of errors) println(`  error ${termSafe(e.path)}: ${e.code}${e.hint === undefined ? '' : ` — fix: ${termSafe(e.hint)}`}`);
  const ages = retention.bad === retention.snapshots ? `older than ${retention.bad} days` : `.bad and .partial older than ${retention.bad} days, snapshots older than ${retention.snapshots} days`;
  const keptNote = kept.length > 0 ? `; ${plural(kept.length, 'temp file')} kept (they may hold messages)` : '';
  if (dryRun) {
    const adopt = salvaged.length > 0 ? `; would adopt ${plural(salvaged.length, 'complete payload')} from temp files first` : '';
    println(`dry run: would delete ${plural(matched.length, 'spool file')} (${ages}, ${retention.source})${adopt}${keptNote}; nothing was deleted`);
    if (matched.length > 0) println('run again with --yes to delete them');
    else if (salvaged.length > 0) println('run again with --yes to adopt them (the next recovery adopts them too)');
  } else {
    const adopt = salvaged.length > 0 ? `; adopted ${plural(salvaged.length, 'complete payload')} from temp files first` : '';
    println(`deleted ${plural(removed.length, 'spool file')} (${ages}, ${retention.source})${adopt}${keptNote}${errors.length > 0 ? `; ${plural(errors.length, 'error')}` : ''}`);
  }
  return code;
}
