/**
 * `hermes-fs doctor`: audits a real Hermes home against the @hermes/fs-policy registry and, with `--fix`,
 * repairs what can be repaired safely — always through fs-policy (reconcileDir, reconcileFile, sweepTempFiles),
 * never with a permission call of its own.
 *
 * Run as root on a home that members of the service group can change, the doctor trusts nothing it read by
 * path: the walk goes through fs-policy's descriptors (`scanTreeSync`), every repair re-opens its entry
 * through the resolver and acts only if the descriptor still shows what the audit saw, a home reached through
 * a path others could redirect is refused, and a group-shared tree is never tightened on an untrusted word
 * (tightening it is the seed bug: the other uid's writes then fail): when the tree looks managed, only the
 * operator's flag, HERMES_MANAGED, --tmpfiles or a `.managed` marker written by root or the home's owner decide;
 * a setgid group-shared directory is tightened only with --unmanaged.
 *
 * This file runs the audit; `evidence.ts` decides managed-ness, `checks.ts` judges each entry, `fix.ts`
 * applies `--fix`, `context.ts` holds what they share. No walk stops silently: a directory deeper than
 * fs-policy's MAX_TREE_DEPTH is a `too-deep` finding.
 */
import * as path from 'node:path';
import { ConfigError, defaultConfig, loadConfig, type PendingSpoolConfig } from '@hermes/config';
import { anchorInfo, checkHomeChainSync, formatMode, FsPolicyError, type HermesEnvironment, loadEnvironment, parseTempName, scanTreeSync, sweepTempFiles, type TooDeep } from '@hermes/fs-policy';
import { CliError, EXIT, type ExitCode } from '../lib/output.js';
import { shellQuote } from '../lib/shell.js';
import { directoryPlan } from '../provision/plan.js';
import { checkForeignTemp, checkHardLink, checkKindDir, checkOwner, checkRuntime, checkSecretFile, checkStateFile, checkSymlink } from './checks.js';
import { type AuditContext, classifier, DEFAULT_ALLOWED_LINKS, type DoctorOptions, fixCommand, identity, type ScanCounts, spoolDir } from './context.js';
import { decideManaged, markerFinding, treeEvidence } from './evidence.js';
import { applyFixes, refusal } from './fix.js';
import { auditSpool } from './spool.js';
import type { DoctorReport, Finding, Severity } from './types.js';

export { DEFAULT_ALLOWED_LINKS, type DoctorOptions } from './context.js';

function scan(ctx: AuditContext): ScanCounts {
  const counts: ScanCounts = { directories: 0, files: 0, symlinks: 0 };
  const { dirKind, fileKind } = classifier();
  const result = scanTreeSync(ctx.home, {
    directory(entry) {
      counts.directories++;
      if (entry.rel === '') ctx.homeStat = entry.stat;
      const kind = dirKind(entry.rel);
      ctx.seen.set(entry.path, identity(entry.stat));
      checkOwner(entry.path, entry.stat, kind?.name ?? null, ctx);
      if (kind !== undefined) checkKindDir(entry.path, entry.stat, kind, ctx);
      return true;
    },
    file(entry) {
      counts.files++;
      const kind = fileKind(entry.rel, entry.name);
      ctx.seen.set(entry.path, identity(entry.stat));
      checkOwner(entry.path, entry.stat, kind?.name ?? null, ctx);
      checkHardLink(entry.path, entry.stat, ctx);
      checkForeignTemp(entry.path, entry.stat, ctx);
      // Leftover temp files are reported (and swept) as such, below.
      if (kind !== undefined && parseTempName(entry.name) === null) {
        if (kind.name === 'state-db') checkStateFile(entry.path, entry.stat, kind, ctx);
        checkSecretFile(entry.path, entry.stat, kind, ctx);
      }
    },
    symlink(entry) {
      counts.symlinks++;
      checkSymlink(entry, ctx);
    },
  });
  ctx.realHome = result.realPath;
  for (const e of result.errors) {
    ctx.findings.push({
      type: 'unreadable',
      severity: 'warning',
      path: e.path,
      kind: null,
      problem:
        e.code === 'ERACE'
          ? 'changed while it was being audited (replaced by a link or another entry); it was not audited'
          : `cannot be read by uid ${String(ctx.uid)} (${e.code}); it was not audited`,
      fix: e.code === 'ERACE' ? 'find out which process renames entries in the home; run the doctor again' : `run hermes-fs doctor as the home's owner or as root`,
      fixable: false,
    });
  }
  for (const t of result.tooDeep) tooDeep(ctx, t);
  return counts;
}

/**
 * A directory a walk did not enter because it is deeper than the walks go (fs-policy's MAX_TREE_DEPTH): said
 * once per path, whichever walk (the audit's or the temp-file sweep's) met it first.
 */
