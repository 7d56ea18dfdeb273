/**
 * A recovery pass's dealings with its store: files queued for commit in batches, each batch committed in one
 * transaction, each outcome settled (inserted, a duplicate of a payload this pass delivered under another
 * name, already committed, unknown session, rejected → `.bad`), and committed files removed only once the
 * store confirms its commits are in its main database file.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type HeldDirectory, hintFor } from '@hermes/fs-policy';
import { sys } from './held.js';
import type { PayloadKind } from './payload.js';
import { isMemberPath } from './recover-batch.js';
import { ReceiptIndex } from './receipt-index.js';
import type { InsertedEntry, KeptReason, RecoverOptions, RecoveryReport } from './recover-types.js';
import { describeValue } from './errors.js';
import { codeOf, egid, euid, messageOf, type Problem } from './recover-util.js';
import type { RecoveryBatchEntry, SessionStore } from './store.js';

export interface Queued {
  readonly path: string;
  readonly kind: PayloadKind;
  readonly sessionId: string;
  readonly entry: RecoveryBatchEntry;
}

/** A committed file waiting for a checkpoint before it is removed: its report entry. */
export interface Awaiting {
  readonly path: string;
  removed: boolean;
}


/** The end-of-pass checkpoint retry waits at most this long unless {@link RecoverOptions.checkpointRetryMs} says otherwise. */
export const DEFAULT_CHECKPOINT_RETRY_MS = 250;
/** Pause between two checkpoint attempts of the end-of-pass retry. */
const CHECKPOINT_RETRY_INTERVAL_MS = 25;

/**
 * How long the end-of-pass checkpoint retry may wait: `checkpointRetryMs` (default 250 ms; 0 turns the retry
 * off), and never longer than the pass has taken so far, so a reader holding a snapshot cannot make a pass take
 * more than about twice its own time.
 */
export function checkpointRetryBound(checkpointRetryMs: number, elapsedMs: number): number {
  return Math.max(0, Math.min(checkpointRetryMs, elapsedMs));
}

