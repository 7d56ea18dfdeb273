import type BetterSqlite3 from 'better-sqlite3';
import { SessionDbError } from './errors.js';

type Db = BetterSqlite3.Database;

/**
 * The table that records this package's schema version. It is deliberately NOT the reference's
 * `schema_version` table (which holds the Python implementation's own version, 30 at the time of writing)
 * nor `PRAGMA user_version`: the two implementations version their parts of one file independently, and
 * neither may mistake the other's number for its own.
 */
export const SCHEMA_TABLE = 'hermes_schema';
/** The `component` key of this package's row in {@link SCHEMA_TABLE}. */
export const SCHEMA_COMPONENT = 'session-db';

/** One column of the subset this package creates and relies on. */
export interface ColumnSpec {
  readonly name: string;
  /** The declaration used in CREATE TABLE, copied from the reference's SCHEMA_SQL. */
  readonly decl: string;
  /** Whether the column can be added to an existing table with ALTER TABLE ADD COLUMN. */
  readonly addable: boolean;
}

/**
 * The `sessions` subset: names, types and defaults as in the reference (`hermes_state` SCHEMA_SQL). The
 * reference has many more columns (token and cost counters, compression and handoff state, …); a database
 * created by the reference keeps them, and this package never names them.
 */
export const SESSION_COLUMNS: readonly ColumnSpec[] = [
  { name: 'id', decl: 'TEXT PRIMARY KEY', addable: false },
  { name: 'source', decl: 'TEXT NOT NULL', addable: false },
  { name: 'user_id', decl: 'TEXT', addable: true },
  { name: 'session_key', decl: 'TEXT', addable: true },
  { name: 'chat_id', decl: 'TEXT', addable: true },
  { name: 'chat_type', decl: 'TEXT', addable: true },
  { name: 'thread_id', decl: 'TEXT', addable: true },
  { name: 'model', decl: 'TEXT', addable: true },
  { name: 'model_config', decl: 'TEXT', addable: true },
  { name: 'parent_session_id', decl: 'TEXT', addable: true },
  { name: 'started_at', decl: 'REAL NOT NULL', addable: false },
  { name: 'ended_at', decl: 'REAL', addable: true },
  { name: 'end_reason', decl: 'TEXT', addable: true },
  { name: 'message_count', decl: 'INTEGER DEFAULT 0', addable: true },
  { name: 'tool_call_count', decl: 'INTEGER DEFAULT 0', addable: true },
  { name: 'title', decl: 'TEXT', addable: true },
  { name: 'last_activity_at', decl: 'REAL', addable: true },
  { name: 'cwd', decl: 'TEXT', addable: true },
];

/** The `messages` subset, as in the reference (reasoning and codex columns are not part of it). */
export const MESSAGE_COLUMNS: readonly ColumnSpec[] = [
  { name: 'id', decl: 'INTEGER PRIMARY KEY AUTOINCREMENT', addable: false },
  { name: 'session_id', decl: 'TEXT NOT NULL REFERENCES sessions(id)', addable: false },
  { name: 'role', decl: 'TEXT NOT NULL', addable: false },
  { name: 'content', decl: 'TEXT', addable: true },
  { name: 'tool_call_id', decl: 'TEXT', addable: true },
  { name: 'tool_calls', decl: 'TEXT', addable: true },
  { name: 'tool_name', decl: 'TEXT', addable: true },
  { name: 'timestamp', decl: 'REAL NOT NULL', addable: false },
  { name: 'token_count', decl: 'INTEGER', addable: true },
  { name: 'finish_reason', decl: 'TEXT', addable: true },
  { name: 'platform_message_id', decl: 'TEXT', addable: true },
  { name: 'active', decl: 'INTEGER NOT NULL DEFAULT 1', addable: true },
  { name: 'compacted', decl: 'INTEGER NOT NULL DEFAULT 0', addable: true },
  { name: 'api_content', decl: 'TEXT', addable: true },
  { name: 'display_kind', decl: 'TEXT', addable: true },
  { name: 'display_metadata', decl: 'TEXT', addable: true },
  { name: 'display_identity', decl: 'BLOB', addable: true },
  { name: 'display_order', decl: 'INTEGER', addable: true },
];

