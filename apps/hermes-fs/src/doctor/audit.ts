/**
 * `hermes-fs doctor`: audits a real Hermes home against the @hermes/fs-policy registry and, with `--fix`,
 * repairs what can be repaired safely — always through fs-policy (reconcileDir, sweepTempFiles), never with
 * a permission call of its own.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ConfigError, defaultConfig, loadConfig, type PendingSpoolConfig } from '@hermes/config';
import {
  type ArtifactKind,
  dirModeFor,
  expectedDirMode,
  fileMaxModeFor,
  formatMode,
  getKind,
  type HermesEnvironment,
  listKinds,
  loadEnvironment,
  parseTempName,
  reconcileDir,
  reconcileFile,
  sweepTempFiles,
} from '@hermes/fs-policy';
import { CliError, EXIT, type ExitCode } from '../lib/output.js';
import { shellQuote } from '../lib/shell.js';
import { auditSpool } from './spool.js';
import type { Change, DoctorReport, Finding, Severity } from './types.js';
import { walk } from './walk.js';

export interface DoctorOptions {
  readonly home: string;
  readonly fix: boolean;
  readonly dryRun: boolean;
  readonly env?: NodeJS.ProcessEnv;
  readonly now?: number;
}

/** Kinds whose files hold credentials or verbatim conversation content, audited for group/world read. */
const SECRET_DIR_KINDS = ['pending-messages', 'moa-traces', 'saved-sessions', 'trajectories'] as const;

/** What a file of each audited kind is, in the finding's words. */
const WHAT: Readonly<Record<string, string>> = {
  'pending-messages': 'a spool payload holds verbatim undelivered messages',
  'moa-traces': 'a MoA trace holds verbatim model inputs and outputs',
  'saved-sessions': 'a /save snapshot holds a whole conversation',
  trajectories: 'a trajectory holds a whole transcript',
  'state-db': 'the session database holds every conversation',
  secrets: 'a credential file',
};

function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

function describeBits(extra: number): string {
  const who: string[] = [];
  if ((extra & 0o070) !== 0) who.push('group');
  if ((extra & 0o007) !== 0) who.push('others');
  const what: string[] = [];
  if ((extra & 0o044) !== 0) what.push('read');
  if ((extra & 0o022) !== 0) what.push('write');
  if ((extra & 0o011) !== 0) what.push('search');
  return `${what.join('/') || 'access'} by ${who.join(' and ')}`;
}

interface AuditContext {
  readonly home: string;
  readonly realHome: string;
  readonly env: HermesEnvironment;
  readonly homeStat: fs.Stats;
  readonly uid: number;
  readonly findings: Finding[];
}

function checkSecretFile(p: string, name: string, st: fs.Stats, kind: ArtifactKind, ctx: AuditContext): void {
  const mode = st.mode & 0o7777;
  // The registry's ceiling: owner-only unmanaged; managed, the group rw the NixOS activation grants.
  const allowed = fileMaxModeFor(kind, ctx.env);
  const extra = mode & 0o077 & ~allowed;
  if (extra === 0) return;
  const canFix = ctx.uid === 0 || st.uid === ctx.uid;
  const target = mode & ~extra & 0o7777;
  const severity: Severity = (extra & 0o007) !== 0 ? 'error' : 'warning';
  ctx.findings.push({
    type: 'secret-file-mode',
    severity,
    path: p,
    kind: kind.name,
    problem: `mode ${formatMode(mode)} allows ${describeBits(extra)}; ${WHAT[kind.name] ?? kind.description}: ${formatMode(allowed)} at most`,
    fix: canFix
      ? `hermes-fs doctor --fix --home ${shellQuote(ctx.home)}   (fs-policy reconcileFile; or: chmod ${formatMode(target)} ${shellQuote(p)})`
      : `as uid ${st.uid} or root: chmod ${formatMode(target)} ${shellQuote(p)}`,
    fixable: canFix,
    mode: formatMode(mode),
    expected: formatMode(allowed),
  });
}

