import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { ensureFileSync, type HermesEnvironment, loadEnvironment } from '@hermes/fs-policy';
import { databaseError, isRowRejection, SessionDbError } from './errors.js';
import { migrate, newerSchemaError, readSchemaVersion, SCHEMA_VERSION } from './schema.js';
import {
  coerceEpoch,
  decodeContent,
  encodeContent,
  encodeToolCalls,
  nowSeconds,
  optionalInteger,
  optionalJsonObject,
  optionalText,
  parseJsonColumn,
  requiredEpoch,
  requiredText,
} from './values.js';

/** The file name of the session database in a Hermes home. */
export const STATE_DB_FILE = 'state.db';

/** Default SQLite busy timeout: how long a writer waits for another process's write lock. */
export const DEFAULT_BUSY_TIMEOUT_MS = 10_000;

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
  /** SQLite busy timeout in milliseconds (default {@link DEFAULT_BUSY_TIMEOUT_MS}). */
  busyTimeoutMs?: number;
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
}

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

interface MessageRow {
  id: number;
  session_id: string;
  role: string;
  content: unknown;
  timestamp: number;
  tool_call_id: string | null;
  tool_calls: string | null;
  tool_name: string | null;
  token_count: number | null;
  finish_reason: string | null;
  platform_message_id: string | null;
  display_kind: string | null;
  display_metadata: string | null;
}

interface NormalisedMessage {
  sessionId: string;
  role: string;
  content: string | null;
  timestamp: number;
  toolCallId: string | null;
  toolCalls: string | null;
  toolCallCount: number;
  toolName: string | null;
  tokenCount: number | null;
  finishReason: string | null;
  platformMessageId: string | null;
  displayKind: string | null;
  displayMetadata: string | null;
}

const INSERT_MESSAGE_SQL =
  'INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp, token_count, ' +
  'finish_reason, platform_message_id, display_kind, display_metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';

/** Runs {@link INSERT_MESSAGE_SQL} (prepared) for one message. */
function insertMessage(statement: Database.Statement, m: NormalisedMessage): Database.RunResult {
  return statement.run(
    m.sessionId,
    m.role,
    m.content,
    m.toolCallId,
    m.toolCalls,
    m.toolName,
    m.timestamp,
    m.tokenCount,
    m.finishReason,
    m.platformMessageId,
    m.displayKind,
    m.displayMetadata,
  );
}

