/**
 * What recovery needs from a session store. `@hermes/session-db`'s `SessionDb` implements it; any other store
 * can, as long as it keeps the exactly-once contract of {@link SessionStore.commitRecovered}.
 */

/**
 * One message to insert. Every field but the session id comes verbatim from a JSON payload, so it is typed
 * `unknown`: the store validates it, and a value it cannot store rejects the file (renamed `.bad`).
 */
export interface RecoveredRow {
  readonly sessionId: string;
  readonly role: unknown;
  readonly content?: unknown;
  /** Epoch seconds; the store substitutes "now" for a missing or implausible value. */
  readonly timestamp?: unknown;
  readonly toolCallId?: unknown;
  readonly toolCalls?: unknown;
  readonly toolName?: unknown;
  readonly tokenCount?: unknown;
  readonly finishReason?: unknown;
  readonly platformMessageId?: unknown;
}

/** One spool file to commit: a receipt id that identifies the payload (its writer and seq, or its bytes), its name and its rows. */
export interface RecoveryBatchEntry {
  readonly receiptId: string;
  readonly fileName: string;
  readonly rows: readonly RecoveredRow[];
  /**
   * The parsed payload the rows come from (a batch member's own payload), given to a store that says it
   * {@link SessionStore.wantsPayloads}, for a store that records more of it
   * than the rows — a service's idempotency key, say — in the same transaction. Read from the file this pass
   * commits, so it always matches the rows: never look such data up in a listing taken before the pass.
   */
  readonly payload?: unknown;
}

/** The store's verdict on one entry. */
export type RecoveryCommitOutcome =
  /** Rows and receipt committed together. */
  | { readonly receiptId: string; readonly status: 'inserted'; readonly rowIds: readonly number[] }
  /** The receipt already existed: the file was recovered before; nothing inserted. */
  | { readonly receiptId: string; readonly status: 'duplicate' }
  /** A row names a session the store does not have; nothing inserted (the file is kept). */
  | { readonly receiptId: string; readonly status: 'unknown-session'; readonly sessionId: string }
  /** A row cannot be stored; nothing of this entry inserted (the file is renamed `.bad`). */
  | { readonly receiptId: string; readonly status: 'rejected'; readonly error: string };

export interface SessionStore {
  /** True when a receipt with this id is committed. */
  hasReceipt(receiptId: string): boolean;
  /**
   * Optional, a faster {@link hasReceipt} for many ids: the ids of `receiptIds` whose receipts are committed, in
   * one call (recovery asks it once per chunk of files instead of once per file). It must answer exactly as
   * `hasReceipt` would for each id at the time of the call, and return a `Set`. Throws only when the store fails.
   */
  committedReceipts?(receiptIds: readonly string[]): ReadonlySet<string>;
  /**
   * Commits entries, each entry's rows AND its receipt atomically (all or nothing per entry), and returns one
   * outcome per entry in order. Throws only when the store itself fails (nothing of the batch is then
   * committed); the files are kept for the next pass.
   */
  commitRecovered(entries: readonly RecoveryBatchEntry[]): readonly RecoveryCommitOutcome[];
  /**
   * Optional default resolver: the session a gateway session key's messages belong to, not started after
   * `notAfter` (epoch seconds), or null.
   */
  resolveSessionIdForKey?(sessionKey: string, notAfter?: number): string | null;
  /**
   * Optional, and what recovery relies on before it removes a committed file: makes every committed
   * transaction durable in the store's main storage (SQLite: a WAL checkpoint into the database file), and
   * says whether that completed. It must not wait on other connections (recovery calls it after every batch
   * and retries it, bounded, at the end of the pass). A store without it must make `commitRecovered` itself
   * durable in its main storage before returning. Throws only when the store itself fails. `walFrames` and
   * `checkpointed`, when given, say how much of the log is in the main storage (named in the kept files' detail).
   */
  checkpoint?(): { readonly complete: boolean; readonly busy?: boolean; readonly walFrames?: number; readonly checkpointed?: number };
  /** Optional: the store's file, named in error lines (`SQLITE_READONLY at /home/…/state.db`). */
  readonly path?: string;
  /**
   * Optional: true when {@link commitRecovered} reads more of a file than its rows — each entry then carries its
   * parsed payload ({@link RecoveryBatchEntry.payload}). Left out, entries carry none, and a pass holds no parsed
   * payload per queued file (about 4 MiB less at the peak of a 100,000-file recovery).
   */
  readonly wantsPayloads?: boolean;
}
