/** Structured fields attached to a log line. `path`, `code`, `step`, `uid` and `hint` are the common ones. */
export type LogFields = Readonly<Record<string, unknown>>;

/** What an embedder wires in to receive this package's log lines. */
export interface FsPolicyLogger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  /** Something a user must see: a rejected setting, a permission left as it was. */
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

function formatValue(v: unknown): string {
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  try {
    const text: unknown = JSON.stringify(v);
    return typeof text === 'string' ? text : 'undefined';
  } catch {
    return '[unserialisable]';
  }
}

function formatFields(fields: LogFields | undefined): string {
  if (fields === undefined) return '';
  const parts: string[] = [];
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue;
    parts.push(`${k}=${formatValue(v)}`);
  }
  return parts.length > 0 ? ` ${parts.join(' ')}` : '';
}

/** Default: silent for debug/info; warnings and errors go to stderr, because a user must see them. */
export const stderrLogger: FsPolicyLogger = {
  debug() {
    /* silent by default */
  },
  info() {
    /* silent by default */
  },
  warn(message, fields) {
    process.stderr.write(`hermes fs-policy warning: ${message}${formatFields(fields)}\n`);
  },
  error(message, fields) {
    process.stderr.write(`hermes fs-policy error: ${message}${formatFields(fields)}\n`);
  },
};

/** A logger that drops everything (for embedders that report through results only). */
export const silentLogger: FsPolicyLogger = {
  debug() {
    /* dropped */
  },
  info() {
    /* dropped */
  },
  warn() {
    /* dropped */
  },
  error() {
    /* dropped */
  },
};

let current: FsPolicyLogger = stderrLogger;

/** Routes this package's log lines to `logger` (pass undefined to restore the stderr default). */
export function setLogger(logger: FsPolicyLogger | undefined): void {
  current = logger ?? stderrLogger;
}

/** The logger in force. */
export function getLogger(): FsPolicyLogger {
  return current;
}
