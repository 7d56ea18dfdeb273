/**
 * @hermes/config — typed loading and validation of the config.yaml keys the Hermes persistence
 * packages use. Unknown keys are kept untouched in `raw`; invalid values fail with `ConfigError`;
 * coercions are reported as warnings.
 */
export { DEFAULT_LINK_PREFIXES, loadConfig, loadConfigSync, type LoadConfigOptions } from './load.js';
export { parseConfig, toYaml, type ConfigSource, type LoadedConfig } from './parse.js';
export {
  defaultConfig,
  type AgentConfig,
  type GatewayConfig,
  type HermesConfig,
  type MoaConfig,
  type PendingSpoolConfig,
} from './schema.js';
export { coercePrivacyFilter, type PrivacyFilter, type PrivacyFilterCoercion } from './coerce.js';
export { ConfigError, type ConfigIssue, type ConfigIssueKind } from './errors.js';
