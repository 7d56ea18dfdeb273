/** Every checked protocol, in the order of the report (the O_TMPFILE ones only where the native layer is in force). */
import type { Scenario } from '../scenario.js';
import { batchScenarios } from './batch.js';
import { fsPolicyScenarios } from './fs-policy.js';
import { gatewayFlushScenarios } from './gateway.js';
import { recoveryScenario } from './recovery.js';
import { repairScenarios } from './repair.js';
import { tmpfileScenarios } from './tmpfile.js';

export function allScenarios(): Scenario[] {
  return [...fsPolicyScenarios(), ...tmpfileScenarios(), ...gatewayFlushScenarios(), recoveryScenario(), ...batchScenarios(), ...repairScenarios()];
}
