/**
 * The service's one logger: JSON lines on stderr, installed as @hermes/fs-policy's logger, which
 * @hermes/gateway, @hermes/moa-trace and @hermes/trajectory log through as well.
 */
import { setLogger, type FsPolicyLogger, type LogFields } from '@hermes/fs-policy';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const RANK: Readonly<Record<LogLevel, number>> = { debug: 10, info: 20, warn: 30, error: 40 };

function plain(value: unknown): unknown {
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return { name: value.name, message: value.message, ...(code === undefined ? {} : { code }) };
  }
  return value;
}

/** One JSON object per line: `{ ts, level, msg, service, pid, …fields }`; a field JSON cannot hold is its text. */
export function formatLine(level: LogLevel, msg: string, fields: LogFields | undefined): string {
  const record: Record<string, unknown> = { ts: new Date().toISOString(), level, msg, service: 'hermes-gateway', pid: process.pid };
  for (const [k, v] of Object.entries(fields ?? {})) if (v !== undefined && !(k in record)) record[k] = plain(v);
  try {
    return JSON.stringify(record);
  } catch {
    return JSON.stringify({ ts: record.ts, level, msg, service: 'hermes-gateway', pid: process.pid, fields: '[unserialisable]' });
  }
}

/** A logger writing JSON lines at `level` and above to `write` (default: stderr, synchronously). */
export function jsonLogger(level: LogLevel = 'info', write: (line: string) => void = (l) => process.stderr.write(l)): FsPolicyLogger {
  const at = (l: LogLevel) => (msg: string, fields?: LogFields): void => {
    if (RANK[l] >= RANK[level]) write(`${formatLine(l, msg, fields)}\n`);
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** Installs {@link jsonLogger} process-wide (fs-policy's `setLogger`) and returns it. */
export function installJsonLogger(level: LogLevel = 'info'): FsPolicyLogger {
  const logger = jsonLogger(level);
  setLogger(logger);
  return logger;
}

/** A log level from text, or undefined when it is not one. */
export function parseLogLevel(text: string | undefined): LogLevel | undefined {
  return text === 'debug' || text === 'info' || text === 'warn' || text === 'error' ? text : undefined;
}
