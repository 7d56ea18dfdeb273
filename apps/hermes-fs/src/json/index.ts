/**
 * Every `--json` document, by schema file: the one definition the commands' output types come from and
 * `pnpm -C apps/hermes-fs schemas` turns into `schema/*.schema.json` (z.toJSONSchema).
 */
import type { z } from 'zod';
import { errorDocumentSchema } from './common.js';
import { doctorDocument } from './doctor.js';
import { matrixDocument } from './matrix.js';
import { pendingExportDocument, pendingListDocument, pendingPruneDocument, pendingRecoverDocument, pendingShowDocument } from './pending.js';
import { provisionDocument } from './provision.js';
import { saveDocument } from './save.js';

export interface DocumentSchema {
  /** The file name under schema/, without `.schema.json`. */
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly schema: z.ZodType;
}

/** The `$id` of a schema file: stable, not a URL anything fetches. */
export function schemaId(name: string): string {
  return `https://hermes.invalid/schemas/hermes-fs/${name}.schema.json`;
}

/** The schema of every `--json` document, in file-name order. */
export const DOCUMENT_SCHEMAS: readonly DocumentSchema[] = [
  {
    name: 'doctor',
    title: 'hermes-fs doctor --json',
    description: 'The audit of a home (after --fix: the second audit), with the changes --fix made or --dry-run would make. Exit 1 when summary.actionable is not 0.',
    schema: doctorDocument,
  },
  {
    name: 'error',
    title: 'hermes-fs --json error document',
    description: 'What every command prints on stdout with --json when it fails (each command\'s schema includes it with its own `command`).',
    schema: errorDocumentSchema,
  },
  {
    name: 'matrix',
    title: 'hermes-fs matrix --json',
    description:
      'The live permission matrix: every artifact written through its package\'s real API under the scenarios S1–S5 of docs/permissions.md, measured with lstat. Modes are four-digit octal strings ("0700", "2770").',
    schema: matrixDocument,
  },
  {
    name: 'pending-export',
    title: 'hermes-fs pending export ID --json',
    description: 'An agent-history snapshot exported as a transcript: written in sessions/saved/ (path, mode), or with --stdout printed in `transcript` (nothing written).',
    schema: pendingExportDocument,
  },
  {
    name: 'pending-list',
    title: 'hermes-fs pending list --json',
    description:
      'The spool, streamed as one document: entries in directory order (order: scan), or with an explicit --limit N the newest N in recovery order (order: recovery); then totals over every file.',
    schema: pendingListDocument,
  },
  {
    name: 'pending-prune',
    title: 'hermes-fs pending prune --json',
    description:
      'What @hermes/gateway prune matched and (with --yes) removed, and the temp files of killed writers it adopted or kept: complete payloads under temp names are never deleted. dryRun is true unless --yes was given; then nothing changed and removed is empty.',
    schema: pendingPruneDocument,
  },
  {
    name: 'pending-recover',
    title: 'hermes-fs pending recover --json',
    description:
      'The recovery report of @hermes/gateway recoverPending (null when the spool was empty or absent). ok is false (exit 1) when a file went .bad or a store/read/resolver error kept files.',
    schema: pendingRecoverDocument,
  },
  {
    name: 'pending-show',
    title: 'hermes-fs pending show ID --json',
    description: 'One spool file: its entry, its parsed payload (null when it could not be read or parsed) and, for an unparseable file, its text.',
    schema: pendingShowDocument,
  },
  {
    name: 'provision',
    title: 'hermes-fs provision … --json',
    description:
      'What `hermes-fs provision tmpfiles|systemd|nixos|registry --json` prints: the generated file (`text`, exactly what the command prints without --json) and the values it was generated from, all read from the @hermes/fs-policy registry. A failure prints the error document (error.schema.json).',
    schema: provisionDocument,
  },
  {
    name: 'save',
    title: 'hermes-fs save --json',
    description: 'A session of state.db written as a /save snapshot in sessions/saved/.',
    schema: saveDocument,
  },
];
