/** The end-of-pass log lines of a recovery: one line per cause, the cause first, never a line per file. */
import * as path from 'node:path';
import { count, type GatewayLogger } from './log.js';
import type { KeptReason, RecoveryReport } from './recover-types.js';
import { euid, type Problem } from './recover-util.js';

export interface SummaryContext {
  readonly report: RecoveryReport;
  readonly logger: GatewayLogger;
  readonly dir: string;
  /** The first failure of the store itself, if any. */
  readonly storeFailure: Problem | undefined;
  /** Refused unlinks of committed files. */
  readonly unremoved: readonly Problem[];
  /** Errors other than the store's. */
  readonly problems: readonly Problem[];
}

/** Logs the summary of a pass (a throwing logger changes nothing). */
export function logRecoverySummary(ctx: SummaryContext): void {
  const r = ctx.report;
  const log = ctx.logger;
  const dir = ctx.dir;
  try {
    const storeKept = r.kept.filter((k) => k.reason === 'store-error').length;
    const f = ctx.storeFailure;
    if (f !== undefined) {
      // What this pass committed before the store failed stays committed: said first, so the line never reads
      // as if nothing was written.
      const committed = r.counts.inserted;
      const what =
        committed === 0
          ? `kept ${count(storeKept)} file(s)`
          : `${count(committed)} file(s) committed, then the store failed${storeKept > 0 ? `; kept ${count(storeKept)} file(s)` : ''}`;
      log.error(
        `pending-message recovery: ${what}: ${f.code} at ${f.path} (uid ${String(euid())}): ${f.message} — fix: ${f.hint}`,
        { path: f.path, code: f.code, uid: euid(), kept: storeKept, committed },
      );
    }
    const byReason = new Map<KeptReason, { n: number; first: { path: string; detail: string } }>();
    for (const k of r.kept) {
      // Counted by the store failure's line and the not-removed lines; a file a working store gave no verdict
      // for has a line of its own.
      if ((k.reason === 'store-error' && f !== undefined) || k.reason === 'not-removed') continue;
      const g = byReason.get(k.reason);
      if (g === undefined) byReason.set(k.reason, { n: 1, first: k });
      else g.n++;
    }
    for (const [reason, g] of byReason) {
      const note = reason === 'checkpoint-pending' ? ': committed; the next pass removes them without inserting them again' : '';
      log.warn(`pending-message recovery: kept ${count(g.n)} file(s) (${reason})${note}; the first, ${path.basename(g.first.path)}: ${g.first.detail}`, {
        path: g.first.path,
        reason,
        kept: g.n,
      });
    }
    for (const g of groupByCode(ctx.unremoved)) {
      log.error(
        `pending-message recovery: could not remove ${count(g.n)} recovered file(s) (not-removed): ${g.code} at ${g.where} (uid ${String(euid())}) — ` +
          `fix: ${g.first.hint} Their receipts are committed: the next pass removes them without inserting them again.`,
        { path: g.where, code: g.code, uid: euid(), kept: g.n },
      );
    }
    for (const g of groupByCode(ctx.problems)) {
      log.error(
        `pending-message recovery: ${count(g.n)} error(s): ${g.code} at ${g.where} (uid ${String(euid())}): ${g.first.message} — fix: ${g.first.hint}`,
        { path: g.where, code: g.code, uid: euid(), count: g.n },
      );
    }
    if (r.duplicates.length > 0) {
      const d = r.duplicates[0];
      const fate = fateOf(r.duplicates, r.kept);
      log.warn(
        `pending-message recovery: ${count(r.duplicates.length)} file(s) held a payload this pass delivered under another name (duplicate, delivered once, ${fate}); ` +
          `the first: ${path.basename(d?.path ?? '')} duplicates ${path.basename(d?.of ?? '')}`,
        { path: d?.path, duplicates: r.duplicates.length },
      );
    }
    if (r.bad.length > 0) {
      log.warn(`pending-message recovery: ${count(r.bad.length)} file(s) rejected by the session store, renamed .bad; the first: ${r.bad[0]?.error ?? ''}`, {
        path: r.bad[0]?.badPath,
      });
    }
    if (r.snapshots.length > 0) {
      log.warn(`pending-message recovery: ${count(r.snapshots.length)} agent-history snapshot(s) left for the operator (never replayed automatically)`, {
        path: dir,
      });
    }
    if (r.foreignOwner.length > 0) {
      const uids = [...new Set(r.foreignOwner.map((x) => x.uid))].join(', ');
      log.info(`pending-message recovery: ${count(r.foreignOwner.length)} payload(s) of uid ${uids} left for that uid's own recovery`, { path: dir });
    }
    const adopted = r.salvage?.adopted.length ?? 0;
    const fromBatches = r.batches.reduce((n, b) => n + b.inserted, 0);
    const notes = [
      ...(adopted > 0 ? [`${count(adopted)} adopted from temp files`] : []),
      ...(r.batches.length > 0 ? [`${count(fromBatches)} from ${count(r.batches.length)} batch file(s), ${count(r.batches.filter((b) => b.removed).length)} removed`] : []),
    ];
    const line =
      `pending-message recovery: ${count(r.counts.inserted)} inserted${notes.length > 0 ? ` (${notes.join('; ')})` : ''}, ` +
      `${count(r.counts.alreadyCommitted)} already committed, ${count(r.kept.length)} kept, ${count(r.bad.length)} bad, ` +
      `${count(r.snapshots.length)} snapshot(s), ${count(r.foreignOwner.length)} foreign, ${count(r.errors.length)} error(s)`;
    const unusual =
      adopted > 0 || (r.salvage?.partial.length ?? 0) > 0 || r.kept.length > 0 || r.bad.length > 0 || r.errors.length > 0;
    if (unusual) log.warn(line, { path: dir });
    else log.info(line, { path: dir });
  } catch {
    // a throwing logger changes nothing about the pass
  }
}

/**
 * What became of committed files, in words: `removed` when every one is gone, else how many were removed, how
 * many could not be (`not-removed`) and how many wait for a checkpoint (`checkpoint-pending`).
 */
export function fateOf(entries: readonly { readonly path: string; readonly removed: boolean }[], kept: RecoveryReport['kept']): string {
  const gone = entries.filter((e) => e.removed).length;
  if (gone === entries.length) return 'removed';
  const reasons = new Map(kept.map((k) => [k.path, k.reason]));
  let refused = 0;
  let pending = 0;
  for (const e of entries) {
    if (e.removed) continue;
    if (reasons.get(e.path) === 'checkpoint-pending') pending++;
    else refused++;
  }
  const parts = [`${count(gone)} removed`];
  if (refused > 0) parts.push(`could not remove ${count(refused)}`);
  if (pending > 0) parts.push(`${count(pending)} kept until a checkpoint (checkpoint-pending)`);
  return parts.join(', ');
}

/** Problems grouped by code: count, the common path, the first of them. */
function groupByCode(problems: readonly Problem[]): { code: string; n: number; where: string; first: Problem }[] {
  const groups = new Map<string, { code: string; n: number; paths: Set<string>; first: Problem }>();
  for (const p of problems) {
    const g = groups.get(p.code);
    if (g === undefined) groups.set(p.code, { code: p.code, n: 1, paths: new Set([p.path]), first: p });
    else {
      g.n++;
      g.paths.add(p.path);
    }
  }
  return [...groups.values()].map((g) => ({ code: g.code, n: g.n, where: g.paths.size === 1 ? g.first.path : path.dirname(g.first.path), first: g.first }));
}
