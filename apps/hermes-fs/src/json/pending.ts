/** The `pending` subcommands' `--json` documents: list, show, recover, export, prune. */
import { z } from 'zod';
import { errorDocumentOf, octalMode } from './common.js';

/** A spool file as the documents show it: @hermes/gateway's SpoolEntryWithContent (the names of listSpool) plus `time`. */
export const pendingEntry = z.strictObject({
  id: z.string().describe("The name without pending-, .json and a recovery .bad suffix (32 hex for a standard name)."),
  name: z.string(),
  path: z.string(),
  kind: z.enum(["pending","overflow","cap-drop","agent-history","bad","batch","temp","partial","unknown"]).describe("@hermes/gateway SpoolEntryKind (the same names as listSpool): batch — a batch file (members: how many payloads); temp — a complete payload (or batch) under the temp name of a write a killed writer did not finish, which recovery's salvage adopts; partial — an incomplete temp or a *.partial file salvage moved aside (no complete message)."),
  payloadKind: z.literal(["pending","overflow","transcript_cap_drop","agent_history","unknown",null]).describe("The payload's own kind (@hermes/gateway PayloadKind), also for a .bad file; null when the content is not known."),
  ts: z.number().nullable().describe("The payload's ts (epoch seconds) when finite."),
  seq: z.number().int().nullable(),
  reason: z.string().nullable(),
  size: z.number().int().min(0),
  mtime: z.number().describe("Modification time, epoch milliseconds."),
  uid: z.number().int(),
  mode: z.number().int().min(0).describe("Permission bits as a number (mode & 0o7777)."),
  fileType: z.enum(["file","symlink","directory","fifo","socket","block-device","character-device","unknown"]).describe("file, or what a not-a-regular-file entry is (never followed or opened)."),
  hasSessionKey: z.boolean(),
  hasSessionId: z.boolean(),
  messages: z.number().int().nullable().describe("Messages in an agent-history snapshot."),
  members: z.number().int().min(0).nullable().describe("Payloads a valid batch file (or a complete batch under a temp name) holds; null for other files."),
  target: z.string().nullable().describe("The payload name a temp or .partial file was written for; null for other files."),
  problem: z.literal(["foreign","unreadable","unparseable","too-deep","not-an-object","invalid-batch","not-a-regular-file",null]).describe("Why the content is not known; null when it was read and parsed. too-deep: JSON nested deeper than the parser's limit (refused, never a stack overflow); invalid-batch: a batch file that is not a valid batch (detail says why)."),
  error: z.string().nullable().describe("The errno of a foreign/unreadable file."),
  detail: z.string().nullable().describe("One line on what is wrong or pending: the parser's message (unparseable, too-deep), why a batch is invalid, why a temp is incomplete or what recovery does with it."),
  content: z.strictObject({
    sessionKey: z.string().nullable(),
    sessionId: z.string().nullable(),
    text: z.string().nullable().describe("The start of the message text (at most 200 UTF-16 code units), exact: control characters are not escaped in JSON."),
    textLength: z.number().int().nullable(),
  }).nullable(),
  time: z.number().describe("What the age is measured from, epoch ms: ts when positive, else mtime (as prune ages snapshots)."),
}).describe("@hermes/gateway SpoolEntryWithContent, plus time.");

export const pendingListTotals = z.strictObject({
  files: z.number().int().min(0),
  bytes: z.number().int().min(0),
  toDeliver: z.number().int().min(0).describe("Readable pending, overflow and cap-drop payloads under their final names."),
  toAdopt: z.number().int().min(0).describe("Of the deliverable payloads, those still under temp names (complete writes a killed writer did not rename): recovery's salvage adopts them."),
  batchMembers: z.number().int().min(0).describe("Payloads held by valid batch files."),
  kinds: z.strictObject({
    pending: z.number().int().min(0),
    overflow: z.number().int().min(0),
    "cap-drop": z.number().int().min(0),
    "agent-history": z.number().int().min(0),
    bad: z.number().int().min(0),
    batch: z.number().int().min(0),
    temp: z.number().int().min(0),
    partial: z.number().int().min(0),
    unknown: z.number().int().min(0),
  }),
  problems: z.strictObject({
    foreign: z.number().int().min(0),
    unreadable: z.number().int().min(0),
    unparseable: z.number().int().min(0),
    "too-deep": z.number().int().min(0),
    "not-an-object": z.number().int().min(0),
    "invalid-batch": z.number().int().min(0),
    "not-a-regular-file": z.number().int().min(0),
  }),
  otherUids: z.array(z.number().int()),
  oldestTime: z.number().nullable(),
  newestTime: z.number().nullable(),
});

