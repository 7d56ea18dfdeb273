import type { MoaTraceSettings } from './tracer.js';

/**
 * The part of a loaded Hermes config this package reads: `config.moa` as `@hermes/config`'s `loadConfig`
 * returns it (validated and coerced there). Structural on purpose, so this package does not depend on
 * `@hermes/config` (and its YAML and schema libraries) for one type.
 */
export interface MoaConfigSource {
  readonly moa: MoaTraceSettings;
}

/**
 * The tracer settings of a loaded `@hermes/config` (`moa.save_traces`, `moa.trace_dir`,
 * `moa.privacy_filter`, already validated and coerced there):
 * `createMoaTracer({ home, ...moaTraceSettingsFromConfig(config) })`.
 */
export function moaTraceSettingsFromConfig(config: MoaConfigSource): MoaTraceSettings {
  const { saveTraces, traceDir, privacyFilter } = config.moa;
  return { saveTraces, traceDir, privacyFilter };
}
