import type { AnchorInfo } from '@hermes/fs-policy';
import type { ManagedSource } from './context.js';

export type Severity = 'error' | 'warning' | 'info';

/** The finding types of `hermes-fs doctor` (stable identifiers; the README lists them). */
export type FindingType =
  | 'dir-mode'
  | 'managed-group-access'
  | 'secret-file-mode'
  | 'owner'
  | 'symlink-escape'
  | 'symlink-dangling'
  | 'temp-file'
  | 'spool-files'
  | 'spool-bytes'
  | 'spool-bad'
  | 'spool-snapshots'
  | 'spool-pending'
  | 'config'
  | 'environment'
  | 'unreadable'
  | 'looks-managed'
  | 'unsafe-path'
  | 'state-file-mode'
  | 'hard-link'
  | 'foreign-temp'
  | 'untrusted-marker'
  | 'too-deep'
  | 'sqlite-unavailable';

export interface Finding {
  readonly type: FindingType;
  readonly severity: Severity;
  /** Absolute path the finding is about. */
  readonly path: string;
  /** The artifact kind of the path, when it has one. */
  readonly kind: string | null;
  /** What is wrong, in one sentence. */
  readonly problem: string;
  /** The exact fix: a command an operator can run. */
  readonly fix: string;
  /** True when `doctor --fix` applies the fix (through @hermes/fs-policy or @hermes/gateway). */
  readonly fixable: boolean;
  /** Measured mode (four-digit octal), for mode findings. */
  readonly mode?: string;
  /** The mode policy asks for, for mode findings. */
  readonly expected?: string;
}

/** One change `--fix` made (or, with `--dry-run`, would make). */
export interface Change {
  readonly type: FindingType;
  readonly path: string;
  readonly action: 'changed' | 'would-change' | 'removed' | 'would-remove' | 'salvaged' | 'would-salvage' | 'left' | 'failed';
  readonly before: string | null;
  readonly after: string | null;
  readonly detail: string;
}

export interface DoctorReport {
  readonly schemaVersion: 1;
  readonly command: 'doctor';
  readonly home: string;
  readonly realHome: string;
  /**
   * How the doctor decided whether the home is managed: `flag` (--managed/--unmanaged), `env`
   * (HERMES_MANAGED), `marker` (a trusted <home>/.managed), `tmpfiles` (--tmpfiles), `none`, or `unknown`
   * (the marker could not be looked up); `marker` says what the marker was (`trusted`, `absent`,
   * `untrusted`: ignored, `unknown`); `looksManaged` lists the tree's own evidence (setgid or group-writable
   * directories, group-shared state files).
   */
  readonly managed: {
    readonly managed: boolean;
    readonly system: string | null;
    readonly source: ManagedSource;
    readonly marker: 'trusted' | 'absent' | 'untrusted' | 'unknown';
    readonly looksManaged: readonly string[];
  };
  readonly homeMode: { readonly mode: string; readonly source: string };
  readonly uid: number;
  /**
   * How @hermes/fs-policy reaches names inside held directories in this process (`anchorInfo()`): `native`
   * (the addon's `*at` calls), `procfd` (through `/proc/self/fd`), or `refuse` (no usable `/proc`: privileged
   * and shared-home work is refused), with the reason and whether the kernel offers `openat2`.
   */
  readonly anchor: AnchorInfo;
  readonly scanned: { readonly directories: number; readonly files: number; readonly symlinks: number; readonly ms: number };
  readonly spool: SpoolSummary | null;
  readonly findings: readonly Finding[];
  readonly fix: { readonly requested: boolean; readonly dryRun: boolean; readonly changes: readonly Change[] };
  readonly summary: {
    readonly errors: number;
    readonly warnings: number;
    readonly info: number;
    readonly fixable: number;
    /** Findings of severity error or warning: the exit code is 1 when this is not zero. */
    readonly actionable: number;
  };
}

export interface SpoolSummary {
  readonly dir: string;
  readonly exists: boolean;
  /** `*.json` payload files (every kind, snapshots and other uids' files included). */
  readonly files: number;
  readonly bytes: number;
  /** Payloads recovery can deliver (files minus agent-history snapshots and unparseable ones). */
  readonly payloads: number;
  readonly bad: number;
  readonly snapshots: number;
  readonly unparseable: number;
  /** Payloads another uid owns (its own recovery picks them up). */
  readonly foreign: number;
  readonly oldestAgeMs: number | null;
  readonly limits: {
    readonly maxFiles: number;
    readonly maxBytes: number;
    readonly badRetentionDays: number;
    readonly snapshotRetentionDays: number;
    readonly source: 'config' | 'default';
  };
}
