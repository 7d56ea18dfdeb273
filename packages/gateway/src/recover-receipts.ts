/** The receipt lookups of a recovery pass: one store call per chunk of files, not one per file. */
import type { SessionStore } from './store.js';

/** Files a pass reads, parses and asks the store about together (their receipts in one call). */
export const RECEIPT_LOOKUP_FILES = 512;
/** A chunk is also closed once the text of its files reaches this many UTF-16 code units (~4 MiB). */
export const RECEIPT_LOOKUP_TEXT = 4 * 1024 * 1024;

/** What one lookup found: the committed ids among those asked, or the store's failure. */
export type ReceiptAnswer = { readonly committed: ReadonlySet<string> } | { readonly failure: unknown };

/** True when the store answers many ids in one call ({@link SessionStore.committedReceipts}). */
export function asksInBulk(store: SessionStore): boolean {
  return typeof store.committedReceipts === 'function';
}

/**
 * Which of `ids` have a committed receipt in `store`: one `committedReceipts` call when the store has it,
 * else `hasReceipt` id by id. Never throws: a failure of the store (or an answer that is not a `Set`) is
 * returned as `failure`.
 */
export function lookUpReceipts(store: SessionStore, ids: readonly string[]): ReceiptAnswer {
  try {
    if (ids.length === 0) return { committed: new Set() };
    if (store.committedReceipts !== undefined && asksInBulk(store)) {
      const committed = store.committedReceipts(ids);
      if (!(committed instanceof Set)) {
        throw new TypeError(`the store's committedReceipts() returned ${typeof committed}, not a Set`);
      }
      return { committed };
    }
    const committed = new Set<string>();
    for (const id of ids) if (store.hasReceipt(id)) committed.add(id);
    return { committed };
  } catch (failure) {
    return { failure };
  }
}
