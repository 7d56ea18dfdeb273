/** The sizes a recovery pass works with, and its empty report. */
import { RECEIPT_LOOKUP_FILES } from './recover-receipts.js';
import type { RecoveryReport } from './recover-types.js';

/**
 * Files committed per store transaction unless {@link RecoverOptions.batchSize} says otherwise (1,024): two
 * receipt lookups' worth, so that a commit ends a lookup's chunk instead of cutting one
 * (the rest of a cut chunk is asked again). Twice as many cost the same CPU and kept a 100,000-file pass
 * ~20 MiB larger: a batch's entries live until its commit, long enough for V8 to promote them.
 */
export const DEFAULT_RECOVERY_BATCH_SIZE = 2 * RECEIPT_LOOKUP_FILES;
/** A batch is also committed once the payload text it holds reaches this many UTF-16 code units (~8 MiB). */
export const BATCH_TEXT_LIMIT = 8 * 1024 * 1024;
/**
 * When the texts of all the files the first pass read fit in this many bytes, they are kept (outside the JS
 * heap) and every file is read once; a larger spool is read again, file by file, as its batches come.
 */
export const READ_AHEAD_BYTES = 8 * 1024 * 1024;

/** Session ids a pass keeps one string of (see Pass.#sessionIdOf). */
export const INTERNED_SESSIONS = 1024;

/** A report with nothing in it yet. */
export function emptyReport(dir: string): RecoveryReport {
  return { dir, scanned: 0, counts: { inserted: 0, rows: 0, alreadyCommitted: 0, duplicates: 0 }, inserted: [], alreadyCommitted: [], duplicates: [], kept: [], bad: [], snapshots: [], foreignOwner: [], errors: [], salvage: null, batches: [] };
}

/** Returns one shared string per distinct value, remembering at most `limit` of them (later ones pass through). */
export class Interner {
  readonly #known = new Map<string, string>();
  readonly #limit: number;

  constructor(limit: number) {
    this.#limit = limit;
  }

  intern(value: string): string {
    const known = this.#known.get(value);
    if (known !== undefined) return known;
    if (this.#known.size < this.#limit) this.#known.set(value, value);
    return value;
  }
}
