import { randomUUID } from 'node:crypto';
import type Database from 'better-sqlite3';
import { databaseError, type IntegrityVerdict, integrityCheck, SessionDbError } from './errors.js';
import { INSERT_MESSAGE_SQL, insertMessage, type MessageRow, type NormalisedMessage, normaliseMessage } from './messages.js';
import { appendBatch, SELECT_IDEMPOTENCY_SQL } from './append-batch.js';
import { commitBatch, type BatchConnection, ReplayWithSavepoints } from './recovery-batch.js';
import {
  type AppendManyInput,
  type AppendMessageInput,
  type AppendOutcome,
  type CreateSessionInput,
  type ExportedMessage,
  type ListSessionsOptions,
  RECOVERABLE_END_REASONS,
  RESET_END_REASONS,
  type RecoveryEntry,
  type RecoveryOutcome,
  type SessionExport,
  type SessionRow,
  type SessionSummary,
} from './types.js';
import {
  decodeContent,
  nowSeconds,
  optionalJsonObject,
  optionalText,
  parseJsonColumn,
  requiredEpoch,
  requiredText,
} from './values.js';

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

  readonly #release: (() => void) | undefined;
  readonly #batch: BatchConnection = {
    stmt: (sql) => this.#stmt(sql),
    transaction: (fn) => this.#db.transaction(fn),
  };

  /**
   * @internal Use {@link openSessionDb}. `release` runs after the connection is closed (it lets go of the held
   * directory and the pinned database file).
   */
  constructor(db: Database.Database, file: string, readonly: boolean, version: number, release?: () => void) {
    this.#db = db;
    this.path = file;
    this.readonly = readonly;
    this.#version = version;
    this.#release = release;
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

  /** An integrity_check of this connection's database: whether an error SQLite calls corruption is damage. */
  readonly #integrity = (): IntegrityVerdict => integrityCheck(() => this.#db.pragma('integrity_check(1)'));

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
      throw databaseError(err, this.path, `creating session ${id} in ${this.path} failed`, this.#integrity);
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
      throw databaseError(err, this.path, `ending session ${id} in ${this.path} failed`, this.#integrity);
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
      throw databaseError(err, this.path, `appending a message to session ${m.sessionId} in ${this.path} failed`, this.#integrity);
    }
  }

  /**
   * Appends many messages in **one** `BEGIN IMMEDIATE` transaction — one commit, one fsync (`synchronous =
   * FULL`) for the whole group — and returns one outcome per input, in order. An `idempotencyKey` is unique per
   * session (`message_idempotency`): a key recorded earlier, also earlier in the same call, returns the first
   * message's id as `duplicate` and writes nothing. A row that cannot be stored (`EINVALID_ROW`) or names a
   * missing session (`ESESSION_MISSING`) is `rejected` on its own; the others are written. When this returns,
   * every `inserted` row is durable. A failure of the database itself (busy past the timeout, full, I/O error)
   * rolls the whole group back and throws a SessionDbError with the SQLite code.
   */
  appendMessages(inputs: readonly AppendManyInput[]): AppendOutcome[] {
    this.#writable();
    if (inputs.length === 0) return [];
    try {
      return this.#db.transaction(() => appendBatch(this.#batch, inputs, nowSeconds())).immediate();
    } catch (err) {
      throw databaseError(err, this.path, `appending ${String(inputs.length)} message(s) to ${this.path} failed`, this.#integrity);
    }
  }

  /** The id of the message first stored under `key` in session `sessionId` (see {@link appendMessages}), if any. */
  messageIdForIdempotencyKey(sessionId: string, key: string): number | undefined {
    const row = this.#stmt(SELECT_IDEMPOTENCY_SQL).get(sessionId, key) as { message_id: number } | undefined;
    return row?.message_id;
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
   * The ids of `receiptIds` whose recovery receipts are committed: one statement, one read snapshot for the whole
   * list (an answer is never older than the call). Same answers as {@link hasReceipt}, id by id.
   */
  committedReceipts(receiptIds: readonly string[]): Set<string> {
    if (receiptIds.length === 0) return new Set();
    try {
      const ids = this.#stmt('SELECT receipt_id FROM json_each(?) JOIN recovery_receipts ON receipt_id = value')
        .pluck()
        .all(JSON.stringify(receiptIds)) as string[];
      return new Set(ids);
    } catch (err) {
      if (this.readonly && err instanceof Error && err.message.includes('no such table')) return new Set();
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
        return this.#db.transaction(() => commitBatch(this.#batch, entries, insertedAt, false)).immediate();
      } catch (err) {
        if (!(err instanceof ReplayWithSavepoints)) throw err;
      }
      return this.#db.transaction(() => commitBatch(this.#batch, entries, insertedAt, true)).immediate();
    } catch (err) {
      throw databaseError(err, this.path, `committing ${String(entries.length)} recovered spool file(s) to ${this.path} failed`, this.#integrity);
    }
  }

  /**
   * Copies what it can of the WAL into the main database file without ever waiting: `PRAGMA
   * wal_checkpoint(PASSIVE)` never calls the busy handler, so another process's read snapshot (a backup, the
   * sqlite3 shell) or a checkpoint running elsewhere cannot stall the caller. When every frame of the WAL is
   * in the main file, that file was fsynced after the copy (`synchronous = FULL`; SQLite syncs the database
   * file once a checkpoint has copied every frame), so `complete: true` means every committed transaction is
   * durable in `state.db` itself and a lost WAL can no longer take it away. `complete` is false when frames
   * are left (`checkpointed < walFrames`: a reader's snapshot keeps them from being copied) or another
   * connection was checkpointing (`busy`); the caller keeps what depends on them and tries again later.
   * A database not in WAL mode has nothing to checkpoint: complete. Throws a SessionDbError for a failure of
   * the database itself.
   */
  checkpoint(): { readonly complete: boolean; readonly busy: boolean; readonly walFrames: number; readonly checkpointed: number } {
    this.#writable();
    let row: { busy: number; log: number; checkpointed: number } | undefined;
    try {
      row = (this.#db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[])[0];
    } catch (err) {
      throw databaseError(err, this.path, `checkpoint of ${this.path} failed`, this.#integrity);
    }
    const busy = (row?.busy ?? 0) !== 0;
    const log = row?.log ?? -1;
    const checkpointed = row?.checkpointed ?? -1;
    return { complete: !busy && checkpointed >= log, busy, walFrames: log, checkpointed };
  }
  /**
   * Closes the connection (idempotent). SQLite checkpoints the WAL and removes -wal/-shm when it is the last;
   * then the held directory and the pinned database file are released.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#statements.clear();
    try {
      this.#db.close();
    } finally {
      this.#release?.();
    }
  }
}
