/** What every part of the doctor's audit shares: its options, its context, and the words of its findings. */
import type * as fs from 'node:fs';
import * as path from 'node:path';
import { type ArtifactKind, type ExpectedEntry, getKind, type HermesEnvironment } from '@hermes/fs-policy';
import { shellQuote } from '../lib/shell.js';
import { plannedKinds, type PlannedDir } from '../provision/plan.js';
import type { Finding } from './types.js';

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
export const SECRET_DIR_KINDS = ['pending-messages', 'moa-traces', 'saved-sessions', 'trajectories'] as const;

/** What a file of each audited kind is, in the finding's words. */
export const WHAT: Readonly<Record<string, string>> = {
  'pending-messages': 'a spool payload holds verbatim undelivered messages',
  'moa-traces': 'a MoA trace holds verbatim model inputs and outputs',
  'saved-sessions': 'a /save snapshot holds a whole conversation',
  trajectories: 'a trajectory holds a whole transcript',
  'state-db': 'the session database holds every conversation',
  secrets: 'a credential file',
};

/** Temp files of the Python reference (`tempfile.mkstemp(prefix='.<stem>_', suffix='.tmp')`: 8 random characters). */
export const REFERENCE_TEMP = /^\.(.+)_[a-z0-9_]{8}\.tmp$/s;

export function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

export function describeBits(extra: number): string {
  const who: string[] = [];
  if ((extra & 0o070) !== 0) who.push('group');
  if ((extra & 0o007) !== 0) who.push('others');
  const what: string[] = [];
  if ((extra & 0o044) !== 0) what.push('read');
  if ((extra & 0o022) !== 0) what.push('write');
  if ((extra & 0o011) !== 0) what.push('search');
  return `${what.join('/') || 'access'} by ${who.join(' and ')}`;
}

/** Who decided managed: the operator's flag, HERMES_MANAGED, a trusted marker, --tmpfiles; `none`/`unknown`: nobody. */
export type ManagedSource = 'flag' | 'env' | 'marker' | 'tmpfiles' | 'none' | 'unknown';

export interface AuditContext {
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

export function identity(st: fs.Stats): ExpectedEntry {
  return { dev: st.dev, ino: st.ino, type: st.isDirectory() ? 'dir' : 'file', uid: st.uid, nlink: st.nlink };
}

export function fixCommand(ctx: AuditContext): string {
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

export interface ScanCounts {
  directories: number;
  files: number;
  symlinks: number;
}

/** Which kind, if any, a path belongs to. */
export function classifier(): { dirKind: (rel: string) => ArtifactKind | undefined; fileKind: (rel: string, name: string) => ArtifactKind | undefined } {
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

/** The spool directory: its temp files may hold complete payloads, so they are salvaged, never swept. */
export function spoolDir(ctx: AuditContext): string {
  return path.join(ctx.home, getKind('pending-messages').dir ?? 'pending_messages');
}
