/** The options and the report of a recovery pass ({@link recoverPending} in recover.ts). */
import type { GatewayLogger } from './log.js';
import type { PayloadKind } from './payload.js';
import type { SalvageOptions, SalvageReport } from './salvage.js';
import type { SessionStore } from './store.js';
import type { SpoolLocationOptions } from './spool.js';

/** Why a spool file was left in place. Kept files are re-examined by every pass; nothing is deleted. */
export type KeptReason =
  /** Not valid UTF-8 or not JSON (NaN/Infinity tokens are accepted). */
  | 'unparseable'
  /** JSON nested deeper than `MAX_JSON_DEPTH`: refused by the parser with ETOO_DEEP, never a stack overflow. */
  | 'too-deep'
  /** Valid JSON, but not an object. */
  | 'not-an-object'
  /** A symlink, directory or device named `*.json`. */
  | 'not-a-regular-file'
  /** Written by a newer version of this package (`schema_version` above the one this code knows). */
  | 'unknown-schema-version'
  /** An object that is none of the four payload shapes. */
  | 'unknown-kind'
  /** A pending/overflow payload without a non-empty `data.text` (e.g. media only). */
  | 'no-text'
  /** A cap-drop payload without `data.session_id` or an object `data.message`. */
  | 'invalid-cap-drop'
  /** No `data.session_id`, and the session key did not resolve (or there is no resolver). */
  | 'unresolved'
  /** The resolver threw; the file waits for the next pass. */
  | 'resolver-error'
  /** The resolved session has no row in the store. */
  | 'unknown-session'
  /** The store failed (locked, full, read-only, …); this and every later file wait for the next pass. */
  | 'store-error'
  /**
   * Committed (its receipt is in the store), but no checkpoint of this pass proved the commit is in the main
   * database file (another process's read snapshot held it off; the pass does not wait for it): kept, so a lost
   * WAL cannot lose it; the next pass removes it without inserting anything.
   */
  | 'checkpoint-pending'
  /** Committed (its receipt is in the store), but removing the file was refused: the next pass removes it. */
  | 'not-removed'
  /** Reading or interpreting the file failed unexpectedly (see `errors`). */
  | 'read-error'
  /**
   * A batch file (`batch-*.json`, or `kind: "batch"`) that is not a valid batch: kept for the operator, none of
   * its members used.
   */
  | 'invalid-batch';

export interface RecoveryHooks {
  /**
   * Test seam, called after a batch's rows and receipts are committed and before the files are removed, with
   * the paths of the committed files. A crash test blocks here and kills the process.
   */
  afterCommit?: (paths: readonly string[]) => void;
  /** Test seam, called after committed files were removed (after the checkpoint that made them durable). */
  afterRemove?: (paths: readonly string[]) => void;
}

export interface RecoverOptions extends SpoolLocationOptions {
  /** Where recovered messages go (e.g. `openSessionDb({ home })`). */
  store: SessionStore;
  /**
   * Maps a payload's `session_key` to the session id that receives it, given the payload's `ts` (a session
   * started after the flush cannot be its origin). Defaults to `store.resolveSessionIdForKey` when the store
   * has it. null/undefined keeps the file.
   */
  resolveSessionId?: (sessionKey: string, notAfter: number | undefined) => string | null | undefined;
  logger?: GatewayLogger;
  /**
   * Files committed per store transaction (default {@link DEFAULT_RECOVERY_BATCH_SIZE}, 1,024). A batch is also
   * committed early once the text of its payloads reaches about 8 MiB, so large payloads stay bounded in memory.
   */
  batchSize?: number;
  /**
   * Progress, for an operator's progress bar: called after each batch (committed, or kept because the store
   * failed) and once more at the end, with the number of files dealt with so far and the number of `*.json`
   * files the pass found (`scanned`; known once the first pass has listed the directory, so before the first
   * call). `done` never decreases; the last call is `(total, total)` — `(0, 0)` for an empty or missing spool.
   * Files the first pass already settles (unreadable, unparseable, not regular files, another uid's) count as
   * done from the first call on. Runs synchronously inside the pass; a callback that throws is logged and
   * otherwise ignored.
   */
  onProgress?: (done: number, total: number) => void;
  hooks?: RecoveryHooks;
  /**
   * How long the end of the pass retries a checkpoint that another connection held off, in milliseconds
   * (default 250; 0: no retry). The retry never waits longer than the pass has taken so far, and no checkpoint
   * of the pass waits on another connection: committed files it could not prove in the main database file are
   * kept (`checkpoint-pending`) for the next pass.
   */
  checkpointRetryMs?: number;
  /**
   * Salvage complete payloads that killed writers left under temp names before the pass
   * ({@link salvageTemps}; default true). An object passes its options (`minAgeMs`, `now`).
   */
  salvage?: boolean | Pick<SalvageOptions, 'minAgeMs' | 'now'>;
  /**
   * How long to wait (ms) for the home's gateway lock when another live process holds it (default 0). The
   * pass holds the lock (re-entrant in the process that holds it); refused, it reads, inserts and removes
   * nothing and reports `ELOCKED` naming the holder.
   */
  lockWaitMs?: number;
  /**
   * List every file that went well in `inserted` and `alreadyCommitted` (default true). False: those two lists
   * stay empty — their sizes are in `counts` — so a pass over a large spool holds no report entry per recovered
   * file (a gateway's start-up recovery needs the counts, not 100,000 entries). Everything else is listed as
   * always: kept, bad, duplicates, foreign, errors, and the members of batch files.
   */
  listCommitted?: boolean;
}

