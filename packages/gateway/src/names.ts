/** Spool file names: ordering and ids. */

/** Code-unit order of two names (the tie-break of the recovery order). */
export function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

const PENDING_PREFIX = 'pending-';
const JSON_SUFFIX = '.json';
const BAD_SUFFIX = '.bad';

/**
 * The id of a spool file name: the name without the `pending-` prefix and the `.json` suffix, and for a
 * quarantined file without the `.bad` suffix recovery added (`<name>.bad`, or `<name>.<stamp>.bad` when that
 * existed). `pending-<32 hex>.json` → `<32 hex>`; a `.bad` file has the id of the payload it was.
 */
export function spoolFileId(name: string): string {
  let base = name;
  if (base.endsWith(BAD_SUFFIX)) {
    base = base.slice(0, -BAD_SUFFIX.length);
    const json = base.lastIndexOf(JSON_SUFFIX);
    if (json > 0) base = base.slice(0, json + JSON_SUFFIX.length);
  }
  if (base.endsWith(JSON_SUFFIX) && base.length > JSON_SUFFIX.length) base = base.slice(0, -JSON_SUFFIX.length);
  if (base.startsWith(PENDING_PREFIX) && base.length > PENDING_PREFIX.length) base = base.slice(PENDING_PREFIX.length);
  return base;
}