function tooDeep(ctx: AuditContext, t: TooDeep): void {
  if (ctx.findings.some((f) => f.type === 'too-deep' && f.path === t.path)) return;
  ctx.findings.push({
    type: 'too-deep',
    severity: 'warning',
    path: t.path,
    kind: null,
    problem:
      `directory ${String(t.depth)} levels below the home, deeper than the ${String(t.limit)} the doctor walks: nothing in it was ` +
      `audited, and no leftover temp file in it is reported or swept`,
    fix: `inspect it as the home's owner (find ${shellQuote(t.path)} | head), then move what belongs to Hermes up and remove the rest`,
    fixable: false,
  });
}

async function auditTemps(ctx: AuditContext, now: number): Promise<void> {
  const sweep = await sweepTempFiles(ctx.home, { now });
  for (const t of sweep.tooDeep) tooDeep(ctx, t);
  const spool = spoolDir(ctx);
  for (const t of sweep.found) {
    if (path.dirname(t.path) === spool && t.type === 'tmp') {
      ctx.findings.push({
        type: 'temp-file',
        severity: 'warning',
        path: t.path,
        kind: 'pending-messages',
        problem: `temp file of an unfinished spool write of ${path.basename(t.target)} (${String(t.size)} bytes): a complete payload in it is a message that must not be lost`,
        fix: `${fixCommand(ctx)}   (@hermes/gateway salvageTemps: a complete payload is adopted into the spool, an incomplete one moved aside as .partial; never deleted)`,
        fixable: !ctx.ambiguous,
      });
      continue;
    }
    const writer =
      t.pidAlive === null
        ? `writer pid ${String(t.pid)} in another pid namespace (it cannot be checked from here)`
        : `writer pid ${String(t.pid)} ${t.pidAlive ? 'alive' : 'is gone'}`;
    ctx.findings.push(
      t.stale
        ? {
            type: 'temp-file',
            severity: 'warning',
            path: t.path,
            kind: null,
            problem: `leftover ${t.type === 'tmp' ? 'temp file of an unfinished write' : 'rollback copy'} of ${path.basename(t.target)} (${String(t.size)} bytes, ${writer}${t.pidAlive === true ? ', but the file is over an hour old' : ''})`,
            fix: `${fixCommand(ctx)}   (fs-policy sweepTempFiles; or: rm ${shellQuote(t.path)})`,
            fixable: !ctx.ambiguous,
          }
        : {
            type: 'temp-file',
            severity: 'info',
            path: t.path,
            kind: null,
            problem: `temp file of a write in progress (${writer}); left alone`,
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

/** The home itself: never `/`; as root (or whoever could be redirected) only on a path others cannot change. */
function checkHome(home: string, env: HermesEnvironment, findings: Finding[]): void {
  try {
    checkHomeChainSync(home, env);
  } catch (err) {
    if (!(err instanceof FsPolicyError)) throw err;
    if (err.code === 'EDANGEROUS_HOME') throw new CliError(err.message, { code: err.code, path: home, hint: 'pass the Hermes home with --home DIR, never /', exitCode: EXIT.error });
    if (err.code === 'ENOENT') throw new CliError(`cannot audit ${home}: it does not exist`, { code: 'ENOENT', path: home, hint: 'pass the home with --home DIR or set HERMES_HOME', exitCode: EXIT.error });
    if (err.code !== 'EUNSAFE_PATH' && err.code !== 'EFOREIGN_OWNER') {
      throw new CliError(`cannot audit ${home}: ${err.message}`, { code: err.code, path: err.path, hint: err.hint, exitCode: EXIT.error, cause: err });
    }
    findings.push({
      type: 'unsafe-path',
      severity: 'error',
      path: err.path,
      kind: 'home',
      problem: `${err.message}; --fix changes nothing in this home until the path is safe`,
      fix: err.hint,
      fixable: false,
    });
  }
}

/** The home cannot be audited at all (missing, not a directory, unreadable): exit 2 with the reason. */
function unusableHome(home: string, err: unknown): CliError {
  if (err instanceof CliError) return err;
  const code = err instanceof FsPolicyError ? err.code : ((err as NodeJS.ErrnoException).code ?? 'EUNKNOWN');
  const why = code === 'ENOENT' ? 'it does not exist' : code === 'ENOTDIR' ? 'not a directory' : code;
  return new CliError(`cannot audit ${home}: ${why}`, { code, path: home, hint: 'pass the home with --home DIR or set HERMES_HOME', exitCode: EXIT.error, cause: err });
}

async function audit(options: DoctorOptions): Promise<Omit<DoctorReport, 'fix' | 'summary'> & { ctx: AuditContext }> {
  const started = performance.now();
  const home = path.resolve(options.home);
  const base = options.env ?? process.env;
  const decision = decideManaged(options, home, base);
  const env = loadEnvironment({ home, env: decision.vars });
  const findings: Finding[] = [];
  checkHome(home, env, findings);
  let evidence: ReturnType<typeof treeEvidence>;
  try {
    evidence = treeEvidence(home);
  } catch (err) {
    throw unusableHome(home, err);
  }
  // Looked at again for the report (the decision's look is inside loadEnvironment): a marker that decided but
  // is no longer trusted now was replaced during the audit, and decides nothing either.
  const { marker, finding: markerIssue } = markerFinding(home);
  if (markerIssue !== undefined) findings.push(markerIssue);
  const raced = decision.source === undefined && env.managed.source === 'marker' && marker.state !== 'trusted';
  const managedSource = raced ? 'none' : (decision.source ?? env.managed.source);
  // Nobody trusted said whether the home is managed, and it looks managed: nothing is judged or fixed on a guess.
  const ambiguous = (managedSource === 'none' || managedSource === 'unknown') && evidence.evidence.length > 0;
  const uid = typeof process.geteuid === 'function' ? process.geteuid() : -1;
  const ctx: AuditContext = {
    home,
    env,
    managedSource,
    tmpfiles: managedSource === 'tmpfiles' ? options.tmpfiles : undefined,
    plan: new Map(directoryPlan({ managed: env.managed.managed, homeMode: env.homeMode }).map((d) => [d.kind, d])),
    looksManaged: evidence.evidence,
    ambiguous,
    uid,
    allowLinks: (options.allowLinks ?? DEFAULT_ALLOWED_LINKS).map((p) => path.resolve(p)),
    findings,
    seen: new Map(),
    homeStat: evidence.homeStat,
    realHome: evidence.realHome,
  };
  if (ambiguous) {
    findings.push({
      type: 'looks-managed',
      severity: 'error',
      path: home,
      kind: 'home',
      problem:
        `this home looks managed (${evidence.evidence.join(', ')}) but neither --managed/--unmanaged, HERMES_MANAGED nor a ` +
        `trusted .managed marker says so${marker.state === 'untrusted' || marker.state === 'unknown' ? ` (the marker is ${marker.state}: ${marker.code ?? ''}; see untrusted-marker)` : ''}; rerun with --managed or --unmanaged (or --tmpfiles FILE, the installed configuration). Nothing is changed meanwhile: tightening a group-shared ` +
        `home locks the service group's other uid out`,
      fix: `hermes-fs doctor --managed --home ${shellQuote(home)}   (or --unmanaged, if it really is a single-user home)`,
      fixable: false,
    });
  }
  if (decision.conflict !== undefined) {
    findings.push({
      type: 'environment',
      severity: 'warning',
      path: home,
      kind: 'home',
      problem: decision.conflict,
      fix: 'make the service environment, the marker and the installed tmpfiles configuration agree (hermes-fs provision tmpfiles)',
      fixable: false,
    });
  }
  const markerWarnings = new Set(env.managed.warnings ?? []);
  for (const w of env.warnings) {
    if (markerWarnings.has(w)) continue; // said by the marker's own finding
    findings.push({
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
  let counts: ScanCounts;
  try {
    counts = scan(ctx);
  } catch (err) {
    throw unusableHome(home, err); // it vanished or was replaced since the first look
  }
  await auditTemps(ctx, now);
  checkRuntime(ctx);
  const { limits, source } = await loadLimits(ctx);
  const spool = await auditSpool(ctx.home, ctx.home, limits, source, now, ctx.findings);
  return {
    schemaVersion: 1,
    command: 'doctor',
    home,
    realHome: ctx.realHome,
    managed: { managed: env.managed.managed, system: env.managed.system, source: managedSource, marker: marker.state, looksManaged: evidence.evidence },
    homeMode: { mode: formatMode(env.homeMode.mode), source: env.homeMode.source },
    uid,
    anchor: anchorInfo(),
    scanned: { ...counts, ms: Math.round(performance.now() - started) },
    spool,
    findings: ctx.findings,
    ctx,
  };
}

function summarize(findings: readonly Finding[]): DoctorReport['summary'] {
  const count = (s: Severity): number => findings.filter((f) => f.severity === s).length;
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
  if (options.dryRun || refusal(first.ctx) !== undefined) {
    return { ...firstReport, fix: { requested: options.fix, dryRun: options.dryRun, changes }, summary: summarize(first.findings) };
  }
  const second = await audit(options);
  const { ctx: _ctx2, ...secondReport } = second;
  return { ...secondReport, fix: { requested: true, dryRun: false, changes }, summary: summarize(second.findings) };
}

/** 1 when a finding at or above `failOn` remains (errors and warnings by default), else 0. */
export function doctorExitCode(report: DoctorReport, failOn: 'error' | 'warning' = 'warning'): ExitCode {
  const failing = failOn === 'error' ? report.summary.errors : report.summary.actionable;
  return failing > 0 ? EXIT.findings : EXIT.ok;
}