/**
 * Idempotency keys of appended messages (beyond the reference): a key is unique per session and names the
 * first message stored with it, so a client's retry of a message it already delivered adds no second row.
 */
export const IDEMPOTENCY_COLUMNS: readonly ColumnSpec[] = [
  { name: 'session_id', decl: 'TEXT NOT NULL', addable: false },
  { name: 'idempotency_key', decl: 'TEXT NOT NULL', addable: false },
  { name: 'message_id', decl: 'INTEGER NOT NULL', addable: false },
  { name: 'created_at', decl: 'REAL NOT NULL', addable: false },
];

/** The table this package adds beyond the reference: one row per recovered spool file (exactly-once). */
export const RECEIPT_COLUMNS: readonly ColumnSpec[] = [
  { name: 'receipt_id', decl: 'TEXT PRIMARY KEY', addable: false },
  { name: 'file_name', decl: 'TEXT NOT NULL', addable: false },
  { name: 'inserted_at', decl: 'REAL NOT NULL', addable: false },
  { name: 'rows', decl: 'INTEGER NOT NULL', addable: false },
];

function createTableSql(table: string, columns: readonly ColumnSpec[], trailer: readonly string[] = []): string {
  const parts = [...columns.map((c) => `  ${c.name} ${c.decl}`), ...trailer.map((t) => `  ${t}`)];
  return `CREATE TABLE IF NOT EXISTS ${table} (\n${parts.join(',\n')}\n)`;
}

/**
 * Makes an existing table (for instance one created by the reference, or by an older reference version)
 * carry every column of the subset: missing nullable/defaulted columns are added; a missing required
 * column is an incompatibility. Columns the subset does not know are left alone.
 */
function reconcileColumns(db: Db, table: string, columns: readonly ColumnSpec[]): void {
  const present = new Set(
    (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((r) => r.name),
  );
  for (const col of columns) {
    if (present.has(col.name)) continue;
    if (!col.addable) {
      throw new SessionDbError({
        code: 'ESCHEMA_INCOMPATIBLE',
        message: `table ${table} exists without the required column ${col.name}; this is not a Hermes state.db`,
      });
    }
    db.exec(`ALTER TABLE ${table} ADD COLUMN ${col.name} ${col.decl}`);
  }
}

/** One forward-only migration step; `version` is the version the database has after it ran. */
export interface Migration {
  readonly version: number;
  readonly description: string;
  readonly up: (db: Db) => void;
}

/**
 * Forward-only migrations. Each runs in its own write transaction together with the version bump, so a
 * crash leaves the database at the previous or the next version, never in between. Steps use
 * `IF NOT EXISTS` and column reconciliation, so they also apply cleanly to a database the reference created.
 * Append new steps at the end; never edit a released one.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'sessions/messages subset of the reference schema',
    up(db) {
      db.exec(createTableSql('sessions', SESSION_COLUMNS, ['FOREIGN KEY (parent_session_id) REFERENCES sessions(id)']));
      db.exec(createTableSql('messages', MESSAGE_COLUMNS));
      reconcileColumns(db, 'sessions', SESSION_COLUMNS);
      reconcileColumns(db, 'messages', MESSAGE_COLUMNS);
      db.exec('CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id, timestamp)');
      db.exec('CREATE INDEX IF NOT EXISTS idx_sessions_source ON sessions(source)');
      db.exec('CREATE INDEX IF NOT EXISTS idx_sessions_session_key ON sessions(session_key)');
    },
  },
  {
    version: 2,
    description: 'recovery_receipts: exactly-once receipts of recovered shutdown-spool files',
    up(db) {
      db.exec(createTableSql('recovery_receipts', RECEIPT_COLUMNS));
    },
  },
  {
    version: 3,
    description: "idx_sessions_session_key on (session_key, started_at DESC), the reference's definition",
    up(db) {
      ensureSessionKeyIndex(db);
    },
  },
  {
    version: 4,
    description: 'message_idempotency: one row per (session, idempotency key), naming the message first stored with it',
    up(db) {
      db.exec(createTableSql('message_idempotency', IDEMPOTENCY_COLUMNS, ['PRIMARY KEY (session_id, idempotency_key)']));
    },
  },
];

/** The reference's definition of `idx_sessions_session_key` (both sides create it `IF NOT EXISTS`). */
export const SESSION_KEY_INDEX_SQL = 'CREATE INDEX IF NOT EXISTS idx_sessions_session_key ON sessions(session_key, started_at DESC)';

interface IndexColumn {
  readonly name: string | null;
  readonly desc: number;
  readonly key: number;
}

/**
 * Makes `idx_sessions_session_key` the reference's `(session_key, started_at DESC)` index. A database created
 * by an earlier version of this package carries the same name on `(session_key)` alone; since both sides
 * create it `IF NOT EXISTS`, the reference would never replace it, so it is dropped and created again here.
 * An index that already has the reference's key columns is left alone.
 */
export function ensureSessionKeyIndex(db: Db): void {
  const row = db
    .prepare("SELECT tbl_name FROM sqlite_master WHERE type = 'index' AND name = 'idx_sessions_session_key'")
    .get() as { tbl_name: string } | undefined;
  if (row !== undefined) {
    const keys = (db.prepare('PRAGMA index_xinfo(idx_sessions_session_key)').all() as IndexColumn[]).filter((c) => c.key === 1);
    const matches =
      row.tbl_name === 'sessions' &&
      keys.length === 2 &&
      keys[0]?.name === 'session_key' &&
      keys[0].desc === 0 &&
      keys[1]?.name === 'started_at' &&
      keys[1].desc === 1;
    if (matches) return;
    db.exec('DROP INDEX idx_sessions_session_key');
  }
  db.exec(SESSION_KEY_INDEX_SQL);
}

/** The schema version this code writes and understands. */
export const SCHEMA_VERSION: number = MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);

