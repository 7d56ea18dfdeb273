export {
  DEFAULT_CONCURRENCY,
  type DrainReason,
  type FlushWarning,
  flushAgentHistory,
  flushAgentHistorySync,
  flushOverflow,
  flushOverflowSync,
  flushPending,
  flushPendingSync,
  spoolDroppedTranscriptMessage,
  spoolDroppedTranscriptMessageSync,
  type FailedEntry,
  type FlushOptions,
  type FlushReport,
  type OverflowInput,
  type PendingInput,
  type SkippedEntry,
  type WrittenEntry,
} from './flush.js';
export { jsonProblem, JsonTooDeepError, MAX_JSON_DEPTH, parseJsonTolerant } from './json.js';
export { setGatewayLogger, stderrGatewayLogger, type GatewayLogger, type LogFields } from './log.js';
export { GatewayInputError } from './errors.js';
export {
  acquireGatewayLock,
  describeHolder,
  GATEWAY_LOCK_NAME,
  GatewayLockError,
  gatewayLockHolder,
  parseHolderName,
  type AcquireGatewayLockOptions,
  type GatewayLock,
  type GatewayLockHolder,
} from './lock.js';
export {
  DEFAULT_SALVAGE_MIN_AGE_MS,
  salvageTemps,
  tempTarget,
  type SalvageLeftReason,
  type SalvageOptions,
  type SalvageReport,
} from './salvage.js';
export { agentHistoryMessages, type AgentHistoryMessage } from './snapshot.js';
export {
  AGENT_HISTORY_ISSUE,
  AGENT_HISTORY_REASON,
  CAP_DROP_REASON,
  EPOCH_MAX,
  EPOCH_MIN,
  PAYLOAD_KINDS,
  PAYLOAD_SCHEMA_VERSION,
  PENDING_FILE_PATTERN,
  classifyPayload,
  epochProblem,
  orderingKey,
  processId,
  type AgentHistoryPayload,
  type CapDropPayload,
  type OverflowPayload,
  type PayloadEnvelope,
  type PayloadKind,
  type PendingData,
  type PendingEvent,
  type PendingSlotPayload,
  type PendingValue,
  type SpoolPayload,
} from './payload.js';
export { compareSpoolEntries, listSpool, readSpoolFile, scanSpool, spoolEntryTime, type SpoolFile } from './list.js';
export {
  SPOOL_ENTRY_KINDS,
  SPOOL_ENTRY_PROBLEMS,
  SPOOL_PREVIEW_LENGTH,
  type ListSpoolOptions,
  type ScanSpoolOptions,
  type SpoolEntry,
  type SpoolEntryContent,
  type SpoolEntryKind,
  type SpoolEntryProblem,
  type SpoolEntryWithContent,
  type SpoolFileType,
} from './list-types.js';
export { spoolFileId } from './names.js';
export {
  DEFAULT_RECOVERY_BATCH_SIZE,
  recoverPending,
  type InsertedEntry,
  type KeptReason,
  type RecoverOptions,
  type RecoveryBatchFile,
  type RecoveryHooks,
  type RecoveryReport,
} from './recover.js';
export {
  DEFAULT_SIGNALS,
  EXIT_FLUSH_INCOMPLETE,
  installShutdownHook,
  signalExitCode,
  type ShutdownHook,
  type ShutdownHookOptions,
  type ShutdownOutcome,
} from './shutdown.js';
export { SPOOL_KIND, spoolLocation, type SpoolLocation, type SpoolLocationOptions } from './spool.js';
export { spoolStats, type SpoolAge, type SpoolStats, type SpoolStatsOptions } from './stats.js';
export {
  prune,
  type PruneCandidate,
  type PruneCategory,
  type PruneKept,
  type PruneKeptReason,
  type PruneOptions,
  type PruneReport,
} from './prune.js';
export type { RecoveredRow, RecoveryBatchEntry, RecoveryCommitOutcome, SessionStore } from './store.js';
export {
  SERVICE_SESSION_SOURCE,
  SERVICE_SPOOL_MARKER,
  serviceSessionStore,
  serviceSpooledInfo,
  type KeyedRecoveryEntry,
  type ServiceSpooledInfo,
  type ServiceStateDb,
} from './service-store.js';
export {
  BATCH_FILE_PATTERN,
  BATCH_KIND,
  BATCH_REASON,
  batchFileName,
  isBatchName,
  looksLikeBatch,
  parseBatch,
  serializeBatch,
  type BatchMember,
  type SpoolBatch,
} from './batch.js';
