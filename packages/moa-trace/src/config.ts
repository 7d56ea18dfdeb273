import type { HermesConfig } from '@hermes/config';
import type { MoaTraceSettings } from './tracer.js';

/**
 * The tracer settings of a loaded `@hermes/config` (`moa.save_traces`, `moa.trace_dir`,
 * `moa.privacy_filter`, already validated and coerced there):
 * `createMoaTracer({ home, ...moaTraceSettingsFromConfig(config) })`.
 */
export function moaTraceSettingsFromConfig(config: Pick<HermesConfig, 'moa'>): MoaTraceSettings {
  const { saveTraces, traceDir, privacyFilter } = config.moa;
  return { saveTraces, traceDir, privacyFilter };
}