export interface InsertedEntry {
  readonly path: string;
  readonly receiptId: string;
  readonly kind: PayloadKind;
  readonly sessionId: string;
  readonly rowIds: readonly number[];
  /**
   * The file was removed. False when its removal was refused or had to wait for a checkpoint: the file is
   * then also listed in `kept` (`not-removed`, `checkpoint-pending`) and the next pass removes it. For a batch
   * member (path `<batch path>/<member name>`): its batch file was removed.
   */
  removed: boolean;
}

/**
 * A batch file (batch.ts) a pass met. Its members are reported like files, under the path
 * `<batch path>/<member name>` (inserted, already committed, duplicates); members that could not be inserted
 * now were written out as files of their own and are reported under those files' paths (kept, snapshots, bad).
 */
export interface RecoveryBatchFile {
  readonly path: string;
  /** Members the batch holds. */
  readonly members: number;
  /** Members whose rows this pass committed. */
  inserted: number;
  /** Members an earlier pass (or another name of the same payload) had committed. */
  alreadyCommitted: number;
  /** Members written out as spool files of their own (kept, snapshots, store-rejected `.bad`). */
  writtenOut: number;
  /** The batch file was removed: every member is durable in the store or written out. */
  removed: boolean;
  /** Why the batch was kept (null when it was removed). */
  detail: string | null;
}

/** The number of files of each committed outcome (see {@link RecoveryReport.counts}). */
export interface RecoveryCounts {
  /** Files whose rows this pass committed (`inserted`). */
  inserted: number;
  /** Rows those files gave (one per message; an agent-history file may give several). */
  rows: number;
  /** Files committed by an earlier pass, removed now (`alreadyCommitted`). */
  alreadyCommitted: number;
  /** Files that held a payload this pass delivered under another name (`duplicates`). */
  duplicates: number;
}

export interface RecoveryReport {
  readonly dir: string;
  /** `*.json` files seen. */
  scanned: number;
  /** How many files each outcome had: the lists' lengths, also when they are not listed (`listCommitted: false`). */
  readonly counts: RecoveryCounts;
  /** Files whose rows and receipt were committed by this pass (`removed` says whether the file is gone). */
  readonly inserted: InsertedEntry[];
  /** Files whose receipt was committed by an earlier pass (crash between commit and unlink): removed now, nothing inserted. */
  readonly alreadyCommitted: { readonly path: string; readonly receiptId: string; removed: boolean }[];
  /**
   * Files that held a payload this pass delivered under another name (`of`): the same identity (writer's
   * process id, pid and seq, or the same bytes), so nothing was inserted for them; removed like a committed file.
   */
  readonly duplicates: { readonly path: string; readonly receiptId: string; readonly of: string; removed: boolean }[];
  readonly kept: { readonly path: string; readonly reason: KeptReason; readonly detail: string }[];
  /** Files whose rows the store rejected, renamed to `<name>.bad`. */
  readonly bad: { readonly path: string; readonly badPath: string; readonly error: string }[];
  /** Agent-history snapshots, left in place for the operator. */
  readonly snapshots: { readonly path: string; readonly sessionId: string | null; readonly count: number | null }[];
  /** Files another uid owns and this process cannot read (0600 payloads): that uid's recovery picks them up. */
  readonly foreignOwner: { readonly path: string; readonly uid: number }[];
  readonly errors: { readonly path: string; readonly code: string; readonly message: string; readonly hint: string }[];
  /** What the salvage of temp files did before the pass (null when it was turned off). */
  salvage: SalvageReport | null;
  /** The valid batch files this pass met (an invalid one is in `kept`, `invalid-batch`). */
  readonly batches: RecoveryBatchFile[];
}