function checkKindDir(p: string, st: fs.Stats, kind: ArtifactKind, ctx: AuditContext): void {
  const mode = st.mode & 0o7777;
  const canFix = ctx.uid === 0 || st.uid === ctx.uid;
  const fixCmd = `hermes-fs doctor --fix --home ${shellQuote(ctx.home)}`;
  if (ctx.env.managed.managed) {
    const expected = expectedDirMode(mode, kind, ctx.env, true);
    if (expected === null || expected === mode) return;
    const missing: string[] = [];
    if ((mode & 0o070) !== 0o070) missing.push(`group ${['r', 'w', 'x'].filter((_, i) => (mode & (0o040 >> i)) === 0).join('')}`);
    if ((mode & 0o2000) === 0) missing.push('setgid');
    ctx.findings.push({
      type: 'managed-group-access',
      severity: 'error',
      path: p,
      kind: kind.name,
      problem:
        `managed install: mode ${formatMode(mode)} lacks ${missing.join(' and ')}; a second uid of the service group ` +
        `cannot create files here (EACCES), so its writes are lost`,
      fix: canFix ? `${fixCmd}   (fs-policy reconcileDir, operator: ${formatMode(mode)} -> ${formatMode(expected)})` : `as uid ${st.uid} or root: ${fixCmd}`,
      fixable: canFix,
      mode: formatMode(mode),
      expected: formatMode(expected),
    });
    return;
  }
  const expected = dirModeFor(kind, ctx.env);
  if (expected === null || expected === mode) return;
  const looser = (mode & ~expected & 0o077) !== 0;
  ctx.findings.push({
    type: 'dir-mode',
    severity: looser ? 'error' : 'warning',
    path: p,
    kind: kind.name,
    problem: looser
      ? `mode ${formatMode(mode)} allows ${describeBits(mode & ~expected & 0o077)}; policy for ${kind.name} is ${formatMode(expected)}`
      : `mode ${formatMode(mode)} differs from the policy for ${kind.name} (${formatMode(expected)})`,
    fix: canFix ? `${fixCmd}   (or: chmod ${formatMode(expected)} ${shellQuote(p)})` : `as uid ${st.uid} or root: chmod ${formatMode(expected)} ${shellQuote(p)}`,
    fixable: canFix,
    mode: formatMode(mode),
    expected: formatMode(expected),
  });
}

function checkOwner(p: string, st: fs.Stats, kind: string | null, ctx: AuditContext): void {
  if (ctx.env.managed.managed) {
    // Several uids share a managed home; what they must share is the group (setgid keeps it).
    const gid = ctx.env.gid ?? ctx.homeStat.gid;
    if (st.gid === gid) return;
    ctx.findings.push({
      type: 'owner',
      severity: 'warning',
      path: p,
      kind,
      problem: `group ${st.gid}, not the home's group ${gid}: the other members of the service group lose access`,
      fix: `chgrp ${gid} ${shellQuote(p)}`,
      fixable: false,
    });
    return;
  }
  const uid = ctx.env.uid ?? ctx.homeStat.uid;
  if (st.uid === uid) return;
  const gid = ctx.env.gid ?? ctx.homeStat.gid;
  ctx.findings.push({
    type: 'owner',
    severity: 'warning',
    path: p,
    kind,
    problem: `owned by uid ${st.uid}, not ${ctx.env.uid === undefined ? "the home's owner" : 'HERMES_UID'} ${uid}: the agent cannot rewrite or remove it`,
    fix: `chown ${uid}:${gid} ${shellQuote(p)}`,
    fixable: false,
  });
}

function checkSymlink(p: string, ctx: AuditContext): void {
  let target = '?';
  try {
    target = fs.readlinkSync(p);
  } catch {
    // keep '?'
  }
  let real: string;
  try {
    real = fs.realpathSync(p);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
    ctx.findings.push({
      type: 'symlink-dangling',
      severity: 'warning',
      path: p,
      kind: null,
      problem: `symbolic link to ${target} cannot be resolved (${code}); Hermes refuses to write through it and never creates its target`,
      fix: `restore the target (mount it), or remove the link: rm ${shellQuote(p)}`,
      fixable: false,
    });
    return;
  }
  if (isInside(real, ctx.realHome)) return;
  // NixOS plugin links point into the read-only store: outside the home by design, and unwritable.
  if (real.startsWith('/nix/store/')) return;
  ctx.findings.push({
    type: 'symlink-escape',
    severity: 'warning',
    path: p,
    kind: null,
    problem: `symbolic link leaves the home (-> ${real}); Hermes refuses to write through it, and whatever it reaches is outside this audit`,
    fix: `if the link is not deliberate, remove it: rm ${shellQuote(p)}; otherwise point it inside ${ctx.realHome}`,
    fixable: false,
  });
}

interface ScanCounts {
  directories: number;
  files: number;
  symlinks: number;
}