/** @hermes/gateway SalvageReport: temp files of killed writers, adopted, moved aside or left. */
const salvageReport = z.object({
  dir: z.string(),
  scanned: z.number().int().min(0),
  adopted: z.array(z.object({ temp: z.string(), path: z.string(), bytes: z.number().int().min(0) })),
  duplicates: z.array(z.object({ temp: z.string(), path: z.string() })),
  partial: z.array(z.object({ temp: z.string(), partialPath: z.string(), bytes: z.number().int().min(0), detail: z.string() })),
  left: z.array(z.object({ temp: z.string(), reason: z.string(), detail: z.string() })),
  errors: z.array(z.object({ path: z.string(), code: z.string(), message: z.string(), hint: z.string() })),
  durable: z.boolean().describe("False when the directory fsync after the renames failed."),
});

/** The spool, streamed as one document: entries in directory order (order: scan), or with an explicit --limit N the newest N in recovery order (order: recovery); then totals over every file. */
export const pendingListResult = z.strictObject({
  schemaVersion: z.literal(1),
  command: z.literal("pending list"),
  home: z.string(),
  dir: z.string(),
  exists: z.boolean().describe("False when pending_messages/ does not exist (nothing waits)."),
  order: z.enum(["scan","recovery"]),
  limit: z.number().int().min(0).nullable(),
  entries: z.array(pendingEntry),
  totals: pendingListTotals,
  ok: z.literal(true),
});

/** One spool file: its entry, its parsed payload (null when it could not be read or parsed) and, for an unparseable file, its text. */
export const pendingShowResult = z.strictObject({
  schemaVersion: z.literal(1),
  command: z.literal("pending show"),
  ok: z.literal(true),
  entry: pendingEntry,
  payload: z.unknown().describe("The payload exactly as parsed (any JSON value), or null."),
  raw: z.string().nullable().describe("The text of an unparseable file (invalid UTF-8 as U+FFFD)."),
});

/** The recovery report of @hermes/gateway recoverPending (null when the spool was empty or absent). ok is false (exit 1) when a file went .bad or a store/read/resolver error kept files. */
export const pendingRecoverResult = z.strictObject({
  schemaVersion: z.literal(1),
  command: z.literal("pending recover"),
  home: z.string(),
  stateDb: z.string(),
  createdDb: z.boolean().describe("state.db was created by --create-db."),
  report: z.object({
    dir: z.string(),
    scanned: z.number().int().min(0),
    counts: z.object({
      inserted: z.number().int().min(0),
      rows: z.number().int().min(0).describe("Rows the inserted files gave (one per message)."),
      alreadyCommitted: z.number().int().min(0),
      duplicates: z.number().int().min(0),
    }).describe("How many files each committed outcome had (the lengths of the lists below)."),
    inserted: z.array(z.object({
      path: z.string(),
      receiptId: z.string(),
      kind: z.string(),
      sessionId: z.string(),
      rowIds: z.array(z.number().int()),
      removed: z.boolean().describe("The file was removed (false: it is also in kept, not-removed or checkpoint-pending)."),
    })),
    alreadyCommitted: z.array(z.object({
      path: z.string(),
      receiptId: z.string(),
      removed: z.boolean(),
    })),
    duplicates: z.array(z.object({
      path: z.string(),
      receiptId: z.string(),
      of: z.string().describe("The file this pass delivered the same payload from."),
      removed: z.boolean(),
    })).describe("Files that held a payload this pass delivered under another name: nothing inserted for them."),
    kept: z.array(z.object({
      path: z.string(),
      reason: z.string(),
      detail: z.string(),
    })),
    bad: z.array(z.object({
      path: z.string(),
      badPath: z.string(),
      error: z.string(),
    })),
    snapshots: z.array(z.object({
      path: z.string(),
      sessionId: z.string().nullable(),
      count: z.number().int().nullable(),
    })),
    foreignOwner: z.array(z.object({
      path: z.string(),
      uid: z.number().int(),
    })),
    errors: z.array(z.object({
      path: z.string(),
      code: z.string(),
      message: z.string(),
      hint: z.string(),
    })),
    salvage: salvageReport.nullable().describe("What the salvage of temp files did before the pass (null when it was turned off)."),
    batches: z.array(z.object({
      path: z.string(),
      members: z.number().int().min(0),
      inserted: z.number().int().min(0),
      alreadyCommitted: z.number().int().min(0),
      writtenOut: z.number().int().min(0),
      removed: z.boolean(),
      detail: z.string().nullable(),
    })).describe("The valid batch files this pass met."),
  }).nullable(),
  ok: z.boolean(),
});

