/** Every checked protocol, in the order of the report. */
import type { Scenario } from '../scenario.js';
import { batchScenarios } from './batch.js';
import { fsPolicyScenarios } from './fs-policy.js';
import { gatewayFlushScenarios } from './gateway.js';
import { recoveryScenario } from './recovery.js';
import { repairScenarios } from './repair.js';

export function allScenarios(): Scenario[] {
  return [...fsPolicyScenarios(), ...gatewayFlushScenarios(), recoveryScenario(), ...batchScenarios(), ...repairScenarios()];
}
