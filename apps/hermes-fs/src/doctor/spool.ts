/** The doctor's view of the shutdown spool: @hermes/gateway's statistics against config.yaml's limits. */
import type { PendingSpoolConfig } from '@hermes/config';
import { silentLogger } from '@hermes/fs-policy';
import { prune, spoolStats } from '@hermes/gateway';
import { formatBytes, plural } from '../lib/output.js';
import { shellQuote } from '../lib/shell.js';
import type { Finding, SpoolSummary } from './types.js';

/** Payloads older than this are worth an operator's look (the gateway normally recovers them on start). */
const STALE_PAYLOAD_MS = 24 * 3_600_000;

/**
 * `.partial` files (incomplete writes salvage moved aside, `doctor --fix` among them): they hold no complete
 * message and wait for `pending prune` past the `.bad` retention; said so, with the command that lists them.
 */
function partialFiles(realHome: string, q: string, limits: PendingSpoolConfig, now: number, dir: string, findings: Finding[]): void {
  const all = prune({ home: realHome, olderThanDays: 0, include: ['partial'], dryRun: true, now, logger: silentLogger }).matched.filter((m) => m.category === 'partial');
  if (all.length === 0) return;
  const bytes = all.reduce((n, m) => n + m.bytes, 0);
  const expired = all.filter((m) => m.ageDays > limits.badRetentionDays).length;
  findings.push({
    type: 'temp-file',
    severity: expired > 0 ? 'warning' : 'info',
    path: dir,
    kind: 'pending-messages',
    problem:
      `${plural(all.length, 'incomplete write')} moved aside as .partial (${formatBytes(bytes)}): no complete message in them; ` +
      (expired > 0
        ? `${String(expired)} older than gateway.pending.bad_retention_days (${String(limits.badRetentionDays)})`
        : `kept until gateway.pending.bad_retention_days (${String(limits.badRetentionDays)}) has passed`),
    fix: `hermes-fs pending list --home ${q}   (kind "partial"); then hermes-fs pending prune --home ${q}   (a dry run; --yes deletes those past the retention)`,
    fixable: false,
  });
}

export function auditSpool(
  realHome: string,
  home: string,
  limits: PendingSpoolConfig,
  source: 'config' | 'default',
  now: number,
  findings: Finding[],
): Promise<SpoolSummary> {
  const stats = spoolStats({ home: realHome, now });
  const q = shellQuote(home);
  for (const e of stats.errors) {
    if (findings.some((f) => f.type === 'unreadable' && f.path === e.path)) continue; // the walk reported it
    findings.push({
      type: 'unreadable',
      severity: 'warning',
      path: e.path,
      kind: 'pending-messages',
      problem: `the spool could not be read (${e.code}); its statistics are incomplete`,
      fix: 'run hermes-fs doctor as the home\'s owner or as root',
      fixable: false,
    });
  }
  if (stats.count > limits.maxFiles) {
    findings.push({
      type: 'spool-files',
      severity: 'warning',
      path: stats.dir,
      kind: 'pending-messages',
      problem: `${stats.count} payload files exceed gateway.pending.max_files (${limits.maxFiles}${source === 'default' ? ', default' : ''})`,
      fix: `hermes-fs pending recover --home ${q}   (delivers them into state.db; then hermes-fs pending prune --home ${q})`,
      fixable: false,
    });
  }
  if (stats.bytes > limits.maxBytes) {
    findings.push({
      type: 'spool-bytes',
      severity: 'warning',
      path: stats.dir,
      kind: 'pending-messages',
      problem: `payloads take ${formatBytes(stats.bytes)}, over gateway.pending.max_bytes (${formatBytes(limits.maxBytes)})`,
      fix: `hermes-fs pending recover --home ${q}`,
      fixable: false,
    });
  }
  if (stats.bad.count > 0) {
    const old = prune({ home: realHome, olderThanDays: limits.badRetentionDays, include: ['bad'], dryRun: true, now });
    findings.push(
      old.matched.length > 0
        ? {
            type: 'spool-bad',
            severity: 'warning',
            path: stats.dir,
            kind: 'pending-messages',
            problem: `${old.matched.length} of ${stats.bad.count} .bad files (rows state.db rejected) are older than gateway.pending.bad_retention_days (${limits.badRetentionDays})`,
            fix: `inspect with hermes-fs pending list/show, then: hermes-fs pending prune --home ${q} --older-than ${limits.badRetentionDays}`,
            fixable: false,
          }
        : {
            type: 'spool-bad',
            severity: 'info',
            path: stats.dir,
            kind: 'pending-messages',
            problem: `${stats.bad.count} .bad file${stats.bad.count === 1 ? '' : 's'}: messages state.db rejected, kept for inspection`,
            fix: `hermes-fs pending list --home ${q}; hermes-fs pending show ID`,
            fixable: false,
          },
    );
  }
  if (stats.snapshots > 0) {
    const old = prune({ home: realHome, olderThanDays: limits.snapshotRetentionDays, include: ['snapshots'], dryRun: true, now });
    findings.push(
      old.matched.length > 0
        ? {
            type: 'spool-snapshots',
            severity: 'warning',
            path: stats.dir,
            kind: 'pending-messages',
            problem: `${old.matched.length} of ${stats.snapshots} agent-history snapshots are older than gateway.pending.snapshot_retention_days (${limits.snapshotRetentionDays})`,
            fix: `salvage with hermes-fs pending export ID --format md, then: hermes-fs pending prune --home ${q} --older-than ${limits.snapshotRetentionDays}`,
            fixable: false,
          }
        : {
            type: 'spool-snapshots',
            severity: 'info',
            path: stats.dir,
            kind: 'pending-messages',
            problem: `${stats.snapshots} agent-history snapshot${stats.snapshots === 1 ? ' waits' : 's wait'} for the operator (never replayed automatically)`,
            fix: `hermes-fs pending list --home ${q}; hermes-fs pending export ID --format md`,
            fixable: false,
          },
    );
  }
  partialFiles(realHome, q, limits, now, stats.dir, findings);
  const oldestAgeMs = stats.oldestTs === null ? null : Math.max(0, now - stats.oldestTs * 1000);
  const payloads = Math.max(0, stats.count - stats.snapshots - stats.unparseable - stats.foreign.length);
  if (payloads > 0 && oldestAgeMs !== null && oldestAgeMs > STALE_PAYLOAD_MS) {
    findings.push({
      type: 'spool-pending',
      severity: 'info',
      path: stats.dir,
      kind: 'pending-messages',
      problem: `${payloads} undelivered payloads, the oldest from ${new Date(now - oldestAgeMs).toISOString()}; the gateway replays them when it starts`,
      fix: `hermes-fs pending recover --home ${q}`,
      fixable: false,
    });
  }
  if (stats.unparseable > 0) {
    findings.push({
      type: 'spool-pending',
      severity: 'warning',
      path: stats.dir,
      kind: 'pending-messages',
      problem: `${stats.unparseable} spool files are not valid JSON payloads; recovery keeps them`,
      fix: `hermes-fs pending list --home ${q} (status "unparseable"), inspect, then remove by hand`,
      fixable: false,
    });
  }
  return Promise.resolve({
    dir: stats.dir,
    exists: stats.exists,
    files: stats.count,
    bytes: stats.bytes,
    payloads,
    bad: stats.bad.count,
    snapshots: stats.snapshots,
    unparseable: stats.unparseable,
    foreign: stats.foreign.length,
    oldestAgeMs,
    limits: { ...limits, source },
  });
}
