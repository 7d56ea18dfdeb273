/**
 * `hermes-fs doctor`: audits a real Hermes home against the @hermes/fs-policy registry and, with `--fix`,
 * repairs what can be repaired safely — always through fs-policy (reconcileDir, reconcileFile, sweepTempFiles),
 * never with a permission call of its own.
 *
 * Run as root on a home that members of the service group can change, the doctor trusts nothing it read by
 * path: the walk goes through fs-policy's descriptors (`scanTreeSync`), every repair re-opens its entry
 * through the resolver and acts only if the descriptor still shows what the audit saw, a home reached through
 * a path others could redirect is refused, and a group-shared tree is never tightened without the operator's
 * word that the install is unmanaged (tightening it is the seed bug: the other uid's writes then fail).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ConfigError, defaultConfig, loadConfig, type PendingSpoolConfig } from '@hermes/config';
import {
  type ArtifactKind,
  checkHomeChainSync,
  detectManaged,
  type ExpectedEntry,
  expectedDirMode,
  fileMaxModeFor,
  formatMode,
  FsPolicyError,
  getKind,
  type HermesEnvironment,
  loadEnvironment,
  parseTempName,
  readRegularFileSync,
  reconcileDir,
  reconcileFile,
  type ScanEntry,
  scanTreeSync,
  sweepTempFiles,
} from '@hermes/fs-policy';
import { salvageTemps } from '@hermes/gateway';
import { CliError, EXIT, type ExitCode } from '../lib/output.js';
import { shellQuote } from '../lib/shell.js';
import { directoryPlan, plannedKinds, type PlannedDir } from '../provision/plan.js';
import { tmpfilesEvidence } from '../provision/tmpfiles.js';
import { auditSpool } from './spool.js';
import type { Change, DoctorReport, Finding, Severity } from './types.js';

export interface DoctorOptions {
  readonly home: string;
  readonly fix: boolean;
  readonly dryRun: boolean;
  readonly env?: NodeJS.ProcessEnv;
  readonly now?: number;
  /** `--managed` (true) or `--unmanaged` (false): the operator's word, stronger than any other evidence. */
  readonly managed?: boolean | undefined;
  /**
   * `--tmpfiles FILE`: the installed tmpfiles.d configuration that provisioned the home. Its rule for the home
   * decides managed (group-shared) or not when neither the flag, HERMES_MANAGED nor the marker says.
   */
  readonly tmpfiles?: string | undefined;
  /** Links whose real path lies under one of these are legitimate (default: the NixOS store). */
  readonly allowLinks?: readonly string[] | undefined;
  /** What makes the exit code 1: errors only, or errors and warnings (default). */
  readonly failOn?: 'error' | 'warning' | undefined;
}

export const DEFAULT_ALLOWED_LINKS: readonly string[] = ['/nix/store'];

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

/** Temp files of the Python reference (`tempfile.mkstemp(prefix='.<stem>_', suffix='.tmp')`: 8 random characters). */
const REFERENCE_TEMP = /^\.(.+)_[a-z0-9_]{8}\.tmp$/s;

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

type ManagedSource = 'flag' | 'env' | 'marker' | 'tmpfiles' | 'none';

interface AuditContext {
  readonly home: string;
  readonly env: HermesEnvironment;
  readonly managedSource: ManagedSource;
  /** The `--tmpfiles` file, when it was the evidence (repeated in the fix commands). */
  readonly tmpfiles: string | undefined;
  /** What `hermes-fs provision tmpfiles` creates for this install, by kind: the modes every directory is held to. */
  readonly plan: ReadonlyMap<string, PlannedDir>;
  /** The tree's own evidence of a managed install (setgid or group-shared directories, group-shared state). */
  readonly looksManaged: readonly string[];
  /** Set when the managed question is open: mode checks that depend on it are skipped, nothing is fixed. */
  readonly ambiguous: boolean;
  readonly uid: number;
  readonly allowLinks: readonly string[];
  readonly findings: Finding[];
  /** What the audit saw of each path a fix may touch: a fix acts only if the descriptor still shows this. */
  readonly seen: Map<string, ExpectedEntry>;
  homeStat: fs.Stats | undefined;
  realHome: string;
}

