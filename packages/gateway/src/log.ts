import { type FsPolicyLogger, getLogger, type LogFields, setLogger, stderrLogger } from '@hermes/fs-policy';

/**
 * Where the gateway's log lines go. The gateway has no logger of its own: it logs through @hermes/fs-policy's
 * pluggable logger, so one `setLogger(…)` (from @hermes/fs-policy) reaches the policy and the gateway alike.
 */
export type GatewayLogger = FsPolicyLogger;
export type { LogFields };

/**
 * A thin alias kept for existing callers: it is @hermes/fs-policy's `stderrLogger` (warnings and errors to
 * stderr, debug and info dropped). New code uses `stderrLogger` from @hermes/fs-policy.
 */
export const stderrGatewayLogger: GatewayLogger = stderrLogger;

/**
 * A thin alias of @hermes/fs-policy's `setLogger`, kept for existing callers: it routes the log lines of the
 * policy AND the gateway (there is one logger). Undefined restores the stderr default. New code calls
 * `setLogger` from @hermes/fs-policy.
 */
export function setGatewayLogger(logger: GatewayLogger | undefined): void {
  setLogger(logger);
}

/** The logger a call uses: its own (`options.logger`), else the one in force in @hermes/fs-policy, read now. */
export function loggerFor(own: GatewayLogger | undefined): GatewayLogger {
  return own ?? getLogger();
}

/**
 * `1998` → `1,998`: counts in log lines are read by people. Integers are grouped here, not with
 * `toLocaleString` (its first call loads the ICU locale data: ~7 MiB of memory for a comma).
 */
export function count(n: number): string {
  if (!Number.isSafeInteger(n)) return n.toLocaleString('en-US');
  return String(n).replace(/\B(?=(\d{3})+$)/g, ',');
}