/** Thrown inside a fast-path batch when an entry failed after its first write: replay with savepoints. */
class ReplayWithSavepoints extends Error {
  constructor(cause: unknown) {
    super('replay the recovery batch with one savepoint per entry', { cause });
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

type LooseMessage = { readonly [K in keyof AppendMessageInput]?: unknown };

/**
 * Validates and encodes one message. `timestamps: 'strict'` (a caller's own value) refuses anything but epoch
 * seconds; `'coerce'` (a value read from a spool file) replaces an implausible one with now, as the
 * reference's `coerce_epoch` does, so a file is never rejected for its timestamp alone.
 */
function normaliseMessage(input: LooseMessage, timestamps: 'strict' | 'coerce'): NormalisedMessage {
  const toolCalls = encodeToolCalls(input.toolCalls);
  return {
    sessionId: requiredText('session_id', input.sessionId),
    role: requiredText('role', input.role),
    content: encodeContent(input.content),
    timestamp: timestamps === 'strict' ? requiredEpoch('timestamp', input.timestamp) : coerceEpoch(input.timestamp),
    toolCallId: optionalText('tool_call_id', input.toolCallId),
    toolCalls: toolCalls.text,
    toolCallCount: toolCalls.count,
    toolName: optionalText('tool_name', input.toolName),
    tokenCount: optionalInteger('token_count', input.tokenCount),
    finishReason: optionalText('finish_reason', input.finishReason),
    platformMessageId: optionalText('platform_message_id', input.platformMessageId),
    displayKind: optionalText('display_kind', input.displayKind),
    displayMetadata: optionalJsonObject('display_metadata', input.displayMetadata),
  };
}

const SESSION_SELECT =
  'SELECT id, source, user_id, session_key, chat_id, chat_type, thread_id, model, model_config, parent_session_id, ' +
  'started_at, ended_at, end_reason, COALESCE(message_count, 0) AS message_count, ' +
  'COALESCE(tool_call_count, 0) AS tool_call_count, title, last_activity_at, cwd FROM sessions';

function sqlList(values: readonly string[]): string {
  return values.map((v) => `'${v.replace(/'/g, "''")}'`).join(', ');
}

/**
 * The Hermes session database. One handle wraps one better-sqlite3 connection; every method is synchronous.
 * Writes use WAL with `synchronous = FULL` (a committed transaction survives a power loss, which exactly-once
 * recovery relies on: a spool file is deleted after its commit and a {@link SessionDb.checkpoint}), `foreign_keys = ON` (a message for
 * a session id with no row is refused with `ESESSION_MISSING` instead of becoming an invisible orphan) and a
 * busy timeout so several processes (two uids on a managed install) can share the file.
 */
export class SessionDb {
  /** The database file. */
  readonly path: string;
  readonly readonly: boolean;
  readonly #db: Database.Database;
  readonly #version: number;
  #closed = false;
  readonly #statements = new Map<string, Database.Statement>();

  /** @internal Use {@link openSessionDb}. */
  constructor(db: Database.Database, file: string, readonly: boolean, version: number) {
    this.#db = db;
    this.path = file;
    this.readonly = readonly;
    this.#version = version;
  }

  /** The session-db schema version of the file (see README: `hermes_schema`). */
  get schemaVersion(): number {
    return this.#version;
  }

  get closed(): boolean {
    return this.#closed;
  }

  #stmt(sql: string): Database.Statement {
    if (this.#closed) throw new SessionDbError({ code: 'ECLOSED', path: this.path, message: `${this.path} is closed` });
    let s = this.#statements.get(sql);
    if (s === undefined) {
      s = this.#db.prepare(sql);
      this.#statements.set(sql, s);
    }
    return s;
  }

  #writable(): void {
    if (this.#closed) throw new SessionDbError({ code: 'ECLOSED', path: this.path, message: `${this.path} is closed` });
    if (this.readonly) {
      throw new SessionDbError({ code: 'EREADONLY', path: this.path, message: `${this.path} was opened read-only` });
    }
  }

  /** Creates a session row and returns its id. An existing id fails with `ESESSION_EXISTS`. */
  createSession(input: CreateSessionInput): string {
    this.#writable();
    const id = input.id === undefined ? randomUUID() : requiredText('id', input.id);
    const row = [
      id,
      requiredText('source', input.source),
      optionalText('user_id', input.userId),
      optionalText('session_key', input.sessionKey),
      optionalText('chat_id', input.chatId),
      optionalText('chat_type', input.chatType),
      optionalText('thread_id', input.threadId),
      optionalText('model', input.model),
      optionalJsonObject('model_config', input.modelConfig),
      optionalText('parent_session_id', input.parentSessionId),
      requiredEpoch('started_at', input.startedAt),
      optionalText('title', input.title),
      optionalText('cwd', input.cwd),
    ];
    try {
      this.#stmt(
        'INSERT INTO sessions (id, source, user_id, session_key, chat_id, chat_type, thread_id, model, model_config, ' +
          'parent_session_id, started_at, title, cwd, message_count, tool_call_count) ' +
          'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0)',
      ).run(...row);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
        throw new SessionDbError({ code: 'ESESSION_EXISTS', path: this.path, message: `session ${id} already exists`, cause: err });
      }
      throw databaseError(err, this.path, `creating session ${id} in ${this.path} failed`);
    }
    return id;
  }