/** An agent-history snapshot written as a transcript in sessions/saved/ or, with --stdout, printed in `transcript` (nothing written). */
const pendingExportSaved = z.strictObject({
  schemaVersion: z.literal(1),
  command: z.literal("pending export"),
  ok: z.literal(true),
  id: z.string(),
  source: z.string().describe("The spool file (it stays in the spool)."),
  path: z.string(),
  format: z.enum(["md","json","html"]),
  bytes: z.number().int().min(0),
  mode: octalMode,
  redacted: z.boolean(),
  messages: z.number().int().min(0),
});

const pendingExportPrinted = z.strictObject({
  schemaVersion: z.literal(1),
  command: z.literal("pending export"),
  ok: z.literal(true),
  id: z.string(),
  source: z.string().describe("The spool file (it stays in the spool)."),
  format: z.enum(["md","json","html"]),
  bytes: z.number().int().min(0).describe("UTF-8 length of the transcript."),
  redacted: z.boolean(),
  messages: z.number().int().min(0),
  transcript: z.string().describe("With --stdout: the transcript itself, exact (nothing was written)."),
});

export const pendingExportResult = z.union([pendingExportSaved, pendingExportPrinted]);

/** What @hermes/gateway prune matched and (with --yes) removed, and the temp files of killed writers it adopted or kept: complete payloads under temp names are never deleted. dryRun is true unless --yes was given; then nothing changed and removed is empty. */
export const pendingPruneResult = z.strictObject({
  schemaVersion: z.literal(1),
  command: z.literal("pending prune"),
  ok: z.boolean().describe("False when a file could not be removed (exit 1)."),
  home: z.string(),
  dryRun: z.boolean(),
  retentionDays: z.strictObject({
    bad: z.number(),
    snapshots: z.number(),
    source: z.enum(["--older-than","config.yaml","defaults"]),
  }),
  matched: z.array(z.object({
    path: z.string(),
    category: z.enum(["bad","snapshots","partial","temp"]).describe("bad: a .bad file; snapshots: an agent-history snapshot; partial: a .partial file (an incomplete temp salvage moved aside; in a dry run also an incomplete temp it would move aside first); temp: a stale temp file that holds no complete payload."),
    ageDays: z.number(),
    bytes: z.number().int().min(0),
  })),
  removed: z.array(z.string()),
  salvaged: z.array(z.strictObject({
    temp: z.string(),
    path: z.string().describe("The final name it is (would be) adopted under."),
    bytes: z.number().int().min(0),
  })).describe("Complete payloads adopted from temp files under the name they were written for, before anything was considered (in a dry run: those salvage would adopt; nothing was changed). Never deleted."),
  movedAside: z.array(z.object({
    temp: z.string(),
    partialPath: z.string(),
    bytes: z.number().int().min(0),
    detail: z.string(),
  })).describe("Incomplete temps the salvage of a real run moved aside as .partial (empty in a dry run)."),
  kept: z.array(z.strictObject({
    path: z.string(),
    reason: z.enum(["complete-payload","complete-batch","writer-alive","too-recent","foreign","not-a-regular-file","not-a-payload","conflict","unreadable","changed"]).describe("@hermes/gateway PruneKeptReason: complete-payload (salvage adopts it), complete-batch, a reason salvage left a complete payload in place (writer-alive, too-recent, conflict, …), foreign or unreadable (not provably incomplete), changed (it changed after it was examined)."),
    detail: z.string(),
  })).describe("Temp files kept whatever their age, and why."),
  errors: z.array(z.object({
    path: z.string(),
    code: z.string(),
    message: z.string().optional(),
    hint: z.string().optional(),
  })),
});

export type PendingEntryJson = z.infer<typeof pendingEntry>;
export type PendingListJson = z.infer<typeof pendingListResult>;
export type PendingListTotalsJson = z.infer<typeof pendingListTotals>;
export type PendingShowJson = z.infer<typeof pendingShowResult>;
export type PendingRecoverJson = z.infer<typeof pendingRecoverResult>;
export type PendingExportJson = z.infer<typeof pendingExportResult>;
export type PendingPruneJson = z.infer<typeof pendingPruneResult>;

export const pendingListDocument = z.union([pendingListResult, errorDocumentOf('pending list')]);
export const pendingShowDocument = z.union([pendingShowResult, errorDocumentOf('pending show')]);
export const pendingRecoverDocument = z.union([pendingRecoverResult, errorDocumentOf('pending recover')]);
export const pendingExportDocument = z.union([pendingExportResult, errorDocumentOf('pending export')]);
export const pendingPruneDocument = z.union([pendingPruneResult, errorDocumentOf('pending prune')]);
