/** `hermes-fs matrix --json`: the live permission matrix. */
import { z } from 'zod';
import { errorDocumentOf, octalMode } from './common.js';

const artifact = z.enum(["pending-messages","moa-traces","saved-sessions","trajectories","state-db"]);

const scenarioId = z.enum(["S1","S2","S3","S4","S5"]);

const cellId = z.enum(["pending_messages/","payload","moa-traces/","trace","sessions/saved/","snapshot","trajectory","state.db","state.db-wal","state.db-shm"]);

export const matrixResult = z.strictObject({
  schemaVersion: z.literal(1),
  command: z.literal("matrix"),
  ok: z.boolean().describe("True when every cell matches and every cross-uid row passed (exit code 0)."),
  durationMs: z.number().int().min(0).describe("Wall time of the whole run."),
  platform: z.string(),
  node: z.string(),
  uid: z.number().int().describe("The effective uid the matrix ran as (-1 where unknown)."),
  artifacts: z.array(artifact).min(1),
  scenarios: z.array(z.strictObject({
    id: scenarioId,
    title: z.string(),
    umask: octalMode,
    managed: z.boolean().describe("The child ran with HERMES_MANAGED=nixos."),
    homeMode: z.string().nullable().describe("HERMES_HOME_MODE of the child, or null."),
    homeDirMode: octalMode.nullable().describe("Mode the home had before the write (null: absent)."),
    preexistingDirMode: octalMode.nullable().describe("Mode of the pre-existing artifact directories (S4)."),
    childMs: z.number().int().min(0),
  })).min(5),
  cells: z.array(z.strictObject({
    scenario: scenarioId,
    artifact: artifact,
    cell: cellId,
    target: z.enum(["dir","file"]),
    path: z.string().nullable().describe("Path relative to the scenario's temp home."),
    expected: octalMode,
    measured: octalMode.nullable(),
    ok: z.boolean(),
    error: z.string().nullable().describe("Why nothing was measured (the package's error line)."),
  })).describe("One entry per scenario and measured path."),
  notes: z.array(z.strictObject({
    artifact: artifact,
    note: z.string(),
  })),
  crossUid: z.strictObject({
    ran: z.boolean(),
    skipped: z.string().nullable().describe("Why the cross-uid rows did not run (not asked for with --cross-uid, not root, …)."),
    users: z.array(z.strictObject({
      name: z.string(),
      uid: z.number().int(),
    })),
    group: z.string().nullable(),
    rows: z.array(z.strictObject({
      scenario: z.enum(["S1","S3"]),
      description: z.string(),
      expected: z.enum(["written","failure reported"]),
      outcome: z.enum(["written","failure reported","silent loss","unexpected write","error"]),
      ok: z.boolean(),
      detail: z.string(),
      path: z.string().nullable(),
      uid: z.number().int().nullable().describe("The second user's uid."),
      code: z.string().nullable().describe("The errno code the flush report carried (EACCES in S1)."),
    })),
    leftover: z.array(z.string().regex(/^(user|group) /)).describe("Throwaway accounts that could not be removed (the run fails); empty normally."),
  }),
  summary: z.strictObject({
    cells: z.number().int().min(0),
    passed: z.number().int().min(0),
    failed: z.number().int().min(0),
    crossUidFailed: z.number().int().min(0),
  }),
});

export type MatrixJson = z.infer<typeof matrixResult>;

export const matrixDocument = z.union([matrixResult, errorDocumentOf('matrix')]);