  /** Marks a session ended (`ended_at`, `end_reason`). Returns false when no such session exists. */
  endSession(id: string, reason: string, endedAt?: number): boolean {
    this.#writable();
    const endedAtValue = requiredEpoch('ended_at', endedAt);
    const reasonValue = requiredText('end_reason', reason);
    try {
      return this.#stmt('UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ?').run(endedAtValue, reasonValue, id).changes > 0;
    } catch (err) {
      throw databaseError(err, this.path, `ending session ${id} in ${this.path} failed`);
    }
  }

  getSession(id: string): SessionRow | undefined {
    return this.#stmt(`${SESSION_SELECT} WHERE id = ?`).get(id) as SessionRow | undefined;
  }

  /** Sessions, most recently started first. */
  listSessions(options: ListSessionsOptions = {}): SessionSummary[] {
    const limit = options.limit ?? 50;
    const offset = options.offset ?? 0;
    const cols =
      'SELECT id, source, model, title, session_key, started_at, ended_at, end_reason, ' +
      'COALESCE(message_count, 0) AS message_count FROM sessions';
    if (options.source !== undefined) {
      return this.#stmt(`${cols} WHERE source = ? ORDER BY started_at DESC, id LIMIT ? OFFSET ?`).all(
        options.source,
        limit,
        offset,
      ) as SessionSummary[];
    }
    return this.#stmt(`${cols} ORDER BY started_at DESC, id LIMIT ? OFFSET ?`).all(limit, offset) as SessionSummary[];
  }

  #sessionExists(id: string): boolean {
    return this.#stmt('SELECT 1 FROM sessions WHERE id = ?').get(id) !== undefined;
  }

  #insert(m: NormalisedMessage): number {
    const info = insertMessage(this.#stmt(INSERT_MESSAGE_SQL), m);
    this.#stmt(
      'UPDATE sessions SET message_count = COALESCE(message_count, 0) + 1, ' +
        'tool_call_count = COALESCE(tool_call_count, 0) + ? WHERE id = ?',
    ).run(m.toolCallCount, m.sessionId);
    return Number(info.lastInsertRowid);
  }

  /**
   * Appends one message: the INSERT and the session's `message_count`/`tool_call_count` update happen in one
   * transaction. Returns the new row id. A session id without a row fails with `ESESSION_MISSING`; a value
   * that cannot be stored fails with `EINVALID_ROW` before anything is written.
   */
  appendMessage(input: AppendMessageInput): number {
    this.#writable();
    const m = normaliseMessage(input, 'strict');
    try {
      return this.#db
        .transaction(() => {
          if (!this.#sessionExists(m.sessionId)) {
            throw new SessionDbError({
              code: 'ESESSION_MISSING',
              path: this.path,
              message: `session ${m.sessionId} does not exist in ${this.path}`,
            });
          }
          return this.#insert(m);
        })
        .immediate();
    } catch (err) {
      throw databaseError(err, this.path, `appending a message to session ${m.sessionId} in ${this.path} failed`);
    }
  }

  /** The session and its active messages (ordered by timestamp, then id) in the `/save` JSON shape. */
  exportSession(id: string): SessionExport | undefined {
    const s = this.getSession(id);
    if (s === undefined) return undefined;
    const rows = this.#stmt(
      'SELECT id, session_id, role, content, timestamp, tool_call_id, tool_calls, tool_name, token_count, ' +
        'finish_reason, platform_message_id, display_kind, display_metadata FROM messages ' +
        'WHERE session_id = ? AND COALESCE(active, 1) = 1 ORDER BY timestamp, id',
    ).all(id) as MessageRow[];
    const messages = rows.map((r): ExportedMessage => ({
      id: r.id,
      session_id: r.session_id,
      role: r.role,
      content: decodeContent(r.content),
      timestamp: r.timestamp,
      ...(r.tool_call_id === null ? {} : { tool_call_id: r.tool_call_id }),
      ...(r.tool_calls === null ? {} : { tool_calls: parseJsonColumn(r.tool_calls) }),
      ...(r.tool_name === null ? {} : { tool_name: r.tool_name }),
      ...(r.token_count === null ? {} : { token_count: r.token_count }),
      ...(r.finish_reason === null ? {} : { finish_reason: r.finish_reason }),
      ...(r.platform_message_id === null ? {} : { platform_message_id: r.platform_message_id }),
      ...(r.display_kind === null ? {} : { display_kind: r.display_kind }),
      ...(r.display_metadata === null ? {} : { display_metadata: parseJsonColumn(r.display_metadata) }),
    }));
    return {
      id: s.id,
      ...(s.source === '' ? {} : { source: s.source }),
      model: s.model,
      ...(s.title === null ? {} : { title: s.title }),
      started_at: s.started_at,
      ...(s.ended_at === null ? {} : { ended_at: s.ended_at }),
      ...(s.end_reason === null ? {} : { end_reason: s.end_reason }),
      message_count: s.message_count,
      messages,
    };
  }

  /**
   * Resolves a gateway session key (`agent:<agent>:<platform>:…`) to the session that should receive a
   * recovered message, as the reference's `resolve_session_id_for_key` does from the durable rows:
   * - only keys of that form resolve (the platform is the row's `source`); anything else is null;
   * - candidates carry exactly this key and source, and are open or ended only for a recoverable reason;
   * - a reset boundary of the same key that ended after a candidate's last activity fences it off;
   * - sessions with messages win, then the most recent activity (`last_activity_at`, else `started_at`);
   * - a winner that started after the flush (`floor(started_at) > trunc(notAfter)`) cannot be the origin: null.
   * Never creates a session; null means "keep the spool file".
   */
  resolveSessionIdForKey(sessionKey: string, notAfter?: number): string | null {
    if (typeof sessionKey !== 'string' || sessionKey === '') return null;
    const parts = sessionKey.split(':');
    const platform = parts[0] === 'agent' && parts.length >= 3 ? parts[2] : undefined;
    if (platform === undefined || platform === '') return null;
    const row = this.#stmt(
      `SELECT s.id AS id, s.started_at AS started_at FROM sessions s
       WHERE s.session_key = ? AND s.source = ?
         AND (s.ended_at IS NULL OR s.end_reason IN (${sqlList(RECOVERABLE_END_REASONS)}))
         AND NOT EXISTS (
           SELECT 1 FROM sessions b
           WHERE b.session_key = s.session_key AND b.source = s.source
             AND b.ended_at IS NOT NULL AND b.end_reason IN (${sqlList(RESET_END_REASONS)})
             AND b.ended_at > COALESCE(s.last_activity_at, s.started_at))
       ORDER BY (COALESCE(s.message_count, 0) > 0
                 OR EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)) DESC,
                COALESCE(s.last_activity_at, s.started_at) DESC
       LIMIT 1`,
    ).get(sessionKey, platform) as { id: string; started_at: number | null } | undefined;
    if (row === undefined) return null;
    if (
      typeof notAfter === 'number' &&
      Number.isFinite(notAfter) &&
      row.started_at !== null &&
      Math.floor(row.started_at) > Math.trunc(notAfter)
    ) {
      return null;
    }
    return row.id;
  }

  /** True when a recovery receipt with this id is committed. */
  hasReceipt(receiptId: string): boolean {
    try {
      return this.#stmt('SELECT 1 FROM recovery_receipts WHERE receipt_id = ?').get(receiptId) !== undefined;
    } catch (err) {
      // A read-only handle on a database this package never migrated has no receipts table.
      if (this.readonly && err instanceof Error && err.message.includes('no such table')) return false;
      throw err;
    }
  }

  /**
   * Commits recovered spool files, all entries in one `BEGIN IMMEDIATE` write transaction (one fsync for the
   * batch); each entry's rows and its receipt (`recovery_receipts`) are written together or not at all. Per entry:
   * - a receipt that already exists → `duplicate` (nothing inserted: the file was recovered before);
   * - a row whose session has no row in `sessions` → `unknown-session` (nothing inserted);
   * - a row that cannot be stored (wrong type, constraint) → `rejected` (that entry rolled back, others kept);
   * - otherwise `inserted` with the new row ids.
   * A failure of the database itself (locked, full, I/O error, corrupt) rolls the whole batch back and throws.
   *
   * Speed: every row is validated and every session looked up (once per batch) before an entry writes
   * anything, the receipt is claimed first (`ON CONFLICT DO NOTHING`, which doubles as the duplicate check) and
   * the sessions' counters are updated once per session at the end of the batch, so an entry normally costs
   * two statements and no savepoint. Should a write of an entry fail after its first one succeeded (a
   * constraint only the database knows, e.g. a trigger), the batch is rolled back and replayed with one
   * savepoint per entry, which isolates that entry exactly as before.
   */
  commitRecovered(entries: readonly RecoveryEntry[]): RecoveryOutcome[] {
    this.#writable();
    const insertedAt = nowSeconds();
    try {
      try {
        return this.#db.transaction(() => this.#commitBatch(entries, insertedAt, false)).immediate();
      } catch (err) {
        if (!(err instanceof ReplayWithSavepoints)) throw err;
      }
      return this.#db.transaction(() => this.#commitBatch(entries, insertedAt, true)).immediate();
    } catch (err) {
      throw databaseError(err, this.path, `committing ${String(entries.length)} recovered spool file(s) to ${this.path} failed`);
    }
  }

  /**
   * Makes every committed transaction durable in the main database file, not only in the WAL:
   * `PRAGMA wal_checkpoint(TRUNCATE)` copies the WAL's frames into `state.db`, fsyncs it (`synchronous =
   * FULL`) and truncates the WAL. Recovery calls it after each batch's commit and before it removes the batch's
   * spool files, so a WAL that is lost afterwards (deleted by a tool, or a crash after someone removed it)
   * cannot take recovered messages with it. `complete` is false when another connection kept the checkpoint
   * from copying every frame (a reader on an old snapshot, a writer holding the lock past the busy timeout);
   * the caller must then keep the files (their receipts make the next pass remove them without inserting
   * anything). A database not in WAL mode has nothing to checkpoint: complete. Throws a SessionDbError for a
   * failure of the database itself.
   */
  checkpoint(): { readonly complete: boolean; readonly busy: boolean; readonly walFrames: number; readonly checkpointed: number } {
    this.#writable();
    let row: { busy: number; log: number; checkpointed: number } | undefined;
    try {
      row = (this.#db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number; log: number; checkpointed: number }[])[0];
    } catch (err) {
      throw databaseError(err, this.path, `checkpoint of ${this.path} failed`);
    }
    const busy = (row?.busy ?? 0) !== 0;
    const log = row?.log ?? -1;
    const checkpointed = row?.checkpointed ?? -1;
    return { complete: !busy && checkpointed >= log, busy, walFrames: log, checkpointed };
  }

  #commitBatch(entries: readonly RecoveryEntry[], insertedAt: number, savepoints: boolean): RecoveryOutcome[] {
    const selectReceipt = this.#stmt('SELECT 1 FROM recovery_receipts WHERE receipt_id = ?');
    const claimReceipt = this.#stmt(
      'INSERT INTO recovery_receipts (receipt_id, file_name, inserted_at, rows) VALUES (?, ?, ?, ?) ' +
        'ON CONFLICT (receipt_id) DO NOTHING',
    );
    const insertStatement = this.#stmt(INSERT_MESSAGE_SQL);
    const sessions = new Map<string, boolean>();
    const counters = new Map<string, { messages: number; toolCalls: number }>();
    const exists = (id: string): boolean => {
      let known = sessions.get(id);
      if (known === undefined) {
        known = this.#sessionExists(id);
        sessions.set(id, known);
      }
      return known;
    };
    const duplicateOr = (entry: RecoveryEntry, outcome: RecoveryOutcome): RecoveryOutcome =>
      selectReceipt.get(entry.receiptId) === undefined ? outcome : { receiptId: entry.receiptId, status: 'duplicate' };

    const one = (entry: RecoveryEntry): RecoveryOutcome => {
      let rows: NormalisedMessage[];
      try {
        rows = entry.rows.map((r) => normaliseMessage(r, 'coerce'));
      } catch (err) {
        if (!isRowRejection(err)) throw err;
        return duplicateOr(entry, { receiptId: entry.receiptId, status: 'rejected', error: messageOf(err) });
      }
      for (const r of rows) {
        if (!exists(r.sessionId)) {
          return duplicateOr(entry, { receiptId: entry.receiptId, status: 'unknown-session', sessionId: r.sessionId });
        }
      }
      // Claiming the receipt is the entry's first write: a failure here leaves nothing of the entry behind.
      if (claimReceipt.run(entry.receiptId, entry.fileName, insertedAt, rows.length).changes === 0) {
        return { receiptId: entry.receiptId, status: 'duplicate' };
      }
      const rowIds = rows.map((m) => {
        try {
          return Number(insertMessage(insertStatement, m).lastInsertRowid);
        } catch (err) {
          // The receipt is already written: only a savepoint can take this entry back on its own.
          if (!savepoints && isRowRejection(err)) throw new ReplayWithSavepoints(err);
          throw err;
        }
      });
      for (const m of rows) {
        const c = counters.get(m.sessionId);
        if (c === undefined) counters.set(m.sessionId, { messages: 1, toolCalls: m.toolCallCount });
        else {
          c.messages++;
          c.toolCalls += m.toolCallCount;
        }
      }
      return { receiptId: entry.receiptId, status: 'inserted', rowIds };
    };
    const isolated = savepoints ? this.#db.transaction(one) : one;

    const outcomes = entries.map((entry): RecoveryOutcome => {
      try {
        return isolated(entry);
      } catch (err) {
        if (err instanceof ReplayWithSavepoints || !isRowRejection(err)) throw err;
        return { receiptId: entry.receiptId, status: 'rejected', error: messageOf(err) };
      }
    });
    const bump = this.#stmt(
      'UPDATE sessions SET message_count = COALESCE(message_count, 0) + ?, ' +
        'tool_call_count = COALESCE(tool_call_count, 0) + ? WHERE id = ?',
    );
    for (const [id, c] of counters) bump.run(c.messages, c.toolCalls, id);
    return outcomes;
  }

  /** Closes the connection (idempotent). SQLite checkpoints the WAL and removes -wal/-shm when it is the last. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#statements.clear();
    this.#db.close();
  }
}

/**
 * Opens (creating when needed) the session database of a Hermes home. Before SQLite touches the file, a
 * missing `state.db` is created through @hermes/fs-policy (`ensureFileSync`, kind `state-db`): 0600 on an
 * unmanaged install, umask-derived (0660 under `UMask=0007`) on a managed one. SQLite then creates `-wal` and
 * `-shm` with the database file's mode. A database whose session-db schema is newer than this code is refused
 * (`ESCHEMA_NEWER`) before anything is written; an older one is migrated forward.
 */
export function openSessionDb(options: OpenSessionDbOptions = {}): SessionDb {
  const env = options.env ?? loadEnvironment(options.home === undefined ? {} : { home: options.home });
  const home = path.resolve(options.home ?? env.home);
  const file = path.resolve(options.path ?? path.join(home, STATE_DB_FILE));
  const readonly = options.readonly === true;
  const timeout = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;

  if (!readonly) {
    ensureFileSync(file, { kind: 'state-db', env });
  }
  let db: Database.Database;
  try {
    db = new Database(file, { readonly, fileMustExist: readonly, timeout });
  } catch (err) {
    throw databaseError(err, file, `cannot open ${file}`);
  }
  try {
    const found = readSchemaVersion(db);
    if (found > SCHEMA_VERSION) throw newerSchemaError(found, file);
    let version = found;
    if (!readonly) {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      db.pragma('foreign_keys = ON');
      version = migrate(db, file);
    }
    return new SessionDb(db, file, readonly, version);
  } catch (err) {
    db.close();
    throw databaseError(err, file, `cannot prepare ${file}`);
  }
}
