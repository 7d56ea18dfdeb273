/** `hermes-fs pending prune`: @hermes/gateway's prune, a dry run unless `--yes` (the library's own default). */
import * as path from 'node:path';
import { loadConfig } from '@hermes/config';
import { silentLogger } from '@hermes/fs-policy';
import { prune, type PruneReport } from '@hermes/gateway';
import type { RunContext } from '../commands/common.js';
import { count, EXIT, type ExitCode, formatBytes, plural, printJson, println } from '../lib/output.js';
import { termSafe } from '../lib/term.js';

export interface PruneCommandOptions {
  readonly olderThan?: number;
  /** Delete for real; without it nothing is deleted. */
  readonly yes: boolean;
}

/** Files listed in text mode before "… and N more" (all of them are in --json). */
const LIST_LIMIT = 50;

export async function pruneAction(ctx: RunContext, opts: PruneCommandOptions): Promise<ExitCode> {
  const dryRun = !opts.yes;
  const reports: PruneReport[] = [];
  let retention: { bad: number; snapshots: number; source: string };
  if (opts.olderThan !== undefined) {
    retention = { bad: opts.olderThan, snapshots: opts.olderThan, source: '--older-than' };
    reports.push(prune({ home: ctx.home, olderThanDays: opts.olderThan, dryRun, include: ['bad', 'snapshots', 'temp'], logger: silentLogger }));
  } else {
    const loaded = await loadConfig(ctx.home);
    const p = loaded.config.gateway.pending;
    retention = { bad: p.badRetentionDays, snapshots: p.snapshotRetentionDays, source: loaded.source === 'file' ? 'config.yaml' : 'defaults' };
    reports.push(prune({ home: ctx.home, olderThanDays: p.badRetentionDays, dryRun, include: ['bad', 'temp'], logger: silentLogger }));
    reports.push(prune({ home: ctx.home, olderThanDays: p.snapshotRetentionDays, dryRun, include: ['snapshots'], logger: silentLogger }));
  }
  const matched = reports.flatMap((r) => r.matched);
  const removed = reports.flatMap((r) => r.removed);
  const errors = reports.flatMap((r) => r.errors);
  const code = errors.length > 0 ? EXIT.findings : EXIT.ok;
  if (ctx.json) {
    printJson({ schemaVersion: 1, command: 'pending prune', ok: errors.length === 0, home: ctx.home, dryRun, retentionDays: retention, matched, removed, errors });
    return code;
  }
  const verb = dryRun ? 'would delete' : 'deleted';
  const removedSet = new Set(removed);
  for (const m of matched.slice(0, LIST_LIMIT)) {
    const done = dryRun || removedSet.has(m.path);
    println(`  ${done ? verb : 'could not delete'} ${m.category.padEnd(9)} ${termSafe(path.basename(m.path))}  (${m.ageDays.toFixed(1)} days, ${formatBytes(m.bytes)})`);
  }
  if (matched.length > LIST_LIMIT) println(`  … and ${count(matched.length - LIST_LIMIT)} more (all of them with --json)`);
  for (const e of errors) println(`  error ${termSafe(e.path)}: ${e.code}`);
  const ages = retention.bad === retention.snapshots ? `older than ${retention.bad} days` : `.bad older than ${retention.bad} days, snapshots older than ${retention.snapshots} days`;
  if (dryRun) {
    println(`dry run: would delete ${plural(matched.length, 'spool file')} (${ages}, ${retention.source}); nothing was deleted`);
    if (matched.length > 0) println('run again with --yes to delete them');
  } else {
    println(`deleted ${plural(removed.length, 'spool file')} (${ages}, ${retention.source})${errors.length > 0 ? `; ${plural(errors.length, 'error')}` : ''}`);
  }
  return code;
}