function identity(st: fs.Stats): ExpectedEntry {
  return { dev: st.dev, ino: st.ino, type: st.isDirectory() ? 'dir' : 'file', uid: st.uid, nlink: st.nlink };
}

function fixCommand(ctx: AuditContext): string {
  const flag =
    ctx.managedSource === 'flag'
      ? ctx.env.managed.managed
        ? ' --managed'
        : ' --unmanaged'
      : ctx.managedSource === 'tmpfiles' && ctx.tmpfiles !== undefined
        ? ` --tmpfiles ${shellQuote(ctx.tmpfiles)}`
        : '';
  return `hermes-fs doctor --fix${flag} --home ${shellQuote(ctx.home)}`;
}

function checkSecretFile(p: string, st: fs.Stats, kind: ArtifactKind, ctx: AuditContext): void {
  const mode = st.mode & 0o7777;
  // The registry's ceiling: owner-only unmanaged; managed, the group rw the NixOS activation grants. While the
  // managed question is open, the looser (managed) ceiling is applied: only what is wrong either way is said.
  const allowed = fileMaxModeFor(kind, ctx.ambiguous ? { managed: { ...ctx.env.managed, managed: true } } : ctx.env);
  const extra = mode & 0o077 & ~allowed;
  if (extra === 0) return;
  const canFix = !ctx.ambiguous && (ctx.uid === 0 || st.uid === ctx.uid);
  const target = mode & ~extra & 0o7777;
  const severity: Severity = (extra & 0o007) !== 0 ? 'error' : 'warning';
  ctx.findings.push({
    type: 'secret-file-mode',
    severity,
    path: p,
    kind: kind.name,
    problem: `mode ${formatMode(mode)} allows ${describeBits(extra)}; ${WHAT[kind.name] ?? kind.description}: ${formatMode(allowed)} at most`,
    fix: canFix
      ? `${fixCommand(ctx)}   (fs-policy reconcileFile; or: chmod ${formatMode(target)} ${shellQuote(p)})`
      : `as uid ${String(st.uid)} or root: chmod ${formatMode(target)} ${shellQuote(p)}`,
    fixable: canFix,
    mode: formatMode(mode),
    expected: formatMode(allowed),
  });
}

/** A managed state file (state.db, -wal, -shm) must give the service group read/write: 0660. */
function checkStateFile(p: string, st: fs.Stats, kind: ArtifactKind, ctx: AuditContext): void {
  if (ctx.ambiguous || !ctx.env.managed.managed) return;
  const mode = st.mode & 0o7777;
  if ((mode & 0o060) !== 0o060) {
    const canFix = ctx.uid === 0 || st.uid === ctx.uid;
    const target = (mode | 0o060) & ~0o007;
    ctx.findings.push({
      type: 'state-file-mode',
      severity: 'error',
      path: p,
      kind: kind.name,
      problem:
        `managed install: mode ${formatMode(mode)} lacks group read/write; the service group's other uid cannot open the ` +
        `database (SQLITE_CANTOPEN), so its recovery fails`,
      fix: canFix ? `${fixCommand(ctx)}   (fs-policy reconcileFile, operator; or: chmod ${formatMode(target)} ${shellQuote(p)})` : `as uid ${String(st.uid)} or root: chmod ${formatMode(target)} ${shellQuote(p)}`,
      fixable: canFix,
      mode: formatMode(mode),
      expected: formatMode(target),
    });
  }
  const owner = ctx.homeStat?.uid;
  if (st.uid === 0 && owner !== undefined && owner !== 0) {
    ctx.findings.push({
      type: 'owner',
      severity: 'error',
      path: p,
      kind: kind.name,
      problem: `owned by root in a home owned by uid ${String(owner)}: the service cannot write its own database (SQLITE_READONLY)`,
      fix: `chown ${String(owner)}:${String(st.gid)} ${shellQuote(p)}   (run as the service user next time: sudo -u <service user> hermes-fs …)`,
      fixable: false,
    });
  }
}

