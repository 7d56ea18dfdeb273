/**
 * The shapes of a flush's outcome: what each payload became (written, in a batch file, failed, skipped) and
 * the report every flush returns.
 */
import type { PayloadKind } from './payload.js';

/** What made the rest of a flush go the synchronous way. */
export type DrainReason =
  /** The process is exiting (`process.exit()` from any listener, or the event loop ran dry). */
  | 'exit'
  /** The shutdown hook's budget ran out before the async flush settled. */
  | 'budget'
  /** The shutdown hook finished while a flush it did not await was still running. */
  | 'shutdown';

/** A payload that is on disk: fsynced, renamed into place, and (when the report is `durable`) its directory fsynced. */
export interface WrittenEntry {
  readonly path: string;
  readonly kind: PayloadKind;
  readonly sessionKey: string | null;
  readonly bytes: number;
  /** The file's permission bits (0o600 by policy). */
  readonly mode: number;
  readonly ts: number;
  readonly seq: number;
  /**
   * Set when the payload is a member of a batch file (the name of that file, in the same directory) rather than
   * a file of its own: a stop whose per-file writes could not finish inside its budget wrote the rest as one
   * batch (see batch.ts). `path` is still the name it was planned under, which is its name inside the batch.
   */
  readonly batch?: string;
}

/**
 * A payload that is NOT on disk, and why: the errno or policy code, the path that failed (often the
 * directory), the uid/gid the process ran as, the fix, and the file it would have been.
 */
export interface FailedEntry {
  readonly code: string;
  readonly path: string;
  readonly step: string;
  readonly message: string;
  readonly uid: number;
  readonly gid: number;
  readonly hint: string;
  /** The whole story in one line (what, where, as whom, the fix), as logged. */
  readonly line: string;
  /** The payload file this entry would have been written to. */
  readonly target: string;
  readonly kind: PayloadKind | null;
  readonly sessionKey: string | null;
}

/** An input that held nothing to write (null/undefined, or no text and no media). */
export interface SkippedEntry {
  readonly kind: PayloadKind;
  readonly sessionKey: string | null;
  readonly reason: 'empty' | 'no-content';
}

/**
 * Something the flush did differently from what it was asked, and wrote anyway: an option it could not use
 * (`EINVALID_OPTION`, the default was used), a timestamp that is not epoch seconds (`ETIMESTAMP`, the
 * flush time was used; the message itself is written), a spool renamed inside the home (`ESPOOL_MOVED`), or a
 * temp file of this process that a stop could not remove although its payload is on disk (`ETEMP_LEFT`: the
 * next recovery's salvage finds it a redundant copy).
 */
export interface FlushWarning {
  readonly code: 'EINVALID_OPTION' | 'ETIMESTAMP' | 'ESPOOL_MOVED' | 'ETEMP_LEFT';
  readonly message: string;
  /** The payload file concerned, or null for an option. */
  readonly target: string | null;
  readonly sessionKey: string | null;
}

/** The result of every flush: nothing is thrown and nothing is hidden. */
export interface FlushReport {
  readonly dir: string;
  readonly written: WrittenEntry[];
  readonly failed: FailedEntry[];
  readonly skipped: SkippedEntry[];
  readonly warnings: FlushWarning[];
  /**
   * True only when every directory the written payloads are in was fsynced through the descriptor the writes
   * were made relative to. False when that fsync failed, or when the held spool was moved out of the home
   * (its payloads are then failed, not written).
   */
  durable: boolean;
  /** Set when a stop event wrote the rest of this flush synchronously (see the stop contract). */
  drained: DrainReason | null;
  elapsedMs: number;
}
