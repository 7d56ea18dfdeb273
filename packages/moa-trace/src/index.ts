/**
 * @hermes/moa-trace — Mixture-of-Agents turn traces: one owner-only JSONL line per turn in
 * `<trace dir>/<sanitized session id>.jsonl`, off by default, with the `moa.privacy_filter` redaction.
 * File and directory modes are decided by @hermes/fs-policy (kind `moa-traces`); this package never
 * chooses a mode.
 */
export {
  createMoaTracer,
  type MoaRecordResult,
  type MoaTraceSettings,
  type MoaTracer,
  type MoaTracerOptions,
  type MoaTracerStats,
} from './tracer.js';
export {
  PRIVACY_FILTER_MODES,
  buildTraceRecord,
  filterMessages,
  filterText,
  liveAggregatorInput,
  outputLocation,
  uiEventFor,
  type MoaAggregatorSlot,
  type MoaMessage,
  type MoaReferenceSlot,
  type MoaTraceRecord,
  type MoaTurn,
  type MoaUiEvent,
  type MoaUsage,
  type OutputLocation,
  type PrivacyFilterMode,
  type TraceUsage,
} from './record.js';
export { MAX_STEM_LENGTH, UNKNOWN_SESSION, sanitizeSessionId, traceFileName } from './session.js';
export { DEFAULT_TRACE_DIR, expandVars, resolveTraceDir } from './dir.js';
export { MoaTraceConfigError, type MoaTraceConfigCode } from './errors.js';
export { moaTraceSettingsFromConfig, type MoaConfigSource } from './config.js';
