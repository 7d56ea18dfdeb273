/** `hermes-fs doctor --json`: the audit of a home, with the changes --fix made or --dry-run would make. */
import { z } from 'zod';
import { errorDocumentOf, octalMode } from './common.js';

/** The finding types (stable identifiers; the README lists them). */
export const findingType = z
  .enum([
    'dir-mode',
    'managed-group-access',
    'secret-file-mode',
    'owner',
    'symlink-escape',
    'symlink-dangling',
    'temp-file',
    'spool-files',
    'spool-bytes',
    'spool-bad',
    'spool-snapshots',
    'spool-pending',
    'config',
    'environment',
    'unreadable',
    'looks-managed',
    'unsafe-path',
    'state-file-mode',
    'hard-link',
    'foreign-temp',
    'untrusted-marker',
    'too-deep',
    'sqlite-unavailable',
  ])
  .describe(
    "The finding's kind (README: doctor findings). `untrusted-marker`: a .managed marker a member of the service group could have written, ignored; `too-deep`: a directory deeper than the walks go, not audited and not swept; `sqlite-unavailable`: the better-sqlite3 binding cannot load in this Node.",
  );

/** What `--fix` did to a path, or (`would-…`, with `--dry-run`) would do. */
export const changeAction = z
  .enum(['changed', 'would-change', 'removed', 'would-remove', 'salvaged', 'would-salvage', 'left', 'failed'])
  .describe(
    'changed/would-change: a mode or owner repaired; removed/would-remove: a stale temp file deleted; salvaged/would-salvage: a spool temp adopted into the spool or moved aside as .partial (@hermes/gateway salvageTemps); left: not repaired; failed: the repair failed (detail says why).',
  );

export const doctorFinding = z.object({
  type: findingType,
  severity: z.enum(['error', 'warning', 'info']),
  path: z.string().describe('Absolute path the finding is about.'),
  kind: z.string().nullable().describe('The artifact kind of the path, when it has one.'),
  problem: z.string().describe('What is wrong, in one sentence.'),
  fix: z.string().describe('The exact fix: a command an operator can run.'),
  fixable: z.boolean().describe('True when doctor --fix applies the fix.'),
  mode: octalMode.optional().describe('Measured mode, for mode findings.'),
  expected: octalMode.optional().describe('The mode policy asks for, for mode findings.'),
});

export const doctorChange = z.object({
  type: findingType,
  path: z.string(),
  action: changeAction,
  before: z.string().nullable(),
  after: z.string().nullable(),
  detail: z.string(),
});

export const doctorSpool = z.object({
  dir: z.string(),
  exists: z.boolean(),
  files: z.number().int().min(0).describe('*.json payload files (every kind, snapshots and other uids\' files included).'),
  bytes: z.number().int().min(0),
  payloads: z.number().int().min(0).describe('Payloads recovery can deliver (files minus agent-history snapshots and unparseable ones).'),
  bad: z.number().int().min(0),
  snapshots: z.number().int().min(0),
  unparseable: z.number().int().min(0),
  foreign: z.number().int().min(0).describe('Payloads another uid owns (its own recovery picks them up).'),
  oldestAgeMs: z.number().nullable(),
  limits: z.object({
    maxFiles: z.number().int(),
    maxBytes: z.number().int(),
    badRetentionDays: z.number(),
    snapshotRetentionDays: z.number(),
    source: z.enum(['config', 'default']),
  }),
});

export const doctorResult = z.object({
  schemaVersion: z.literal(1),
  command: z.literal('doctor'),
  home: z.string(),
  realHome: z.string(),
  managed: z.object({
    managed: z.boolean(),
    system: z.string().nullable(),
    source: z
      .enum(['flag', 'env', 'marker', 'tmpfiles', 'none', 'unknown'])
      .describe('Who decided: --managed/--unmanaged, HERMES_MANAGED, a trusted .managed marker, --tmpfiles; none: nobody trusted; unknown: the marker could not be looked up.'),
    marker: z
      .enum(['trusted', 'absent', 'untrusted', 'unknown'])
      .describe('What <home>/.managed was: trusted (root or the home owner wrote it, not group/other-writable, a regular file with one link), absent, untrusted (ignored), unknown (not searchable: EACCES).'),
    looksManaged: z.array(z.string()).describe("The tree's own evidence of a managed install (setgid or group-writable directories, group-shared state files)."),
  }),
  homeMode: z.object({ mode: z.string(), source: z.string() }),
  uid: z.number().int(),
  anchor: z
    .object({
      mode: z
        .enum(['native', 'procfd', 'refuse'])
        .describe(
          'How @hermes/fs-policy reaches a name inside a held directory: native (the addon\'s *at syscalls on the descriptor), procfd (through /proc/self/fd/<fd>/<name>; the addon is missing, unloadable or HERMES_FS_ANCHOR=procfd), refuse (no usable /proc: path operations, privileged and shared-home work refused).',
        ),
      reason: z.string().describe('Why this mode, in words (the decisive errno or setting).'),
      openat2: z.boolean().describe('Whether the kernel offers openat2 (probed only when the addon loads).'),
    })
    .describe('The anchor mode of @hermes/fs-policy in the doctor\'s process (anchorInfo()).'),
  scanned: z.object({
    directories: z.number().int().min(0),
    files: z.number().int().min(0),
    symlinks: z.number().int().min(0),
    ms: z.number().int().min(0),
  }),
  spool: doctorSpool.nullable(),
  findings: z.array(doctorFinding),
  fix: z.object({ requested: z.boolean(), dryRun: z.boolean(), changes: z.array(doctorChange) }),
  summary: z.object({
    errors: z.number().int().min(0),
    warnings: z.number().int().min(0),
    info: z.number().int().min(0),
    fixable: z.number().int().min(0),
    actionable: z.number().int().min(0).describe('Findings of severity error or warning: the exit code is 1 when this is not zero.'),
  }),
});

export type DoctorJson = z.infer<typeof doctorResult>;

export const doctorDocument = z.union([doctorResult, errorDocumentOf('doctor')]);