function checkKindDir(p: string, st: fs.Stats, kind: ArtifactKind, ctx: AuditContext): void {
  if (ctx.ambiguous) return; // depends on the managed question: the looks-managed finding says so
  const mode = st.mode & 0o7777;
  const canFix = ctx.uid === 0 || st.uid === ctx.uid;
  const fixCmd = fixCommand(ctx);
  const planned = ctx.plan.get(kind.name)?.mode;
  if (ctx.env.managed.managed) {
    const expected = expectedDirMode(mode, kind, ctx.env, true);
    if (expected === null || expected === mode) {
      if (planned !== undefined) checkManagedWider(p, st, kind, planned, ctx);
      return;
    }
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
      fix: canFix ? `${fixCmd}   (fs-policy reconcileDir, operator: ${formatMode(mode)} -> ${formatMode(expected)})` : `as uid ${String(st.uid)} or root: ${fixCmd}`,
      fixable: canFix,
      mode: formatMode(mode),
      expected: formatMode(expected),
    });
    return;
  }
  const expected = planned;
  if (expected === undefined || expected === mode) return;
  const looser = (mode & ~expected & 0o077) !== 0;
  // A setgid, group-shared directory is the managed layout: it is tightened only on the operator's explicit
  // --unmanaged (tightening it locks the service group's other uid out).
  const shared = (mode & 0o2000) !== 0 && (mode & 0o070) !== 0;
  const needsFlag = shared && ctx.managedSource !== 'flag';
  ctx.findings.push({
    type: 'dir-mode',
    severity: looser ? 'error' : 'warning',
    path: p,
    kind: kind.name,
    problem:
      (looser
        ? `mode ${formatMode(mode)} allows ${describeBits(mode & ~expected & 0o077)}; policy for ${kind.name} is ${formatMode(expected)}`
        : `mode ${formatMode(mode)} differs from the policy for ${kind.name} (${formatMode(expected)})`) +
      (needsFlag ? '; it is setgid and group-shared (the managed layout), so it is changed only with --unmanaged' : ''),
    fix: needsFlag
      ? `if this install is really unmanaged: hermes-fs doctor --fix --unmanaged --home ${shellQuote(ctx.home)}; if it is managed: rerun with --managed`
      : canFix
        ? `${fixCmd}   (or: chmod ${formatMode(expected)} ${shellQuote(p)})`
        : `as uid ${String(st.uid)} or root: chmod ${formatMode(expected)} ${shellQuote(p)}`,
    fixable: canFix && !needsFlag,
    mode: formatMode(mode),
    expected: formatMode(expected),
  });
}

/**
 * A managed directory with every bit the package manager gives it but more besides (others' access, sticky):
 * reported against what `provision tmpfiles` creates. Not fixable here: fs-policy never narrows a managed
 * directory; the operator can.
 */
function checkManagedWider(p: string, st: fs.Stats, kind: ArtifactKind, planned: number, ctx: AuditContext): void {
  const mode = st.mode & 0o7777;
  const extra = mode & ~planned & 0o7777;
  if (extra === 0) return;
  const others = extra & 0o777;
  ctx.findings.push({
    type: 'dir-mode',
    severity: (extra & 0o007) !== 0 ? 'error' : 'warning',
    path: p,
    kind: kind.name,
    problem:
      `managed install: mode ${formatMode(mode)} ${others !== 0 ? `allows ${describeBits(others)}` : `adds ${formatMode(extra)}`} beyond ` +
      `the ${formatMode(planned)} the package manager creates (hermes-fs provision tmpfiles)`,
    fix: `as uid ${String(st.uid)} or root: chmod ${formatMode(planned)} ${shellQuote(p)}   (--fix never narrows a managed directory)`,
    fixable: false,
    mode: formatMode(mode),
    expected: formatMode(planned),
  });
}