/** Blocks the thread for `ms` milliseconds (recovery is synchronous). */
function sleepMs(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** What the batches report back to the pass. */
export interface PassSink {
  keep(p: string, reason: KeptReason, detail: string): void;
  error(p: string, code: string, message: string, hint?: string): void;
  progress(): void;
  /** `n` more files dealt with. */
  done(n: number): void;
  /** The store rejected a batch member's rows (a member has no file to rename `.bad`; recover-batch.ts). */
  rejectedMember(p: string, reason: string): void;
}

export class Batches {
  #queue: Queued[] = [];
  #queueText = 0;
  /** The first failure of the store itself: everything after it is kept. */
  storeFailure: Problem | undefined;
  /** Committed files whose removal waits for the store's checkpoint. */
  #awaiting: Awaiting[] = [];
  /** Refused unlinks of committed files, logged as one line per code. */
  readonly unremoved: Problem[] = [];
  /** The first file of this pass queued for each receipt id (payload identity). */
  readonly #firstOf: ReceiptIndex;
  readonly #report: RecoveryReport;
  readonly #options: RecoverOptions;
  readonly #storePath: string;
  readonly #dir: string;
  /** `<dir>/`: the start of the path of every file of the spool itself (a batch member's path is not one). */
  readonly #prefix: string;
  readonly #pass: PassSink;
  /** The held spool the pass works in: committed files are removed through its descriptor. */
  held: HeldDirectory | undefined;
  /** When the pass began (performance.now()): the end-of-pass checkpoint retry never waits longer than the pass took. */
  readonly #started = performance.now();
  readonly #retryMs: number;
  /**
   * Whether files that went well get a report entry (`listCommitted`). Batch members always do: their batch's
   * settlement is computed from them (recover-batch.ts).
   */
  readonly #listAll: boolean;

  constructor(report: RecoveryReport, options: RecoverOptions, storePath: string, dir: string, pass: PassSink) {
    this.#report = report;
    this.#options = options;
    this.#storePath = storePath;
    this.#dir = dir;
    this.#pass = pass;
    this.#prefix = `${dir}${path.sep}`;
    this.#listAll = options.listCommitted !== false;
    this.#firstOf = new ReceiptIndex(this.#prefix);
    const retry = options.checkpointRetryMs;
    this.#retryMs = DEFAULT_CHECKPOINT_RETRY_MS;
    if (retry !== undefined) {
      if (typeof retry === 'number' && Number.isFinite(retry) && retry >= 0) this.#retryMs = retry;
      else {
        const used = String(DEFAULT_CHECKPOINT_RETRY_MS);
        pass.error(dir, 'EINVALID_OPTION', `checkpointRetryMs must be a finite number >= 0, got ${describeValue(retry)}; used ${used}`, 'pass milliseconds (0 turns the retry off), or omit it.');
      }
    }
  }

  /** Files queued, and the payload text they hold (UTF-16 code units). */
  get queued(): { readonly files: number; readonly text: number } {
    return { files: this.#queue.length, text: this.#queueText };
  }

  /** Queues a file for the next commit (the first file of each identity is remembered: later ones are its duplicates). */
  enqueue(q: Queued, textLength: number): void {
    this.#firstOf.add(q.entry.receiptId, q.path);
    this.#queue.push(q);
    this.#queueText += textLength;
  }

  /** A file whose receipt an earlier pass committed: reported (`alreadyCommitted`), removed with the next settled batch. */
  awaitRemoval(p: string, receiptId: string): void {
    this.#report.counts.alreadyCommitted++;
    if (this.#listAll || isMemberPath(p)) {
      const entry = { path: p, receiptId, removed: false };
      this.#report.alreadyCommitted.push(entry);
      this.#awaiting.push(entry);
    } else this.#awaiting.push({ path: p, removed: false });
  }

  /** Records the store's first failure: everything after it is kept. */
  storeFailed(err: unknown): void {
    if (this.storeFailure !== undefined) return;
    const code = codeOf(err, 'ESTORE');
    const own = err as { path?: unknown; hint?: unknown } | null;
    const where = typeof own?.path === 'string' && own.path !== '' ? own.path : this.#storePath;
    const hint = typeof own?.hint === 'string' && own.hint !== '' ? own.hint : hintFor(code, where, euid(), egid());
    const failure = { path: where, code, message: messageOf(err), hint };
    this.storeFailure = failure;
    this.#report.errors.push(failure);
  }

  /** Commits the queued files as one store transaction, settles each outcome, removes what is durable. */
  commit(): void {
    const queue = this.#queue;
    this.#queue = [];
    this.#queueText = 0;
    if (queue.length === 0) return;
    this.#pass.done(queue.length);
    if (this.storeFailure !== undefined) {
      for (const q of queue) this.#pass.keep(q.path, 'store-error', 'the session store failed earlier in this pass');
      this.#pass.progress();
      return;
    }
    let outcomes: ReturnType<SessionStore['commitRecovered']>;
    try {
      outcomes = this.#options.store.commitRecovered(queue.map((q) => q.entry));
    } catch (err) {
      this.storeFailed(err);
      for (const q of queue) this.#pass.keep(q.path, 'store-error', messageOf(err));
      this.#pass.progress();
      return;
    }
    const afterCommit = this.#options.hooks?.afterCommit;
    if (afterCommit !== undefined) {
      const committed = queue
        .filter((_q, i) => outcomes[i]?.status === 'inserted' || outcomes[i]?.status === 'duplicate')
        .map((q) => q.path);
      if (committed.length > 0) afterCommit(committed);
    }
    for (let i = 0; i < queue.length; i++) {
      const q = queue[i];
      if (q === undefined) continue;
      const o = outcomes[i];
      const p = q.path;
      if (o?.receiptId !== q.entry.receiptId) {
        this.#pass.keep(p, 'store-error', 'the store returned no outcome for this file');
        continue;
      }
      switch (o.status) {
        case 'inserted': {
          this.#report.counts.inserted++;
          this.#report.counts.rows += o.rowIds.length;
          if (this.#listAll || isMemberPath(p)) {
            const entry: InsertedEntry = { path: p, receiptId: o.receiptId, kind: q.kind, sessionId: q.sessionId, rowIds: o.rowIds, removed: false };
            this.#report.inserted.push(entry);
            this.#awaiting.push(entry);
          } else this.#awaiting.push({ path: p, removed: false });
          break;
        }
        case 'duplicate': {
          const first = this.#firstOf.get(o.receiptId);
          // Another name of a payload this pass committed: delivered once, this name reported and removed.
          if (first !== undefined && first !== p) {
            const dup = { path: p, receiptId: o.receiptId, of: first, removed: false };
            this.#report.counts.duplicates++;
            this.#report.duplicates.push(dup);
            this.#awaiting.push(dup);
          } else {
            this.awaitRemoval(p, o.receiptId);
          }
          break;
        }
        case 'unknown-session':
          this.#pass.keep(p, 'unknown-session', `session ${o.sessionId} does not exist in the store`);
          break;
        case 'rejected':
          this.#quarantine(p, o.error);
          break;
      }
    }
    this.settleRemovals(false);
    this.#pass.progress();
  }

  /**
   * Removes the committed files once the store confirms its commits are in its main database file, not only
   * in its write-ahead log (`checkpoint()`): a WAL that is deleted or lost afterwards cannot take a recovered
   * message with it, since its file is still here. The checkpoint never waits on other connections: one that
   * another process's read snapshot holds off leaves the files for the next batch's checkpoint. At the end of
   * the pass (`final`) it is retried for a bounded time ({@link checkpointRetryBound}); what is still not
   * checkpointed then is kept (`checkpoint-pending`) for the next pass, which removes it without inserting it.
   */
  settleRemovals(final: boolean): void {
    const awaiting = this.#awaiting;
    if (awaiting.length === 0) return;
    let detail = this.#checkpoint();
    if (detail !== undefined && final && this.storeFailure === undefined) {
      const deadline = performance.now() + checkpointRetryBound(this.#retryMs, performance.now() - this.#started);
      while (detail !== undefined && performance.now() < deadline) {
        sleepMs(Math.min(CHECKPOINT_RETRY_INTERVAL_MS, Math.max(1, deadline - performance.now())));
        detail = this.#checkpoint();
      }
    }
    if (this.storeFailure !== undefined) {
      detail = `committed, but the store failed before the commit could be checkpointed (${this.storeFailure.code})`;
    }
    if (detail !== undefined) {
      if (!final && this.storeFailure === undefined) return; // the next batch's checkpoint may complete
      this.#awaiting = [];
      for (const a of awaiting) this.#pass.keep(a.path, 'checkpoint-pending', detail);
      return;
    }
    this.#awaiting = [];
    const removed: string[] = [];
    for (const a of awaiting) {
      if (this.#remove(a.path)) {
        a.removed = true;
        removed.push(a.path);
      }
    }
    const afterRemove = this.#options.hooks?.afterRemove;
    if (afterRemove !== undefined && removed.length > 0) afterRemove(removed);
  }

  /**
   * One non-blocking checkpoint of the store: undefined when it completed (or the store has none), else why
   * not, in words. A failure of the store is recorded (`storeFailed`).
   */
  #checkpoint(): string | undefined {
    const store = this.#options.store;
    if (typeof store.checkpoint !== 'function' || this.storeFailure !== undefined) return undefined;
    try {
      const cp = store.checkpoint();
      if (cp.complete) return undefined;
      const db = this.#storePath;
      if (cp.busy === true) return `the checkpoint of ${db} did not complete (another connection was checkpointing it)`;
      const { walFrames, checkpointed } = cp;
      if (typeof walFrames === 'number' && typeof checkpointed === 'number' && walFrames >= 0 && checkpointed >= 0 && checkpointed < walFrames) {
        return `${String(checkpointed)} of ${String(walFrames)} WAL frame(s) of ${db} are in its main file: another connection's read snapshot held the checkpoint off`;
      }
      return `the checkpoint of ${db} did not complete`;
    } catch (err) {
      this.storeFailed(err);
      return undefined;
    }
  }

  /**
   * Removes a file whose receipt is committed and checkpointed. A refusal keeps the file (`not-removed`); the
   * next pass removes it without inserting it again.
   */
  #remove(p: string): boolean {
    // A batch member has no file of its own: its batch is removed once every member is settled (recover-batch.ts).
    if (isMemberPath(p)) return true;
    try {
      const held = this.held;
      if (held !== undefined && p.startsWith(this.#prefix)) {
        try {
          held.unlinkSync(p.slice(this.#prefix.length));
        } catch (err) {
          throw held.explain(err);
        }
      } else fs.unlinkSync(sys(p));
      return true;
    } catch (err) {
      const code = codeOf(err, 'EUNKNOWN');
      if (code === 'ENOENT') return true;
      const message = `recovered (receipt committed) but not removed: ${messageOf(err)}`;
      this.#pass.keep(p, 'not-removed', message);
      const problem = { path: p, code, message, hint: hintFor(code, this.#dir, euid(), egid()) };
      this.#report.errors.push(problem);
      this.unremoved.push(problem);
      return false;
    }
  }

  /** Renames a file whose rows the store rejected to `<name>.bad` (never over an existing file). */
  #quarantine(p: string, reason: string): void {
    if (isMemberPath(p)) {
      this.#pass.rejectedMember(p, reason);
      return;
    }
    // A new name that never replaces an entry: link (EEXIST when the name is taken, atomically), then remove the
    // old name. A check for the name followed by a rename would replace whatever took it meanwhile.
    let badPath = `${p}.bad`;
    try {
      try {
        fs.linkSync(sys(p), sys(badPath));
      } catch (err) {
        if (codeOf(err, '') !== 'EEXIST') throw err;
        badPath = `${p}.${Date.now().toString(36)}.bad`;
        fs.linkSync(sys(p), sys(badPath));
      }
      fs.unlinkSync(sys(p));
    } catch (err) {
      // No hard link (EPERM: another uid's file under protected_hardlinks, or a filesystem without links): the
      // file is kept and reported. A check that the name is free followed by a rename would replace whatever a
      // group member put there meanwhile.
      this.#pass.error(p, codeOf(err, 'EUNKNOWN'), `rejected by the store (${reason}) and could not be renamed .bad: ${messageOf(err)}`);
      return;
    }
    this.#report.bad.push({ path: p, badPath, error: reason });
  }
}