function scan(ctx: AuditContext): ScanCounts {
  const counts: ScanCounts = { directories: 0, files: 0, symlinks: 0 };
  const kindDirs = new Map<string, ArtifactKind>();
  for (const kind of listKinds()) {
    if (kind.dir === null) continue;
    if (kind.dir === '' && kind.name !== 'home') continue;
    kindDirs.set(kind.dir, kind);
  }
  const secretDirs = SECRET_DIR_KINDS.map((name) => {
    const kind = getKind(name);
    return { prefix: `${kind.dir ?? ''}/`, kind };
  });
  const homeFiles = new Map<string, ArtifactKind>();
  for (const name of ['state-db', 'secrets'] as const) {
    const kind = getKind(name);
    for (const f of kind.files ?? []) homeFiles.set(f, kind);
  }
  const kindOfFile = (rel: string, name: string): ArtifactKind | undefined => {
    if (!rel.includes('/')) return homeFiles.get(name);
    for (const s of secretDirs) if (rel.startsWith(s.prefix)) return s.kind;
    return undefined;
  };

  const { errors } = walk(ctx.realHome, {
    directory(entry) {
      counts.directories++;
      const kind = kindDirs.get(entry.rel);
      checkOwner(entry.path, entry.stat, kind?.name ?? null, ctx);
      if (kind !== undefined) checkKindDir(entry.path, entry.stat, kind, ctx);
      return true;
    },
    file(entry) {
      counts.files++;
      const kind = kindOfFile(entry.rel, entry.name);
      checkOwner(entry.path, entry.stat, kind?.name ?? null, ctx);
      // Leftover temp files are reported (and swept) as such, below.
      if (kind !== undefined && parseTempName(entry.name) === null) checkSecretFile(entry.path, entry.name, entry.stat, kind, ctx);
    },
    symlink(entry) {
      counts.symlinks++;
      checkSymlink(entry.path, ctx);
    },
  });
  for (const e of errors) {
    ctx.findings.push({
      type: 'unreadable',
      severity: 'warning',
      path: e.path,
      kind: null,
      problem: `cannot be read by uid ${ctx.uid} (${e.code}); it was not audited`,
      fix: `run hermes-fs doctor as the home's owner or as root`,
      fixable: false,
    });
  }
  return counts;
}

async function auditTemps(ctx: AuditContext, now: number): Promise<void> {
  const sweep = await sweepTempFiles(ctx.realHome, { now });
  for (const t of sweep.found) {
    ctx.findings.push(
      t.stale
        ? {
            type: 'temp-file',
            severity: 'warning',
            path: t.path,
            kind: null,
            problem: `leftover ${t.type === 'tmp' ? 'temp file of an unfinished write' : 'rollback copy'} of ${path.basename(t.target)} (${t.size} bytes, writer pid ${t.pid} ${t.pidAlive ? 'alive but the file is over an hour old' : 'is gone'})`,
            fix: `hermes-fs doctor --fix --home ${shellQuote(ctx.home)}   (fs-policy sweepTempFiles; or: rm ${shellQuote(t.path)})`,
            fixable: true,
          }
        : {
            type: 'temp-file',
            severity: 'info',
            path: t.path,
            kind: null,
            problem: `temp file of a write in progress (pid ${t.pid} is alive); left alone`,
            fix: 'nothing to do; it disappears when the write completes',
            fixable: false,
          },
    );
  }
}

interface LoadedLimits {
  limits: PendingSpoolConfig;
  source: 'config' | 'default';
}

async function loadLimits(ctx: AuditContext): Promise<LoadedLimits> {
  try {
    const loaded = await loadConfig(ctx.home);
    for (const w of loaded.warnings) {
      ctx.findings.push({
        type: 'config',
        severity: 'info',
        path: loaded.file,
        kind: 'secrets',
        problem: w,
        fix: 'write the value in its canonical form in config.yaml',
        fixable: false,
      });
    }
    return { limits: loaded.config.gateway.pending, source: loaded.source === 'file' ? 'config' : 'default' };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    ctx.findings.push({
      type: 'config',
      severity: 'error',
      path: err.file,
      kind: 'secrets',
      problem: err.message.split('\n').join('; '),
      fix: `correct the listed keys in ${shellQuote(err.file)}; spool limits use the defaults meanwhile`,
      fixable: false,
    });
    return { limits: defaultConfig().gateway.pending, source: 'default' };
  }
}