function checkOwner(p: string, st: fs.Stats, kind: string | null, ctx: AuditContext): void {
  if (ctx.ambiguous || ctx.homeStat === undefined) return;
  if (ctx.env.managed.managed) {
    // Several uids share a managed home; what they must share is the group (setgid keeps it).
    const gid = ctx.env.gid ?? ctx.homeStat.gid;
    if (st.gid === gid) return;
    ctx.findings.push({
      type: 'owner',
      severity: 'warning',
      path: p,
      kind,
      problem: `group ${String(st.gid)}, not the home's group ${String(gid)}: the other members of the service group lose access`,
      fix: `chgrp ${String(gid)} ${shellQuote(p)}`,
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
    problem: `owned by uid ${String(st.uid)}, not ${ctx.env.uid === undefined ? "the home's owner" : 'HERMES_UID'} ${String(uid)}: the agent cannot rewrite or remove it`,
    fix: `chown ${String(uid)}:${String(gid)} ${shellQuote(p)}`,
    fixable: false,
  });
}

/** A link is judged from its text, and from a stat of its target (nothing is opened through it). */
function checkSymlink(entry: ScanEntry, ctx: AuditContext): void {
  const text = entry.linkText ?? '?';
  try {
    fs.statSync(entry.path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
    ctx.findings.push({
      type: 'symlink-dangling',
      severity: 'warning',
      path: entry.path,
      kind: null,
      problem: `symbolic link to ${text} cannot be resolved (${code}); Hermes refuses to write through it and never creates its target`,
      fix: `restore the target (mount it), or remove the link: rm ${shellQuote(entry.path)}`,
      fixable: false,
    });
    return;
  }
  const target = path.resolve(path.dirname(entry.path), text);
  const realTarget = path.resolve(path.dirname(path.join(ctx.realHome, entry.rel)), text);
  if (ctx.allowLinks.some((prefix) => isInside(realTarget, prefix) || isInside(target, prefix))) return;
  if (isInside(realTarget, ctx.realHome) || isInside(target, ctx.home)) return;
  ctx.findings.push({
    type: 'symlink-escape',
    severity: 'warning',
    path: entry.path,
    kind: null,
    problem: `symbolic link leaves the home (-> ${text}); Hermes refuses to write through it, and whatever it reaches is outside this audit`,
    fix: `if the link is not deliberate, remove it: rm ${shellQuote(entry.path)}; otherwise point it inside ${ctx.realHome} (or allow its target with --allow-link PREFIX)`,
    fixable: false,
  });
}

function checkHardLink(p: string, st: fs.Stats, ctx: AuditContext): void {
  if (st.nlink <= 1 || parseTempName(path.basename(p)) !== null) return;
  ctx.findings.push({
    type: 'hard-link',
    severity: 'warning',
    path: p,
    kind: null,
    problem: `has ${String(st.nlink)} hard links: another name, possibly outside the home, shares this file; the doctor never changes its mode`,
    fix: `find / -xdev -samefile ${shellQuote(p)}   (then remove the names that should not exist)`,
    fixable: false,
  });
}

function checkForeignTemp(p: string, st: fs.Stats, ctx: AuditContext): void {
  const name = path.basename(p);
  if (parseTempName(name) !== null || !REFERENCE_TEMP.test(name)) return;
  ctx.findings.push({
    type: 'foreign-temp',
    severity: 'warning',
    path: p,
    kind: null,
    problem: `leftover temp file of the Python reference (${String(st.size)} bytes): a write it did not finish; a spool payload in it may be complete`,
    fix: `hermes-fs pending list --home ${shellQuote(ctx.home)}   (inspect; a complete payload can be moved into the spool under a pending-*.json name)`,
    fixable: false,
  });
}

interface ScanCounts {
  directories: number;
  files: number;
  symlinks: number;
}

/** Which kind, if any, a path belongs to. */
function classifier(): { dirKind: (rel: string) => ArtifactKind | undefined; fileKind: (rel: string, name: string) => ArtifactKind | undefined } {
  // The directories provision tmpfiles creates, the home included.
  const kindDirs = new Map<string, ArtifactKind>();
  for (const kind of plannedKinds()) kindDirs.set(kind.dir ?? '', kind);
  const secretDirs = SECRET_DIR_KINDS.map((name) => {
    const kind = getKind(name);
    return { prefix: `${kind.dir ?? ''}/`, kind };
  });
  const homeFiles = new Map<string, ArtifactKind>();
  for (const name of ['state-db', 'secrets'] as const) {
    const kind = getKind(name);
    for (const f of kind.files ?? []) homeFiles.set(f, kind);
  }
  return {
    dirKind: (rel) => kindDirs.get(rel),
    fileKind: (rel, name) => {
      if (!rel.includes('/')) return homeFiles.get(name);
      for (const s of secretDirs) if (rel.startsWith(s.prefix)) return s.kind;
      return undefined;
    },
  };
}

/**
 * The tree's own evidence of a managed install, read before anything is judged: a setgid or group-writable
 * home or artifact directory, a group-shared state file.
 */
function treeEvidence(home: string): { evidence: string[]; homeStat: fs.Stats; realHome: string } {
  const { dirKind, fileKind } = classifier();
  const evidence: string[] = [];
  const note = (rel: string, st: fs.Stats): void => {
    evidence.push(`${rel === '' ? 'the home' : rel} ${formatMode(st.mode)}`);
  };
  let homeStat: fs.Stats | undefined;
  const r = scanTreeSync(home, {
    directory(e) {
      if (e.rel === '') homeStat = e.stat;
      const shared = (e.stat.mode & 0o2000) !== 0 || (e.stat.mode & 0o020) !== 0;
      if ((e.rel === '' || dirKind(e.rel) !== undefined) && shared) note(e.rel, e.stat);
      return e.rel === '' || e.rel === 'sessions';
    },
    file(e) {
      if (fileKind(e.rel, e.name)?.name === 'state-db' && (e.stat.mode & 0o060) === 0o060) note(e.rel, e.stat);
    },
    symlink() {
      // links are judged by the audit
    },
  });
  if (homeStat === undefined) throw new CliError(`cannot audit ${home}: it could not be read`, { code: 'EUNREADABLE', path: home, hint: 'run as the home\'s owner or as root', exitCode: EXIT.error });
  return { evidence, homeStat, realHome: r.realPath };
}

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
  return counts;
}

/** The spool directory: its temp files may hold complete payloads, so they are salvaged, never swept. */
function spoolDir(ctx: AuditContext): string {
  return path.join(ctx.home, getKind('pending-messages').dir ?? 'pending_messages');
}

async function auditTemps(ctx: AuditContext, now: number): Promise<void> {
  const sweep = await sweepTempFiles(ctx.home, { now });
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

/** The installed tmpfiles configuration's word on the home (exit 2 when it cannot be read or says nothing about it). */
function readTmpfiles(file: string, home: string): { managed: boolean; system: string | null; rule: string } {
  let text: string;
  try {
    // On NixOS /etc/tmpfiles.d/*.conf are links into the store: followed, but never a FIFO or a huge file.
    text = readRegularFileSync(file, { follow: true, maxBytes: 1 << 20 }).data.toString('utf8');
  } catch (err) {
    const why = err instanceof FsPolicyError ? err.toLine() : err instanceof Error ? err.message : String(err);
    throw new CliError(`cannot read --tmpfiles ${file}: ${why}`, { code: err instanceof FsPolicyError ? err.code : ((err as NodeJS.ErrnoException).code ?? 'EUNKNOWN'), path: file, hint: 'pass the installed configuration, e.g. /etc/tmpfiles.d/hermes.conf', exitCode: EXIT.error, cause: err });
  }
  const evidence = tmpfilesEvidence(text, home);
  if ('problem' in evidence) {
    throw new CliError(`--tmpfiles ${file} is no evidence for ${home}: ${evidence.problem}`, {
      code: 'EUSAGE',
      path: file,
      hint: 'pass the configuration that provisions this home, or --managed/--unmanaged',
      exitCode: EXIT.error,
    });
  }
  return evidence;
}

interface ManagedDecision {
  readonly vars: NodeJS.ProcessEnv;
  readonly source: ManagedSource | undefined;
  /** The tmpfiles configuration contradicts HERMES_MANAGED or the marker, which win: said as a finding. */
  readonly conflict: string | undefined;
}

/** Evidence order: --managed/--unmanaged > HERMES_MANAGED > the .managed marker > --tmpfiles > the tree. */
function decideManaged(options: DoctorOptions, home: string, base: NodeJS.ProcessEnv): ManagedDecision {
  const t = options.tmpfiles === undefined ? undefined : readTmpfiles(options.tmpfiles, home);
  const contradicts = (managed: boolean, who: string): string | undefined =>
    t === undefined || t.managed === managed
      ? undefined
      : `--tmpfiles ${options.tmpfiles ?? ''} provisions this home ${t.managed ? 'managed' : 'unmanaged'} (${t.rule}), but ` +
        `${who} says ${managed ? 'managed' : 'unmanaged'}, which wins`;
  if (options.managed !== undefined) {
    const vars = { ...base, HERMES_MANAGED: options.managed ? 'nixos' : 'false' };
    return { vars, source: 'flag', conflict: contradicts(options.managed, options.managed ? '--managed' : '--unmanaged') };
  }
  if (t === undefined) return { vars: base, source: undefined, conflict: undefined };
  const said = detectManaged(home, base);
  if (said.source === 'none') return { vars: { ...base, HERMES_MANAGED: t.managed ? (t.system ?? 'nixos') : 'false' }, source: 'tmpfiles', conflict: undefined };
  return { vars: base, source: undefined, conflict: contradicts(said.managed, said.source === 'env' ? 'HERMES_MANAGED' : 'the .managed marker') };
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
  const managedSource = decision.source ?? env.managed.source;
  const ambiguous = managedSource === 'none' && evidence.evidence.length > 0;
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
        `.managed marker says so; rerun with --managed or --unmanaged (or --tmpfiles FILE, the installed configuration). Nothing is changed meanwhile: tightening a group-shared ` +
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
  for (const w of env.warnings) {
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
  const { limits, source } = await loadLimits(ctx);
  const spool = await auditSpool(ctx.home, ctx.home, limits, source, now, ctx.findings);
  return {
    schemaVersion: 1,
    command: 'doctor',
    home,
    realHome: ctx.realHome,
    managed: { managed: env.managed.managed, system: env.managed.system, source: managedSource, looksManaged: evidence.evidence },
    homeMode: { mode: formatMode(env.homeMode.mode), source: env.homeMode.source },
    uid,
    scanned: { ...counts, ms: Math.round(performance.now() - started) },
    spool,
    findings: ctx.findings,
    ctx,
  };
}

/** Why `--fix` must change nothing in this home, or undefined. */
function refusal(ctx: AuditContext): string | undefined {
  const unsafe = ctx.findings.find((f) => f.type === 'unsafe-path');
  if (unsafe !== undefined) return `the path to the home is unsafe (${unsafe.path}); nothing was changed`;
  if (ctx.ambiguous) return 'the home looks managed but nothing says whether it is; rerun with --managed or --unmanaged; nothing was changed';
  return undefined;
}

async function applyFixes(ctx: AuditContext, findings: readonly Finding[], dryRun: boolean, now: number): Promise<Change[]> {
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
  const temps = findings.filter((f) => f.type === 'temp-file' && f.fixable);
  const spoolTemps = temps.filter((t) => path.dirname(t.path) === spool);
  const otherTemps = temps.filter((t) => path.dirname(t.path) !== spool);
  if (spoolTemps.length > 0) {
    if (dryRun) {
      for (const t of spoolTemps) changes.push({ type: 'temp-file', path: t.path, action: 'would-salvage', before: null, after: null, detail: '@hermes/gateway salvageTemps (dry run)' });
    } else {
      // Salvage first: complete payloads are adopted into the spool, partial ones moved aside — never swept.
      const r = salvageTemps({ home: ctx.home, env: ctx.env, now });
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
      const sweep = await sweepTempFiles(ctx.home, { remove: true, now, exclude: [spool] });
      for (const p of sweep.removed) changes.push({ type: 'temp-file', path: p, action: 'removed', before: null, after: null, detail: 'fs-policy sweepTempFiles' });
      for (const e of sweep.errors) changes.push({ type: 'temp-file', path: e.path, action: 'failed', before: null, after: null, detail: e.code });
    }
  }
  return changes;
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
