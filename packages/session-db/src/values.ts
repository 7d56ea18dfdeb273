import { SessionDbError } from './errors.js';

/**
 * Structured (list or object) message content is stored as JSON text behind this prefix, as the reference
 * does, so a plain string that happens to look like JSON is never mistaken for structure. The reference's
 * readers accept this (`"\x00json:"`) prefix and the later `"\x01json:"` one; this package writes the former
 * and reads both.
 */
export const CONTENT_JSON_PREFIX = '\u0000json:';
const CONTENT_JSON_PREFIXES = ['\u0000json:', '\u0001json:'] as const;

/**
 * Timestamps outside this window (2000-01-01 … 2100-01-01, epoch seconds), non-numbers and non-finite values
 * are replaced by "now", as the reference's `coerce_epoch` does. Milliseconds passed by mistake fall outside
 * the window too.
 */
export const EPOCH_MIN = 946_684_800;
export const EPOCH_MAX = 4_102_444_800;

export function nowSeconds(): number {
  return Date.now() / 1000;
}

/** The timestamp to store: `value` when it is a plausible epoch in seconds, else now. */
export function coerceEpoch(value: unknown, now: number = nowSeconds()): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) return now;
  if (value < EPOCH_MIN || value > EPOCH_MAX) return now;
  return value;
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

/** `content`: a string (stored as is, surrogates scrubbed), null, or a list/object (JSON behind the prefix). */
export function encodeContent(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return scrubSurrogates(value);
  if (Array.isArray(value) || isPlainObject(value)) return CONTENT_JSON_PREFIX + toJsonText('content', value);
  throw invalid('content', `expected a string, a list, an object or null, got ${typeof value}`);
}

/** The inverse of {@link encodeContent}: structured content comes back as the list/object it was. */
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