async function audit(options: DoctorOptions): Promise<Omit<DoctorReport, 'fix' | 'summary'> & { ctx: AuditContext }> {
  const started = performance.now();
  const home = path.resolve(options.home);
  let homeStat: fs.Stats;
  try {
    homeStat = fs.statSync(home);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
    throw new CliError(`cannot audit ${home}: ${code === 'ENOENT' ? 'it does not exist' : code}`, {
      hint: 'pass the home with --home DIR or set HERMES_HOME',
    });
  }
  if (!homeStat.isDirectory()) throw new CliError(`cannot audit ${home}: not a directory`, { hint: 'pass the home with --home DIR' });
  const realHome = fs.realpathSync(home);
  const env = loadEnvironment({ home, env: options.env ?? process.env });
  const uid = typeof process.geteuid === 'function' ? process.geteuid() : -1;
  const ctx: AuditContext = { home, realHome, env, homeStat, uid, findings: [] };
  for (const w of env.warnings) {
    ctx.findings.push({
      type: 'environment',
      severity: 'warning',
      path: home,
      kind: 'home',
      problem: w,
      fix: 'correct the variable in the service environment (or unset it)',
      fixable: false,
    });
  }
  const now = options.now ?? Date.now();
  const counts = scan(ctx);
  await auditTemps(ctx, now);
  const { limits, source } = await loadLimits(ctx);
  const spool = await auditSpool(ctx.realHome, ctx.home, limits, source, now, ctx.findings);
  return {
    schemaVersion: 1,
    command: 'doctor',
    home,
    realHome,
    managed: { managed: env.managed.managed, system: env.managed.system, source: env.managed.source },
    homeMode: { mode: formatMode(env.homeMode.mode), source: env.homeMode.source },
    uid,
    scanned: { ...counts, ms: Math.round(performance.now() - started) },
    spool,
    findings: ctx.findings,
    ctx,
  };
}

async function applyFixes(ctx: AuditContext, findings: readonly Finding[], dryRun: boolean, now: number): Promise<Change[]> {
  const changes: Change[] = [];
  for (const f of findings) {
    const isDir = f.type === 'dir-mode' || f.type === 'managed-group-access';
    if (!f.fixable || (!isDir && f.type !== 'secret-file-mode') || f.kind === null) continue;
    try {
      const kind = getKind(f.kind as Parameters<typeof getKind>[0]);
      const r = isDir
        ? await reconcileDir(f.path, kind, { env: ctx.env, operator: true, dryRun })
        : await reconcileFile(f.path, kind, { env: ctx.env, dryRun });
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
  const temps = findings.filter((f) => f.type === 'temp-file' && f.fixable);
  if (temps.length > 0) {
    if (dryRun) {
      for (const t of temps) changes.push({ type: 'temp-file', path: t.path, action: 'would-remove', before: null, after: null, detail: 'fs-policy sweepTempFiles (dry run)' });
    } else {
      const sweep = await sweepTempFiles(ctx.realHome, { remove: true, now });
      for (const p of sweep.removed) changes.push({ type: 'temp-file', path: p, action: 'removed', before: null, after: null, detail: 'fs-policy sweepTempFiles' });
      for (const e of sweep.errors) changes.push({ type: 'temp-file', path: e.path, action: 'failed', before: null, after: null, detail: e.code });
    }
  }
  return changes;
}

function summarize(findings: readonly Finding[]): DoctorReport['summary'] {
  const count = (s: Severity) => findings.filter((f) => f.severity === s).length;
  const errors = count('error');
  const warnings = count('warning');
  return { errors, warnings, info: count('info'), fixable: findings.filter((f) => f.fixable).length, actionable: errors + warnings };
}

/** Runs the audit, applies `--fix` (or plans it with `--dry-run`), and audits again after a real fix. */
export async function runDoctor(options: DoctorOptions): Promise<DoctorReport> {
  const first = await audit(options);
  const { ctx: _ctx, ...firstReport } = first;
  const wantsFix = options.fix || options.dryRun;
  if (!wantsFix) {
    return { ...firstReport, fix: { requested: false, dryRun: false, changes: [] }, summary: summarize(first.findings) };
  }
  const now = options.now ?? Date.now();
  const changes = await applyFixes(first.ctx, first.findings, options.dryRun, now);
  if (options.dryRun) {
    return { ...firstReport, fix: { requested: options.fix, dryRun: true, changes }, summary: summarize(first.findings) };
  }
  const second = await audit(options);
  const { ctx: _ctx2, ...secondReport } = second;
  return { ...secondReport, fix: { requested: true, dryRun: false, changes }, summary: summarize(second.findings) };
}

export function doctorExitCode(report: DoctorReport): ExitCode {
  return report.summary.actionable > 0 ? EXIT.findings : EXIT.ok;
}
