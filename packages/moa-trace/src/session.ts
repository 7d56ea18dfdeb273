import { createHash } from 'node:crypto';

/** The file name stem for a missing or empty session id. */
export const UNKNOWN_SESSION = 'unknown-session';
/** The longest stem a session id turns into (the file is `<stem>.jsonl`). */
export const MAX_STEM_LENGTH = 200;
const HASH_LENGTH = 12;
const SAFE = /^[A-Za-z0-9._-]$/u;

/** First 12 hex digits of SHA-256 over the id's UTF-8 bytes: stable across runs, processes and languages. */
function idHash(id: string): string {
  return createHash('sha256').update(id, 'utf8').digest('hex').slice(0, HASH_LENGTH);
}

/**
 * The file name stem of a session's trace file. The result only holds `[A-Za-z0-9._-]`, never starts with
 * `.` and is at most {@link MAX_STEM_LENGTH} characters, so no id can leave the trace directory, name a
 * hidden file, or exceed a file-name limit:
 *
 * - `null`, `undefined` or `''` → `unknown-session`;
 * - an id made only of `[A-Za-z0-9._-]`, not starting with `.`, and at most 200 characters → itself;
 * - otherwise every character (code point) outside that set becomes `_`, leading dots become `_`, and
 *   `-<12 hex of sha256(id)>` is appended (after cutting the cleaned id to 187 characters), so ids that
 *   clean to the same text (`a/b`, `a:b`) still get different, stable files.
 */
export function sanitizeSessionId(id: string | null | undefined): string {
  if (id === null || id === undefined || id === '') return UNKNOWN_SESSION;
  let clean = '';
  for (const ch of id) clean += SAFE.test(ch) ? ch : '_';
  clean = clean.replace(/^\.+/u, (dots) => '_'.repeat(dots.length));
  if (clean === id && clean.length <= MAX_STEM_LENGTH) return clean;
  return `${clean.slice(0, MAX_STEM_LENGTH - HASH_LENGTH - 1)}-${idHash(id)}`;
}

/** `<sanitized session id>.jsonl`. */
export function traceFileName(id: string | null | undefined): string {
  return `${sanitizeSessionId(id)}.jsonl`;
}
