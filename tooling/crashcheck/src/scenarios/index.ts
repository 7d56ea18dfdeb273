/** Every checked protocol, in the order of the report. */
import type { Scenario } from '../scenario.js';
import { doctorScenario } from './doctor.js';
import { fsPolicyScenarios } from './fs-policy.js';
import { gatewayFlushScenarios } from './gateway.js';

export function allScenarios(): Scenario[] {
  return [...fsPolicyScenarios(), ...gatewayFlushScenarios(), doctorScenario()];
}
