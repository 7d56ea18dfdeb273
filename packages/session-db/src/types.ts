/** Public constants and types of @hermes/session-db. */
import type { HermesEnvironment } from '@hermes/fs-policy';

/** The file name of the session database in a Hermes home. */
export const STATE_DB_FILE = 'state.db';

/** Default SQLite busy timeout: how long a writer waits for another process's write lock. */
export const DEFAULT_BUSY_TIMEOUT_MS = 10_000;

/** The longest busy timeout SQLite takes (its busy handler counts milliseconds in a C int). */
export const MAX_BUSY_TIMEOUT_MS = 2_147_483_647;
/**
 * SQLite's page cache per connection, in KiB: SQLite's own default (what Python's `sqlite3`, and so the reference,
 * runs with), not the 16 MB better-sqlite3 builds in.
 */
export const DEFAULT_CACHE_SIZE_KIB = 2000;

/**
 * End reasons the reference treats as accidental (a runtime went away): such a session may still receive
 * recovered messages. Any other end reason is a deliberate boundary.
 */
export const RECOVERABLE_END_REASONS: readonly string[] = [
  'agent_close',
  'ws_orphan_reap',
  'superseded_by_resume',
  'startup_orphan_reap',
];

/** Reset boundaries: a session ended this way fences off every older session of the same key. */
export const RESET_END_REASONS: readonly string[] = [
  'session_reset',
  'session_switch',
  'idle',
  'daily',
  'suspended',
  'resume_pending_expired',
];

export interface OpenSessionDbOptions {
  /** The Hermes home; `state.db` lives directly in it. Defaults to `env.home`, else HERMES_HOME. */
  home?: string;
  /** An explicit database file, instead of `<home>/state.db`. */
  path?: string;
  /** The resolved fs-policy environment (managed state, umask, HERMES_HOME_MODE). Loaded when omitted. */
  env?: HermesEnvironment;
  /** Open without writing anything: no file creation, no pragma that writes, no migration. */
  readonly?: boolean;
  /**
   * SQLite busy timeout in milliseconds: an integer from 0 (fail at once on a lock) to {@link MAX_BUSY_TIMEOUT_MS}
   * (default {@link DEFAULT_BUSY_TIMEOUT_MS}); anything else is `EINVALID_OPTION`, before anything is created.
   */
  busyTimeoutMs?: number;
  /** SQLite's page cache for this connection in KiB, a positive integer (default {@link DEFAULT_CACHE_SIZE_KIB}). */
  cacheSizeKiB?: number;
}

export interface CreateSessionInput {
  /** The session id; a random UUID when omitted. */
  id?: string;
  /** Where the session comes from: `cli`, `telegram`, … (required, as in the reference). */
  source: string;
  model?: string | null;
  /** An object (stored as JSON) or a JSON string. */
  modelConfig?: Readonly<Record<string, unknown>> | string | null;
  sessionKey?: string | null;
  userId?: string | null;
  chatId?: string | null;
  chatType?: string | null;
  threadId?: string | null;
  parentSessionId?: string | null;
  title?: string | null;
  cwd?: string | null;
  /** Epoch seconds; now when omitted. Anything else but epoch seconds fails with `EINVALID_ROW`. */
  startedAt?: number;
}

export interface AppendMessageInput {
  sessionId: string;
  role: string;
  /** A string, null, or structured (list/object) content stored as JSON behind the reference's prefix. */
  content?: string | readonly unknown[] | Readonly<Record<string, unknown>> | null;
  /**
   * Epoch seconds; now when omitted. A value that is not epoch seconds (milliseconds, NaN, a string) fails
   * with `EINVALID_ROW` instead of being replaced silently.
   */
  timestamp?: number;
  toolCallId?: string | null;
  /** A list of tool calls (stored as JSON) or a JSON string of one; counts towards `tool_call_count`. */
  toolCalls?: readonly unknown[] | string | null;
  toolName?: string | null;
  tokenCount?: number | null;
  finishReason?: string | null;
  platformMessageId?: string | null;
  displayKind?: string | null;
  displayMetadata?: Readonly<Record<string, unknown>> | string | null;
}

