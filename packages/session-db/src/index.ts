export {
  DEFAULT_BUSY_TIMEOUT_MS,
  RECOVERABLE_END_REASONS,
  RESET_END_REASONS,
  STATE_DB_FILE,
  SessionDb,
  openSessionDb,
  type AppendMessageInput,
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
} from './db.js';
export { SessionDbError, isRowRejection, type SessionDbCode, type SessionDbErrorInit } from './errors.js';
export {
  MESSAGE_COLUMNS,
  MIGRATIONS,
  RECEIPT_COLUMNS,
  SCHEMA_COMPONENT,
  SCHEMA_TABLE,
  SCHEMA_VERSION,
  SESSION_COLUMNS,
  type ColumnSpec,
  type Migration,
} from './schema.js';
export { CONTENT_JSON_PREFIX, EPOCH_MAX, EPOCH_MIN, coerceEpoch, decodeContent } from './values.js';
