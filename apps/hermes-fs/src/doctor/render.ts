import * as path from 'node:path';
import { type Colors, formatAge, formatBytes, plural } from '../lib/output.js';
import { termSafe } from '../lib/term.js';
import type { DoctorReport, Finding, Severity } from './types.js';

/** Findings of one type shown in text output before "… and N more" (all of them are in --json). */
const PER_TYPE_LIMIT = 25;

const ORDER: Record<Severity, number> = { error: 0, warning: 1, info: 2 };

/** Who decided managed, in words. */
const SOURCE: Readonly<Record<string, string>> = {
  flag: '--managed',
  env: 'HERMES_MANAGED',
  marker: '.managed marker',
  tmpfiles: '--tmpfiles',
};

/** A path relative to the home, terminal-safe (file names are anyone's choice inside a shared home). */
function rel(report: DoctorReport, p: string): string {
  for (const base of [report.realHome, report.home]) {
    const r = path.relative(base, p);
    if (r === '') return '.';
    if (!r.startsWith('..') && !path.isAbsolute(r)) return termSafe(r);
  }
  return termSafe(p);
}

function label(sev: Severity, c: Colors): string {
  const text = sev.toUpperCase().padEnd(7);
  return sev === 'error' ? c.red(c.bold(text)) : sev === 'warning' ? c.yellow(text) : c.dim(text);
}

export function renderDoctor(report: DoctorReport, c: Colors): string {
  const out: string[] = [];
  const m = report.managed;
  const said: string[] = [];
  if (m.managed) said.push(SOURCE[m.source] ?? m.source);
  if (m.source === 'unknown') said.push('managed state unknown');
  if (m.marker === 'untrusted') said.push('.managed marker untrusted, ignored');
  const managed = `${m.managed ? `managed by ${m.system ?? '?'}` : 'unmanaged'}${said.length > 0 ? ` (${said.join('; ')})` : ''}`;
  const homeMode = report.managed.managed
    ? 'HERMES_HOME_MODE ignored (the package manager owns directory modes)'
    : `HERMES_HOME_MODE ${report.homeMode.source === 'env' ? report.homeMode.mode : `unset (${report.homeMode.mode})`}`;
  out.push(`${c.bold('hermes-fs doctor')} ${termSafe(report.home)}${report.realHome === report.home ? '' : ` -> ${termSafe(report.realHome)}`}`);
  out.push(`${managed} · ${homeMode} · audited as uid ${report.uid}`);
  const anchor = `anchor mode ${report.anchor.mode}: ${termSafe(report.anchor.reason)}`;
  out.push(report.anchor.mode === 'refuse' ? c.yellow(anchor) : anchor);
  const s = report.scanned;
  out.push(`scanned ${plural(s.directories, 'directory', 'directories')}, ${plural(s.files, 'file')}, ${plural(s.symlinks, 'symlink')} in ${s.ms} ms`);
  if (report.spool !== null) {
    const sp = report.spool;
    if (!sp.exists) out.push('spool pending_messages/: absent');
    else {
      const parts = [`${sp.payloads} to deliver`];
      if (sp.snapshots > 0) parts.push(plural(sp.snapshots, 'agent-history snapshot'));
      if (sp.foreign > 0) parts.push(`${sp.foreign} of other uids`);
      if (sp.unparseable > 0) parts.push(`${sp.unparseable} unparseable`);
      out.push(
        `spool pending_messages/: ${plural(sp.files, 'payload file')} (${parts.join(', ')}), ${formatBytes(sp.bytes)}` +
          `${sp.bad > 0 ? `, ${sp.bad} .bad` : ''}${sp.oldestAgeMs === null ? '' : `, oldest ${formatAge(sp.oldestAgeMs)}`}; ` +
          `limits ${sp.limits.maxFiles} files / ${formatBytes(sp.limits.maxBytes)} (${sp.limits.source === 'config' ? 'config.yaml' : 'defaults'})`,
      );
    }
  }

  if (report.fix.changes.length > 0 || report.fix.requested || report.fix.dryRun) {
    out.push('');
    out.push(c.bold(report.fix.dryRun ? 'would change (dry run, nothing changed):' : 'changes:'));
    if (report.fix.changes.length === 0) out.push('  nothing to change');
    for (const ch of report.fix.changes) {
      const modes = ch.before !== null || ch.after !== null ? ` ${ch.before ?? '-'} -> ${ch.after ?? '-'}` : '';
      const mark = ch.action === 'failed' || ch.action === 'left' ? c.red('✗') : c.green('✓');
      out.push(`  ${mark} ${ch.action.padEnd(12)} ${rel(report, ch.path)}${modes}  (${termSafe(ch.detail)})`);
    }
  }

  out.push('');
  const findings = [...report.findings].sort((a, b) => ORDER[a.severity] - ORDER[b.severity] || a.type.localeCompare(b.type) || a.path.localeCompare(b.path));
  if (findings.length === 0) {
    out.push(c.green('✓ no findings'));
    return out.join('\n');
  }
  out.push(c.bold(report.fix.requested && !report.fix.dryRun ? 'findings after the fix:' : 'findings:'));
  const shown = new Map<string, number>();
  const hidden = new Map<string, number>();
  for (const f of findings) {
    const n = shown.get(f.type) ?? 0;
    if (n >= PER_TYPE_LIMIT) {
      hidden.set(f.type, (hidden.get(f.type) ?? 0) + 1);
      continue;
    }
    shown.set(f.type, n + 1);
    out.push(...renderFinding(report, f, c));
  }
  for (const [type, n] of hidden) out.push(c.dim(`… and ${n} more ${type} findings (all are listed with --json)`));
  const sum = report.summary;
  out.push('');
  out.push(
    `${plural(findings.length, 'finding')}: ${plural(sum.errors, 'error')}, ${plural(sum.warnings, 'warning')}, ${sum.info} info` +
      (sum.fixable > 0 ? ` · ${sum.fixable} fixable with --fix` : ' · nothing fixable with --fix'),
  );
  return out.join('\n');
}

function renderFinding(report: DoctorReport, f: Finding, c: Colors): string[] {
  const fix = f.fixable ? `fix: ${f.fix}` : `fix (manual): ${f.fix}`;
  return [`${label(f.severity, c)} ${c.bold(f.type)}  ${rel(report, f.path)}`, `        ${termSafe(f.problem)}`, `        ${c.cyan(termSafe(fix))}`];
}
