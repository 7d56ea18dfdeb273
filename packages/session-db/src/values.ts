import { SessionDbError } from './errors.js';

/**
 * Structured (list or object) message content is stored as JSON text behind this prefix, as the reference
 * does, so a plain string that happens to look like JSON is never mistaken for structure. The reference's
 * readers accept this (`"\x00json:"`) prefix and the later `"\x01json:"` one; this package writes the former
 * and reads both.
 */
export const CONTENT_JSON_PREFIX = '\u0000json:';
/** Every prefix a reader treats as "JSON follows" (the reference's SQLite and later PostgreSQL spellings). */
export const CONTENT_JSON_PREFIXES: readonly string[] = ['\u0000json:', '\u0001json:'];

/**
 * Timestamps are epoch seconds within this window (2000-01-01 … 2100-01-01). Milliseconds passed by mistake
 * fall outside it (1.7e12 > 4.1e9).
 */
export const EPOCH_MIN = 946_684_800;
export const EPOCH_MAX = 4_102_444_800;

export function nowSeconds(): number {
  return Date.now() / 1000;
}

/** True for a finite number of epoch seconds inside {@link EPOCH_MIN} … {@link EPOCH_MAX}. */
export function isEpochSeconds(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= EPOCH_MIN && value <= EPOCH_MAX;
}

/**
 * Why `value` is not epoch seconds, in words an operator understands ("1700000000000 looks like epoch
 * milliseconds; pass seconds (1700000000)"), or undefined when it is.
 */
export function epochProblem(value: unknown): string | undefined {
  if (isEpochSeconds(value)) return undefined;
  if (typeof value !== 'number') return `expected epoch seconds (a number), got ${value === null ? 'null' : typeof value}`;
  if (!Number.isFinite(value)) return `expected epoch seconds, got ${String(value)}`;
  if (isEpochSeconds(value / 1000)) return `${String(value)} looks like epoch milliseconds; pass seconds (${String(value / 1000)})`;
  if (isEpochSeconds(value / 1_000_000)) return `${String(value)} looks like epoch microseconds; pass seconds (${String(value / 1_000_000)})`;
  return `${String(value)} is not epoch seconds between 2000-01-01 and 2100-01-01`;
}

/**
 * The timestamp to store for a value that comes from a file (recovery): `value` when it is a plausible epoch
 * in seconds, else now — the reference's `coerce_epoch`. Values a caller passes explicitly go through
 * {@link requiredEpoch} instead, which refuses them.
 */
export function coerceEpoch(value: unknown, now: number = nowSeconds()): number {
  return isEpochSeconds(value) ? value : now;
}

/**
 * An explicitly passed timestamp: undefined/null means now; anything else must be epoch seconds, or the call
 * fails with `EINVALID_ROW` (milliseconds are never silently replaced).
 */
export function requiredEpoch(column: string, value: unknown, now: number = nowSeconds()): number {
  if (value === undefined || value === null) return now;
  const problem = epochProblem(value);
  if (problem !== undefined) throw invalid(column, problem);
  return value as number;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Replaces lone UTF-16 surrogates (which have no UTF-8 form) with U+FFFD, as the reference scrubs them. */
export function scrubSurrogates(text: string): string {
  return text.replace(LONE_SURROGATE, '\uFFFD');
}

function invalid(column: string, detail: string): SessionDbError {
  return new SessionDbError({ code: 'EINVALID_ROW', message: `invalid value for ${column}: ${detail}` });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function toJsonText(column: string, value: unknown): string {
  // JSON.stringify is typed as returning string, but answers undefined for undefined, functions and symbols.
  let text: unknown;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw invalid(column, err instanceof Error ? err.message : String(err));
  }
  if (typeof text !== 'string') throw invalid(column, 'not representable as JSON');
  return scrubSurrogates(text);
}

const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * `content`, so that {@link decodeContent} gives back exactly what was stored, for every value:
 * - a string is stored as it is — unless a reader would take it for structure (it starts with one of
 *   {@link CONTENT_JSON_PREFIXES}) or SQLite cannot hold it as UTF-8 (it has an unpaired surrogate); such a
 *   string is stored as a JSON string literal behind the prefix (`"\x00json:" + JSON.stringify(text)`), the
 *   reference's own escape for its PostgreSQL store, which its readers decode back to the same string;
 * - a list or an object is stored as JSON behind the prefix;
 * - null/undefined is NULL.
 */
export function encodeContent(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') {
    if (CONTENT_JSON_PREFIXES.some((p) => value.startsWith(p)) || UNPAIRED_SURROGATE.test(value)) {
      // JSON.stringify escapes unpaired surrogates as \uXXXX, so the stored text is valid UTF-8.
      return CONTENT_JSON_PREFIX + JSON.stringify(value);
    }
    return value;
  }
  if (Array.isArray(value) || isPlainObject(value)) return CONTENT_JSON_PREFIX + toJsonText('content', value);
  throw invalid('content', `expected a string, a list, an object or null, got ${typeof value}`);
}

/**
 * The inverse of {@link encodeContent}: structured content comes back as the list/object it was, an escaped
 * string as the string it was. A prefixed text that is not JSON (a legacy row written raw) comes back as the
 * text it is.
 */
export function decodeContent(stored: unknown): unknown {
  if (typeof stored !== 'string') return stored ?? null;
  for (const prefix of CONTENT_JSON_PREFIXES) {
    if (stored.startsWith(prefix)) {
      try {
        return JSON.parse(stored.slice(prefix.length)) as unknown;
      } catch {
        return stored;
      }
    }
  }
  return stored;
}

/** An optional text column: string or null/undefined. */
export function optionalText(column: string, value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw invalid(column, `expected a string or null, got ${typeof value}`);
  return scrubSurrogates(value);
}

/** A required, non-empty text column. */
export function requiredText(column: string, value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw invalid(column, `expected a non-empty string, got ${value === '' ? 'an empty string' : typeof value}`);
  }
  return scrubSurrogates(value);
}

/** An optional integer column. */
export function optionalInteger(column: string, value: unknown): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw invalid(column, 'expected an integer or null');
  return value;
}

/** `tool_calls`: a list (stored as JSON) or a JSON string of one; returns the text and the number of calls. */
export function encodeToolCalls(value: unknown): { text: string | null; count: number } {
  if (value === undefined || value === null) return { text: null, count: 0 };
  if (Array.isArray(value)) return { text: toJsonText('tool_calls', value), count: value.length };
  if (typeof value === 'string') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch {
      throw invalid('tool_calls', 'a string must hold a JSON list');
    }
    if (!Array.isArray(parsed)) throw invalid('tool_calls', 'a string must hold a JSON list');
    return { text: value, count: parsed.length };
  }
  throw invalid('tool_calls', `expected a list, a JSON string or null, got ${typeof value}`);
}

/** An optional JSON object column (`display_metadata`, `model_config`): object → JSON text; string kept. */
export function optionalJsonObject(column: string, value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  if (isPlainObject(value)) return toJsonText(column, value);
  throw invalid(column, `expected an object, a JSON string or null, got ${typeof value}`);
}

/** Parses a JSON text column for export; text that is not JSON is returned as it is. */
export function parseJsonColumn(stored: unknown): unknown {
  if (typeof stored !== 'string') return stored ?? null;
  try {
    return JSON.parse(stored) as unknown;
  } catch {
    return stored;
  }
}
