import { randomBytes } from 'node:crypto';

/** The version written into every payload (`schema_version`). Readers keep files with a newer version. */
export const PAYLOAD_SCHEMA_VERSION = 1;

/** `reason` of a transcript message evicted by the in-memory cap (the reference's cap-drop spool). */
export const CAP_DROP_REASON = 'transcript_cap_drop';
/** `reason` of an agent-history snapshot: left for the operator, never replayed automatically. */
export const AGENT_HISTORY_REASON = 'shutdown-with-unpersisted-agent-history';
/** `issue` of an agent-history snapshot, as the reference writes it. */
export const AGENT_HISTORY_ISSUE = '#72680';

/** Spool file names: `pending-<32 lowercase hex>.json`. Opaque on purpose: never the session key. */
export const PENDING_FILE_PATTERN = /^pending-[0-9a-f]{32}\.json$/;

/**
 * The four payload shapes of the reference:
 * - `pending`: one adapter/runner "next-up" slot of a session (`flush_pending_to_file`);
 * - `overflow`: one queued event of a session's FIFO tail (`flush_overflow_to_file`);
 * - `transcript_cap_drop`: a transcript message evicted by the in-memory cap;
 * - `agent_history`: the unpersisted agent history of a session (a snapshot for the operator).
 */
export type PayloadKind = 'pending' | 'overflow' | 'transcript_cap_drop' | 'agent_history';

export const PAYLOAD_KINDS: readonly PayloadKind[] = ['pending', 'overflow', 'transcript_cap_drop', 'agent_history'];

/**
 * Fields every payload this package writes carries, beyond the reference's shape:
 * - `schema_version` (1);
 * - `kind` (one of {@link PayloadKind}; the reference tells them apart by `reason` only);
 * - the ordering key: `ts` (epoch seconds, float), `seq` (a per-process monotonic counter) and the writer's
 *   `pid` and `process_id` (random per process, so a recycled pid cannot make two writers look like one).
 */
export interface PayloadEnvelope {
  readonly schema_version: number;
  readonly kind: PayloadKind;
  readonly ts: number;
  readonly seq: number;
  readonly pid: number;
  readonly process_id: string;
}

/** `data` of a pending/overflow payload: `text` plus whatever the event carried (validated as JSON). */
export interface PendingData {
  readonly text?: string;
  readonly session_id?: string;
  readonly [field: string]: unknown;
}

export interface PendingSlotPayload extends PayloadEnvelope {
  readonly kind: 'pending';
  readonly session_key: string;
  readonly reason: string;
  readonly data: PendingData;
}

export interface OverflowPayload extends PayloadEnvelope {
  readonly kind: 'overflow';
  readonly session_key: string;
  readonly reason: string;
  /** The event's arrival index within its session's queue (what the reference stored in `seq`). */
  readonly index: number;
  readonly data: PendingData;
}

export interface CapDropPayload extends PayloadEnvelope {
  readonly kind: 'transcript_cap_drop';
  /** The session id (the reference stores the id under `session_key` for this kind). */
  readonly session_key: string;
  readonly reason: typeof CAP_DROP_REASON;
  readonly data: { readonly session_id: string; readonly message: Readonly<Record<string, unknown>> };
}

export interface AgentHistoryPayload extends PayloadEnvelope {
  readonly kind: 'agent_history';
  readonly reason: typeof AGENT_HISTORY_REASON;
  readonly issue: typeof AGENT_HISTORY_ISSUE;
  readonly session_id: string | null;
  readonly count: number;
  readonly messages: readonly unknown[];
}

export type SpoolPayload = PendingSlotPayload | OverflowPayload | CapDropPayload | AgentHistoryPayload;

/**
 * A message handed to a flush: a plain string (the runner's slots) or an event object. An object needs a
 * `text` (or media); `timestamp` (epoch seconds) becomes the payload's `ts` when present.
 */
export interface PendingEvent {
  readonly text?: string;
  readonly session_id?: string;
  readonly timestamp?: number;
  readonly media_urls?: readonly string[];
  readonly [field: string]: unknown;
}

export type PendingValue = string | PendingEvent;

const PROCESS_ID = randomBytes(8).toString('hex');
let seqCounter = 0;

/** The random id of this process, written as `process_id`. */
export function processId(): string {
  return PROCESS_ID;
}

/** The next value of this process's monotonic `seq` counter. */
export function nextSeq(): number {
  return seqCounter++;
}

/** Builds the ordering envelope of a new payload. */
export function envelope<K extends PayloadKind>(kind: K, ts: number): PayloadEnvelope & { readonly kind: K } {
  return { schema_version: PAYLOAD_SCHEMA_VERSION, kind, ts, seq: nextSeq(), pid: process.pid, process_id: PROCESS_ID };
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * The kind of a parsed payload, also for files the reference wrote (no `kind` field): the agent-history
 * and cap-drop reasons decide; otherwise a payload with `data`/`session_key` is a pending slot, or an overflow
 * entry when its `seq` is a non-negative integer (the reference's arrival index). `unknown` otherwise.
 */
export function classifyPayload(payload: Readonly<Record<string, unknown>>): PayloadKind | 'unknown' {
  if (payload.reason === AGENT_HISTORY_REASON) return 'agent_history';
  if (payload.reason === CAP_DROP_REASON) return 'transcript_cap_drop';
  const kind = payload.kind;
  if (kind === 'pending' || kind === 'overflow') return kind;
  if ('data' in payload || 'session_key' in payload) {
    return typeof payload.seq === 'number' && Number.isInteger(payload.seq) && payload.seq >= 0 ? 'overflow' : 'pending';
  }
  return 'unknown';
}

/**
 * The replay ordering key of a parsed payload, as the reference's newest reader computes it: `ts` when it is
 * a finite number, else 0 (missing, NaN, ±Infinity and non-numbers sort first, i.e. as the oldest); `seq`
 * when it is an integer, else -1. Ties are broken by the file name.
 */
export function orderingKey(payload: unknown): { ts: number; seq: number } {
  if (!isRecord(payload)) return { ts: 0, seq: -1 };
  const ts = typeof payload.ts === 'number' && Number.isFinite(payload.ts) ? payload.ts : 0;
  const seq = typeof payload.seq === 'number' && Number.isInteger(payload.seq) ? payload.seq : -1;
  return { ts, seq };
}

/**
 * The window of plausible epoch seconds (2000-01-01 … 2100-01-01), the same as @hermes/session-db's: a
 * timestamp outside it (milliseconds passed by mistake are 1,000 times too large) is never used as one.
 */
export const EPOCH_MIN = 946_684_800;
export const EPOCH_MAX = 4_102_444_800;

/** Why `value` is not epoch seconds (naming milliseconds when it looks like them), or undefined when it is. */
export function epochProblem(value: unknown): string | undefined {
  const ok = (v: number): boolean => Number.isFinite(v) && v >= EPOCH_MIN && v <= EPOCH_MAX;
  if (typeof value === 'number' && ok(value)) return undefined;
  if (typeof value !== 'number') return `expected epoch seconds (a number), got ${value === null ? 'null' : typeof value}`;
  if (!Number.isFinite(value)) return `expected epoch seconds, got ${String(value)}`;
  if (ok(value / 1000)) return `${String(value)} looks like epoch milliseconds, not seconds`;
  if (ok(value / 1_000_000)) return `${String(value)} looks like epoch microseconds, not seconds`;
  return `${String(value)} is not epoch seconds between 2000-01-01 and 2100-01-01`;
}
