import type { EnvSource, HermesEnvironment } from '@hermes/fs-policy';

/** The three snapshot formats. */
export type SaveFormat = 'json' | 'md' | 'html';

/**
 * One message of a conversation, as the session store exports it (or as an agent keeps it in memory).
 * Only `role` is required. Every other field is carried into the JSON snapshot untouched. The Markdown and
 * HTML renderers read `content`, `tool_calls`, `tool_name`/`name` and `timestamp`.
 */
export interface SnapshotMessage {
  readonly role: string;
  /** A string, null, or structured content (an array of parts, or an object with `text`/`content`). */
  readonly content?: unknown;
  /** Assistant tool calls: an array (OpenAI shape `{ id, type, function: { name, arguments } }`) or its JSON text. */
  readonly tool_calls?: unknown;
  readonly tool_call_id?: string | null;
  readonly tool_name?: string | null;
  readonly name?: string | null;
  /** Epoch seconds (rendered in UTC) or an already formatted string (rendered as it is). */
  readonly timestamp?: number | string | null;
}

/**
 * The `/save` export shape: what `@hermes/session-db`'s `exportSession(id)` returns and what the JSON
 * format writes. `started_at` is float epoch seconds, as in the session store. Other fields of the
 * session (`ended_at`, `end_reason`, `message_count`, …) are carried into the JSON as they are.
 */
export interface ConversationSnapshot {
  readonly id: string;
  readonly model: string | null;
  readonly started_at: number | null;
  readonly title?: string | null;
  readonly source?: string | null;
  readonly messages: readonly SnapshotMessage[];
}

/** The in-memory history of a live conversation (used when no session store is available). */
export interface ConversationHistory {
  readonly model: string | null;
  /** When the conversation started; written as `started_at` (epoch seconds), `null` when unknown. */
  readonly startedAt?: Date;
  /** The live session's id, when there is one; written as `id` (`null` otherwise). */
  readonly sessionId?: string;
  readonly messages: readonly SnapshotMessage[];
}

/** What `saveConversation` accepts: a session export, or a live in-memory history. */
export type SaveInput = ConversationSnapshot | ConversationHistory;

/**
 * The normalised snapshot every renderer works on (and the JSON format writes, key order included: the
 * fields below, any other field of the input snapshot before `messages`).
 */
export interface NormalizedSnapshot {
  id: string | null;
  model: string | null;
  started_at: number | null;
  title?: string | null;
  source?: string | null;
  messages: readonly SnapshotMessage[];
}

export interface SaveOptions {
  /** The Hermes home; snapshots go to `<home>/sessions/saved/`. `~` is expanded, relative paths made absolute. */
  readonly home: string;
  /**
   * `json` (default), `md` or `html`. When omitted and `filename` ends in `.md`/`.markdown`, `.html`/`.htm`
   * or `.json`, the extension decides.
   */
  readonly format?: SaveFormat;
  /**
   * An explicit file name. Relative names resolve inside `<home>/sessions/saved/` (not the working
   * directory); absolute names must lie inside it. An existing file of that name is replaced (and
   * re-tightened to 0600). Default: `hermes_conversation_%Y%m%d_%H%M%S.<format>` in local time, never
   * replacing an existing snapshot (`_2`, `_3`, … are appended instead).
   */
  readonly filename?: string;
  /** Run every string of the snapshot through `@hermes/redact`'s secret redaction (not PII). Default false. */
  readonly redact?: boolean;
  /**
   * Either the environment variables to resolve the install from (HERMES_MANAGED, HERMES_HOME_MODE,
   * HERMES_UID/HERMES_GID, HOME; default `process.env`), or an already resolved fs-policy environment
   * (its `home` must be `home`).
   */
  readonly env?: EnvSource | HermesEnvironment;
  /** The clock for the default file name (default: now). */
  readonly now?: Date;
}

export interface SaveResult {
  /** The file written (its real path when the name was a permitted symlink inside `sessions/saved/`). */
  readonly path: string;
  readonly format: SaveFormat;
  /** Bytes written. */
  readonly bytes: number;
  /** The final permission bits of the snapshot (0o600). */
  readonly mode: number;
  /** True when the content went through secret redaction. */
  readonly redacted: boolean;
  /** Things fs-policy left alone that an operator should know about (e.g. an owner change refused). */
  readonly warnings: readonly string[];
}
