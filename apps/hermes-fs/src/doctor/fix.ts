/** `doctor --fix`: every repair through fs-policy or @hermes/gateway, and only what the audit saw. */
import * as path from 'node:path';
import { formatMode, getKind, reconcileDir, reconcileFile, silentLogger, sweepTempFiles } from '@hermes/fs-policy';
import { salvageTemps } from '@hermes/gateway';
import { type AuditContext, spoolDir } from './context.js';
import type { Change, Finding } from './types.js';

/** Why `--fix` must change nothing in this home, or undefined. */
export function refusal(ctx: AuditContext): string | undefined {
  const unsafe = ctx.findings.find((f) => f.type === 'unsafe-path');
  if (unsafe !== undefined) return `the path to the home is unsafe (${unsafe.path}); nothing was changed`;
  if (ctx.ambiguous) return 'the home looks managed but nothing says whether it is; rerun with --managed or --unmanaged; nothing was changed';
  return undefined;
}

export async function applyFixes(ctx: AuditContext, findings: readonly Finding[], dryRun: boolean, now: number): Promise<Change[]> {
  const changes: Change[] = [];
  const refused = refusal(ctx);
  if (refused !== undefined) {
    for (const f of findings.filter((x) => x.fixable)) {
      changes.push({ type: f.type, path: f.path, action: 'left', before: f.mode ?? null, after: f.mode ?? null, detail: refused });
    }
    return changes;
  }
  for (const f of findings) {
    const isDir = f.type === 'dir-mode' || f.type === 'managed-group-access';
    const isFile = f.type === 'secret-file-mode' || f.type === 'state-file-mode';
    if (!f.fixable || (!isDir && !isFile) || f.kind === null) continue;
    const expect = ctx.seen.get(f.path);
    try {
      const kind = getKind(f.kind as Parameters<typeof getKind>[0]);
      const r = isDir
        ? await reconcileDir(f.path, kind, { env: ctx.env, operator: true, dryRun, ...(expect === undefined ? {} : { expect }) })
        : await reconcileFile(f.path, kind, { env: ctx.env, operator: true, dryRun, ...(expect === undefined ? {} : { expect }) });
      changes.push({
        type: f.type,
        path: f.path,
        action: r.action === 'none' ? 'left' : r.action,
        before: r.before === null ? null : formatMode(r.before),
        after: r.action === 'would-change' && r.expected !== null ? formatMode(r.expected) : r.after === null ? null : formatMode(r.after),
        detail: r.warnings.length > 0 ? r.warnings.join('; ') : `fs-policy ${isDir ? 'reconcileDir' : 'reconcileFile'} (operator${dryRun ? ', dry run' : ''})`,
      });
    } catch (err) {
      changes.push({ type: f.type, path: f.path, action: 'failed', before: f.mode ?? null, after: null, detail: err instanceof Error ? err.message : String(err) });
    }
  }
  const spool = spoolDir(ctx);
  // The reference's temps in the spool are payload writes too: salvaged with the spool's own.
  const temps = findings.filter((f) => (f.type === 'temp-file' || f.type === 'foreign-temp') && f.fixable);
  const spoolTemps = temps.filter((t) => path.dirname(t.path) === spool);
  const otherTemps = temps.filter((t) => path.dirname(t.path) !== spool);
  if (spoolTemps.length > 0) {
    if (dryRun) {
      for (const t of spoolTemps) changes.push({ type: 'temp-file', path: t.path, action: 'would-salvage', before: null, after: null, detail: '@hermes/gateway salvageTemps (dry run)' });
    } else {
      // Salvage first: complete payloads are adopted into the spool, partial ones moved aside — never swept.
      // Every outcome is a change below (adopted, removed, moved aside, left, failed): the library's own log
      // line would only repeat it on stderr, under --json too.
      const r = salvageTemps({ home: ctx.home, env: ctx.env, now, logger: silentLogger });
      for (const a of r.adopted) changes.push({ type: 'temp-file', path: a.temp, action: 'salvaged', before: null, after: null, detail: `adopted into the spool as ${path.basename(a.path)} (@hermes/gateway salvageTemps)` });
      for (const d of r.duplicates) changes.push({ type: 'temp-file', path: d.temp, action: 'removed', before: null, after: null, detail: `a copy of ${path.basename(d.path)}, which holds the same bytes (@hermes/gateway salvageTemps)` });
      for (const p of r.partial) changes.push({ type: 'temp-file', path: p.temp, action: 'salvaged', before: null, after: null, detail: `incomplete: moved aside as ${path.basename(p.partialPath)} (${p.detail})` });
      for (const l of r.left) changes.push({ type: 'temp-file', path: l.temp, action: 'left', before: null, after: null, detail: `${l.reason}: ${l.detail}` });
      for (const e of r.errors) changes.push({ type: 'temp-file', path: e.path, action: 'failed', before: null, after: null, detail: `${e.code}: ${e.message}` });
    }
  }
  if (otherTemps.length > 0) {
    if (dryRun) {
      for (const t of otherTemps) changes.push({ type: 'temp-file', path: t.path, action: 'would-remove', before: null, after: null, detail: 'fs-policy sweepTempFiles (dry run)' });
    } else {
      // The spool's own temps were salvaged above; `keep` leaves them to salvage, while the spool's
      // subdirectories are swept like every other directory (no temp is reported fixable and then skipped).
      const sweep = await sweepTempFiles(ctx.home, { remove: true, now, keep: [spool] });
      for (const p of sweep.removed) changes.push({ type: 'temp-file', path: p, action: 'removed', before: null, after: null, detail: 'fs-policy sweepTempFiles' });
      for (const e of sweep.errors) changes.push({ type: 'temp-file', path: e.path, action: 'failed', before: null, after: null, detail: e.code });
    }
  }
  return changes;
}
