import type { FsPolicyLogger, LogFields } from '@hermes/fs-policy';

/** Where the gateway's log lines go: the same shape as @hermes/fs-policy's logger, so one sink serves both. */
export type GatewayLogger = FsPolicyLogger;
export type { LogFields };

function fieldText(v: unknown): string {
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'number':
    case 'boolean':
    case 'bigint':
      return v.toString();
    case 'object':
      try {
        return JSON.stringify(v);
      } catch {
        return '[unserialisable]';
      }
    default:
      return typeof v;
  }
}

function formatFields(fields: LogFields | undefined): string {
  if (fields === undefined) return '';
  const parts: string[] = [];
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue;
    parts.push(`${k}=${fieldText(v)}`);
  }
  return parts.length > 0 ? ` ${parts.join(' ')}` : '';
}

/** Default: warnings and errors to stderr (a lost message must be seen); debug and info are dropped. */
export const stderrGatewayLogger: GatewayLogger = {
  debug() {
    /* silent by default */
  },
  info() {
    /* silent by default */
  },
  warn(message, fields) {
    process.stderr.write(`hermes gateway warning: ${message}${formatFields(fields)}\n`);
  },
  error(message, fields) {
    process.stderr.write(`hermes gateway error: ${message}${formatFields(fields)}\n`);
  },
};

let current: GatewayLogger = stderrGatewayLogger;

/** Sets the logger used when a call passes none (undefined restores the stderr default). */
export function setGatewayLogger(logger: GatewayLogger | undefined): void {
  current = logger ?? stderrGatewayLogger;
}

/** The logger a call uses: its own, else the one set with {@link setGatewayLogger}. */
export function loggerFor(own: GatewayLogger | undefined): GatewayLogger {
  return own ?? current;
}
