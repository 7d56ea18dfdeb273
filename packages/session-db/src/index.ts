export { SessionDb } from './db.js';
export { openSessionDb } from './open.js';
export {
  DEFAULT_BUSY_TIMEOUT_MS,
  DEFAULT_CACHE_SIZE_KIB,
  MAX_BUSY_TIMEOUT_MS,
  RECOVERABLE_END_REASONS,
  RESET_END_REASONS,
  STATE_DB_FILE,
  type AppendManyInput,
  type AppendMessageInput,
  type AppendOutcome,
  type CreateSessionInput,
  type ExportedMessage,
  type ListSessionsOptions,
  type OpenSessionDbOptions,
  type RecoveryEntry,
  type RecoveryOutcome,
  type RecoveryRow,
  type SessionExport,
  type SessionRow,
  type SessionSummary,
} from './types.js';
export { checkSqliteRuntime, assertSqliteAvailable, sqliteUnavailableError, type SqliteRuntime } from './runtime.js';
export { SessionDbError, SQLITE_UNAVAILABLE_FIX, databaseError, integrityCheck, isRowRejection, sqliteHint, type IntegrityVerdict, type SessionDbCode, type SessionDbErrorInit } from './errors.js';
export {
  MESSAGE_COLUMNS,
  MIGRATIONS,
  IDEMPOTENCY_COLUMNS,
  RECEIPT_COLUMNS,
  SCHEMA_COMPONENT,
  SCHEMA_TABLE,
  SCHEMA_VERSION,
  SESSION_COLUMNS,
  SESSION_KEY_INDEX_SQL,
  ensureSessionKeyIndex,
  type ColumnSpec,
  type Migration,
} from './schema.js';
export {
  CONTENT_JSON_PREFIX,
  CONTENT_JSON_PREFIXES,
  EPOCH_MAX,
  EPOCH_MIN,
  coerceEpoch,
  decodeContent,
  encodeContent,
  epochProblem,
  isEpochSeconds,
} from './values.js';
