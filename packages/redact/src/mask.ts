/**
 * Shared masking helpers. Every secret pass funnels its replacement through here so that the
 * output shapes stay few and recognisable, which is what makes a second pass a no-op.
 */

/** The full mask, used for short secrets and for values that never keep a head or tail. */
export const FULL_MASK = '***';

/** Secrets at least this long keep a short head and tail; shorter ones are masked in full. */
const PARTIAL_MASK_MIN_LENGTH = 18;

const HEAD = 6;
const TAIL = 4;
const ELLIPSIS = '...';
// eslint-disable-next-line no-control-regex -- the class is "anything outside ASCII"
const NON_ASCII = /[^\x00-\x7f]/;

/**
 * Masks one secret value: `head6...tail4` when it is long enough to keep them without giving
 * much away, `***` otherwise. A value with non-ASCII characters (only quoted assignment values can
 * carry them) is masked in full, so slicing never splits a surrogate pair.
 */
export function maskToken(token: string): string {
  if (token.length < PARTIAL_MASK_MIN_LENGTH || NON_ASCII.test(token)) {
    return FULL_MASK;
  }
  return `${token.slice(0, HEAD)}${ELLIPSIS}${token.slice(-TAIL)}`;
}

/**
 * True when `value` carries something this package produced: the full mask `***` or the `...` of a
 * partial mask. Passes whose value class could re-read their own output, or another pass's (header
 * credentials, URL userinfo, assignments), skip such values. Because the test is "contains", not
 * "equals", a value that another pass has masked a part of is also skipped, so no pass judges a
 * value differently on a second run. Real credentials practically never contain either marker; a
 * value that does (`DB_PASSWORD=hunter2...`) is left as it is.
 */
export function isMaskedValue(value: string): boolean {
  return value.includes(FULL_MASK) || value.includes(ELLIPSIS);
}

const SHELL_CONSTANT_REFERENCE = /^\$[A-Z_][A-Z0-9_]*$/;

/**
 * True when `value` names a secret instead of containing one: a shell or template reference
 * (`$GITHUB_TOKEN`, `${TOKEN}`, `$(cat token)`, `{password}`, `{{ secret }}`, `<token>`). These are
 * ubiquitous in code review text and scripts, and masking them corrupts the text for no gain.
 * A bare `$name` counts only in the all-caps environment-variable convention, so a password that
 * merely starts with `$` is still masked. Only the start of the value is looked at, so masking
 * something inside a reference never turns it into a non-reference on the next run.
 */
export function isReference(value: string): boolean {
  if (value.startsWith('${') || value.startsWith('$(')) {
    return true;
  }
  if (SHELL_CONSTANT_REFERENCE.test(value)) {
    return true;
  }
  return value.startsWith('{') || value.startsWith('<');
}