/**
 * A message as a recovered spool file carries it: every field except the session id comes verbatim from a
 * JSON payload, so it is typed `unknown` and validated here. A value that cannot be stored rejects the row.
 */
export interface RecoveryRow {
  readonly sessionId: string;
  readonly role: unknown;
  readonly content?: unknown;
  readonly timestamp?: unknown;
  readonly toolCallId?: unknown;
  readonly toolCalls?: unknown;
  readonly toolName?: unknown;
  readonly tokenCount?: unknown;
  readonly finishReason?: unknown;
  readonly platformMessageId?: unknown;
}

/** One recovered spool file: its receipt id, its name (recorded with the receipt) and its rows. */
export interface RecoveryEntry {
  readonly receiptId: string;
  readonly fileName: string;
  readonly rows: readonly RecoveryRow[];
  /**
   * The client's idempotency key of the message this file holds (an addition for services that spool
   * acknowledged messages): recorded in `message_idempotency` with the first row, in the same transaction.
   * When the key is already recorded for that session, the entry inserts no row and is `duplicate`.
   */
  readonly idempotency?: { readonly sessionId: string; readonly key: string };
}

/** One message of {@link SessionDb.appendMessages}: an {@link AppendMessageInput} with an optional idempotency key. */
export interface AppendManyInput extends AppendMessageInput {
  /** Unique per session: a key already recorded returns the first message's id (`duplicate`), no new row. */
  idempotencyKey?: string;
}

/** What happened to one message of {@link SessionDb.appendMessages}. */
export type AppendOutcome =
  | { readonly status: 'inserted'; readonly id: number }
  | { readonly status: 'duplicate'; readonly id: number }
  | { readonly status: 'rejected'; readonly code: string; readonly error: string };

/** What happened to one {@link RecoveryEntry} in {@link SessionDb.commitRecovered}. */
export type RecoveryOutcome =
  | { readonly receiptId: string; readonly status: 'inserted'; readonly rowIds: readonly number[] }
  | { readonly receiptId: string; readonly status: 'duplicate' }
  | { readonly receiptId: string; readonly status: 'unknown-session'; readonly sessionId: string }
  | { readonly receiptId: string; readonly status: 'rejected'; readonly error: string };

/** A `sessions` row (the subset), with the reference's column names. */
export interface SessionRow {
  readonly id: string;
  readonly source: string;
  readonly user_id: string | null;
  readonly session_key: string | null;
  readonly chat_id: string | null;
  readonly chat_type: string | null;
  readonly thread_id: string | null;
  readonly model: string | null;
  readonly model_config: string | null;
  readonly parent_session_id: string | null;
  readonly started_at: number;
  readonly ended_at: number | null;
  readonly end_reason: string | null;
  readonly message_count: number;
  readonly tool_call_count: number;
  readonly title: string | null;
  readonly last_activity_at: number | null;
  readonly cwd: string | null;
}

export interface SessionSummary {
  readonly id: string;
  readonly source: string;
  readonly model: string | null;
  readonly title: string | null;
  readonly session_key: string | null;
  readonly started_at: number;
  readonly ended_at: number | null;
  readonly end_reason: string | null;
  readonly message_count: number;
}

/** One message of an export: the reference's column names; optional columns only when set. */
export interface ExportedMessage {
  readonly id: number;
  readonly session_id: string;
  readonly role: string;
  readonly content: unknown;
  readonly timestamp: number;
  readonly tool_call_id?: string;
  readonly tool_calls?: unknown;
  readonly tool_name?: string;
  readonly token_count?: number;
  readonly finish_reason?: string;
  readonly platform_message_id?: string;
  readonly display_kind?: string;
  readonly display_metadata?: unknown;
}

/**
 * A session in the `/save` JSON export shape: `id`, `model`, `started_at` and `messages` always; `source`,
 * `title`, `ended_at`, `end_reason` when set.
 */
export interface SessionExport {
  readonly id: string;
  readonly source?: string;
  readonly model: string | null;
  readonly title?: string;
  readonly started_at: number;
  readonly ended_at?: number;
  readonly end_reason?: string;
  readonly message_count: number;
  readonly messages: readonly ExportedMessage[];
}

export interface ListSessionsOptions {
  source?: string;
  /** Default 50. */
  limit?: number;
  offset?: number;
}
