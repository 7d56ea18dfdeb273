/** The doctor's judgement of one entry: modes, owners, links and leftovers, each a finding with its fix. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type ArtifactKind, expectedDirMode, fileMaxModeFor, formatMode, parseTempName, type ScanEntry } from '@hermes/fs-policy';
import { checkSqliteRuntime } from '@hermes/session-db';
import { shellQuote } from '../lib/shell.js';
import { type AuditContext, describeBits, fixCommand, isInside, REFERENCE_TEMP, spoolDir, WHAT } from './context.js';
import type { Severity } from './types.js';

export function checkSecretFile(p: string, st: fs.Stats, kind: ArtifactKind, ctx: AuditContext): void {
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
export function checkStateFile(p: string, st: fs.Stats, kind: ArtifactKind, ctx: AuditContext): void {
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

export function checkKindDir(p: string, st: fs.Stats, kind: ArtifactKind, ctx: AuditContext): void {
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
export function checkManagedWider(p: string, st: fs.Stats, kind: ArtifactKind, planned: number, ctx: AuditContext): void {
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

export function checkOwner(p: string, st: fs.Stats, kind: string | null, ctx: AuditContext): void {
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
export function checkSymlink(entry: ScanEntry, ctx: AuditContext): void {
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

export function checkHardLink(p: string, st: fs.Stats, ctx: AuditContext): void {
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

/**
 * A leftover temp file of the Python reference. In the spool it is a payload write: `--fix` salvages it (a
 * complete payload adopted, an incomplete one moved aside as `.partial`) and `pending list` shows it. Elsewhere
 * no hermes-fs command lists it: the fix names the commands that show it, then its removal.
 */
export function checkForeignTemp(p: string, st: fs.Stats, ctx: AuditContext): void {
  const name = path.basename(p);
  if (parseTempName(name) !== null || !REFERENCE_TEMP.test(name)) return;
  const inSpool = path.dirname(p) === spoolDir(ctx);
  ctx.findings.push({
    type: 'foreign-temp',
    severity: 'warning',
    path: p,
    kind: inSpool ? 'pending-messages' : null,
    problem: inSpool
      ? `leftover temp file of an unfinished spool write of the Python reference (${String(st.size)} bytes): a complete payload in it is a message that must not be lost`
      : `leftover temp file of an unfinished write of the Python reference (${String(st.size)} bytes); no hermes-fs command lists it`,
    fix: inSpool
      ? `${fixCommand(ctx)}   (@hermes/gateway salvageTemps: a complete payload is adopted into the spool, an incomplete one moved aside as .partial; never deleted; see them with: hermes-fs pending list --home ${shellQuote(ctx.home)})`
      : `inspect it: ls -l ${shellQuote(p)}; head -c 2000 ${shellQuote(p)}; then, once nothing in it is needed: rm ${shellQuote(p)}`,
    fixable: inSpool && !ctx.ambiguous,
  });
}

/**
 * The runtime the tools need: better-sqlite3's native module must load in this Node.js (an in-memory
 * connection; nothing in the home is opened). When it does not, `save`, `pending recover` and the gateway's
 * recovery cannot reach state.db: an error finding with the rebuild for npm and pnpm.
 */
export function checkRuntime(ctx: AuditContext): void {
  const r = checkSqliteRuntime();
  if (r.ok) return;
  ctx.findings.push({
    type: 'sqlite-unavailable',
    severity: 'error',
    path: r.error.path ?? ctx.home,
    kind: null,
    problem: `${r.error.message}: hermes-fs save, pending recover and the gateway's recovery cannot open state.db`,
    fix: r.error.hint,
    fixable: false,
  });
}
