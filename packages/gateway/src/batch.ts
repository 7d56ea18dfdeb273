/**
 * The batch file: a TS extension of the spool. When a stop's per-file writes cannot finish inside its budget,
 * the payloads not yet on disk are written as **one** file, `batch-<32 hex>.json`, with fs-policy's atomic
 * write (temp, fsync, rename, directory fsync). Each member keeps the name it was planned under and the exact
 * text it would have had as a file of its own, so recovery treats a member exactly as that file: same
 * ordering key, same receipt (a payload's identity is its writer's `process_id`/`pid`/`seq`), so a member that
 * also reached disk as a file of its own is inserted once.
 *
 * The Python reference reads every `*.json` of the spool: a batch is a JSON object without `session_key` and
 * `data.text`, which it keeps (a warning, never deleted, never inserted); its `pending-*.json` transcript drain
 * does not match the name. The format is documented in docs/stop-contract.md ("The batch file").
 */
import { randomBytes } from 'node:crypto';
import { isRecord, PAYLOAD_SCHEMA_VERSION, PENDING_FILE_PATTERN, processId } from './payload.js';

/** `kind` of a batch file. */
export const BATCH_KIND = 'batch';
/** `reason` of a batch file (what the Python reference logs when it keeps it). */
export const BATCH_REASON = 'spool-batch';
/** Batch file names: `batch-<32 lowercase hex>.json`. */
export const BATCH_FILE_PATTERN = /^batch-[0-9a-f]{32}\.json$/;

/** One payload of a batch: the spool name it was planned under and its exact serialised text. */
export interface BatchMember {
  readonly name: string;
  readonly text: string;
}

/** A batch file's content. */
export interface SpoolBatch {
  readonly schema_version: number;
  readonly kind: typeof BATCH_KIND;
  readonly reason: typeof BATCH_REASON;
  /** Epoch seconds when the batch was written. */
  readonly ts: number;
  readonly pid: number;
  readonly process_id: string;
  /** `payloads.length`, written first so a reader can say how many members a batch holds before parsing them. */
  readonly count: number;
  readonly payloads: readonly BatchMember[];
}

/** Whether `name` is a batch file's name. */
export function isBatchName(name: string): boolean {
  return BATCH_FILE_PATTERN.test(name);
}

/** A fresh batch file name. */
export function batchFileName(): string {
  return `batch-${randomBytes(16).toString('hex')}.json`;
}

/**
 * The text of a batch file holding `members` (in the order given, which is the order they were planned).
 * Members are written as strings, so their bytes are exactly what their own files would have held.
 */
export function serializeBatch(members: readonly BatchMember[], ts: number = Date.now() / 1000): string {
  const batch: SpoolBatch = {
    schema_version: PAYLOAD_SCHEMA_VERSION,
    kind: BATCH_KIND,
    reason: BATCH_REASON,
    ts,
    pid: process.pid,
    process_id: processId(),
    count: members.length,
    payloads: members.map((m) => ({ name: m.name, text: m.text })),
  };
  return `${JSON.stringify(batch)}\n`;
}

/** Whether a parsed spool file claims to be a batch (its `kind`), valid or not. */
export function looksLikeBatch(value: unknown): boolean {
  return isRecord(value) && value.kind === BATCH_KIND;
}

/**
 * Validates a parsed batch file: the batch, or why it is not one (a batch that fails is kept for the operator,
 * never half-used). Member texts are not parsed here: each is a payload in its own right.
 */
export function parseBatch(value: unknown): { batch: SpoolBatch; problem?: undefined } | { batch?: undefined; problem: string } {
  if (!isRecord(value)) return { problem: 'not a JSON object' };
  if (value.kind !== BATCH_KIND) return { problem: `kind is ${JSON.stringify(value.kind)}, not "${BATCH_KIND}"` };
  if (value.schema_version !== PAYLOAD_SCHEMA_VERSION) {
    return { problem: `schema_version ${JSON.stringify(value.schema_version)} is not ${String(PAYLOAD_SCHEMA_VERSION)}` };
  }
  const payloads = value.payloads;
  if (!Array.isArray(payloads)) return { problem: 'payloads is not a list' };
  if (value.count !== payloads.length) {
    return { problem: `count ${JSON.stringify(value.count)} does not match the ${String(payloads.length)} payload(s) it holds` };
  }
  const seen = new Set<string>();
  for (let i = 0; i < payloads.length; i++) {
    const m: unknown = payloads[i];
    if (!isRecord(m) || typeof m.name !== 'string' || typeof m.text !== 'string') {
      return { problem: `payloads[${String(i)}] is not {name, text}` };
    }
    if (!PENDING_FILE_PATTERN.test(m.name)) return { problem: `payloads[${String(i)}].name ${JSON.stringify(m.name)} is not a spool payload name` };
    if (seen.has(m.name)) return { problem: `payloads[${String(i)}].name ${m.name} appears twice` };
    seen.add(m.name);
  }
  return { batch: value as unknown as SpoolBatch };
}