function hasTable(db: Db, name: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
}

/** The version recorded in the database, 0 when this package never migrated it. */
export function readSchemaVersion(db: Db): number {
  if (!hasTable(db, SCHEMA_TABLE)) return 0;
  const row = db.prepare(`SELECT version FROM ${SCHEMA_TABLE} WHERE component = ?`).get(SCHEMA_COMPONENT) as
    | { version: number }
    | undefined;
  return row?.version ?? 0;
}

export function newerSchemaError(found: number, path: string): SessionDbError {
  return new SessionDbError({
    code: 'ESCHEMA_NEWER',
    path,
    message:
      `${path} has session-db schema version ${found}, newer than the ${SCHEMA_VERSION} this version of ` +
      `@hermes/session-db knows; upgrade @hermes/session-db (the database was left unchanged)`,
  });
}

/**
 * Brings the database to {@link SCHEMA_VERSION}. Each step runs in a BEGIN IMMEDIATE transaction that re-reads
 * the version first, so two processes opening the same file at once migrate it once. A database newer than
 * this code is refused before anything is written.
 */
export function migrate(db: Db, path: string): number {
  const start = readSchemaVersion(db);
  if (start > SCHEMA_VERSION) throw newerSchemaError(start, path);
  if (start === SCHEMA_VERSION) return start; // the common case takes no write lock
  for (const step of MIGRATIONS) {
    db.transaction(() => {
      db.exec(
        `CREATE TABLE IF NOT EXISTS ${SCHEMA_TABLE} (component TEXT PRIMARY KEY, version INTEGER NOT NULL, updated_at REAL NOT NULL)`,
      );
      const current = readSchemaVersion(db);
      if (current > SCHEMA_VERSION) throw newerSchemaError(current, path);
      if (current >= step.version) return;
      step.up(db);
      db.prepare(
        `INSERT INTO ${SCHEMA_TABLE} (component, version, updated_at) VALUES (?, ?, ?)
         ON CONFLICT(component) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at`,
      ).run(SCHEMA_COMPONENT, step.version, Date.now() / 1000);
    }).immediate();
  }
  return readSchemaVersion(db);
}
