/**
 * The compact per-file state recovery keeps between its two passes. A spool can hold 100,000 files; what the
 * pass keeps per file must not be a JS object or even a JS string each (those survive into V8's old
 * generation and inflate the heap by more than their size), so everything lives in typed arrays and byte
 * buffers outside the JS heap:
 * - the file name, as UTF-8, packed back to back (~45 bytes for `pending-<32 hex>.json`);
 * - the ordering key: `ts` and `seq` (two doubles);
 * - the files' texts, as long as all of them fit a fixed budget, so that a spool of ordinary size is read
 *   once. A larger spool is read twice (the page cache makes the second read cheap) and keeps no text at all:
 *   texts kept for a part of it would save little, since recovery order is unrelated to directory order, and
 *   would still be held at the end of the pass, when the report is largest;
 * - for a member of a batch file (batch.ts), the batch it came from and its text, always: a member has no
 *   file of its own to read again, and the batch is read once.
 */

import { compareNames } from './names.js';

const INITIAL_FILES = 1024;
const INITIAL_NAME_BYTES = 64 * 1024;
const INITIAL_TEXT_BYTES = 256 * 1024;
/** UTF-8 needs at most 3 bytes per UTF-16 code unit. */
const MAX_UTF8_PER_UNIT = 3;

function grown<T extends Float64Array | Uint32Array | Int32Array>(array: T, length: number, make: (n: number) => T): T {
  const next = make(Math.max(length, array.length * 2));
  next.set(array);
  return next;
}

function grownBuffer(buffer: Buffer, used: number, needed: number, limit = Number.POSITIVE_INFINITY): Buffer {
  const size = Math.min(limit, Math.max(needed, buffer.length * 2));
  const next = Buffer.allocUnsafeSlow(size);
  buffer.copy(next, 0, 0, used);
  return next;
}

export class RecoveryOrder {
  #count = 0;
  #ts = new Float64Array(INITIAL_FILES);
  #seq = new Float64Array(INITIAL_FILES);
  /** End offset of each name in #names (a name starts where the previous one ends). */
  #nameEnd = new Uint32Array(INITIAL_FILES);
  #names: Buffer = Buffer.allocUnsafeSlow(INITIAL_NAME_BYTES);
  #namesUsed = 0;
  /** Byte range of each kept text in #texts; start -1 = not kept. */
  #textStart = new Int32Array(INITIAL_FILES);
  #textEnd = new Uint32Array(INITIAL_FILES);
  #texts: Buffer | undefined;
  #textsUsed = 0;
  /** Batch index of each entry (-1: a file of its own). */
  #batch = new Int32Array(INITIAL_FILES);
  /** Byte range of each batch member's text in #pinned (kept whatever the budget). */
  #pinStart = new Float64Array(INITIAL_FILES);
  #pinEnd = new Float64Array(INITIAL_FILES);
  #pinned: Buffer = Buffer.allocUnsafeSlow(0);
  #pinnedUsed = 0;
  /** Set once the texts outgrew the budget: none are kept from then on. */
  #textsDropped = false;
  readonly #textBudget: number;

  /**
   * @param textBudget bytes of file text the first pass may keep for the second when the whole spool fits
   *   (0: read every file twice).
   */
  constructor(textBudget: number) {
    this.#textBudget = Math.max(0, Math.floor(textBudget));
  }

  get size(): number {
    return this.#count;
  }

  /**
   * Records a file: its name, its ordering key and, when the budget allows, its text (which must be valid
   * UTF-8 decoded, i.e. re-encode to the file's exact bytes). A member of batch `batch` (>= 0) is recorded
   * under its member name, and its text is always kept.
   */
  add(name: string, ts: number, seq: number, text: string | undefined, batch = -1): void {
    const i = this.#count;
    if (i === this.#ts.length) {
      const n = i * 2;
      this.#ts = grown(this.#ts, n, (k) => new Float64Array(k));
      this.#seq = grown(this.#seq, n, (k) => new Float64Array(k));
      this.#nameEnd = grown(this.#nameEnd, n, (k) => new Uint32Array(k));
      this.#textStart = grown(this.#textStart, n, (k) => new Int32Array(k));
      this.#textEnd = grown(this.#textEnd, n, (k) => new Uint32Array(k));
      this.#batch = grown(this.#batch, n, (k) => new Int32Array(k));
      this.#pinStart = grown(this.#pinStart, n, (k) => new Float64Array(k));
      this.#pinEnd = grown(this.#pinEnd, n, (k) => new Float64Array(k));
    }
    const maxName = name.length * MAX_UTF8_PER_UNIT;
    if (this.#namesUsed + maxName > this.#names.length) {
      this.#names = grownBuffer(this.#names, this.#namesUsed, this.#namesUsed + maxName);
    }
    this.#namesUsed += this.#names.write(name, this.#namesUsed, 'utf8');
    this.#nameEnd[i] = this.#namesUsed;
    this.#ts[i] = ts;
    this.#seq[i] = seq;
    this.#textStart[i] = -1;
    this.#batch[i] = batch;
    if (batch >= 0) this.#pin(i, text ?? '');
    else if (text !== undefined) this.#keepText(i, text);
    this.#count = i + 1;
  }

  #pin(i: number, text: string): void {
    const max = text.length * MAX_UTF8_PER_UNIT;
    if (this.#pinnedUsed + max > this.#pinned.length) {
      this.#pinned = grownBuffer(this.#pinned, this.#pinnedUsed, Math.max(this.#pinnedUsed + max, INITIAL_TEXT_BYTES));
    }
    this.#pinStart[i] = this.#pinnedUsed;
    this.#pinnedUsed += this.#pinned.write(text, this.#pinnedUsed, 'utf8');
    this.#pinEnd[i] = this.#pinnedUsed;
  }

  /** The batch entry `i` is a member of, or -1 for a file of its own. */
  batch(i: number): number {
    return this.#batch[i] ?? -1;
  }

  #keepText(i: number, text: string): void {
    if (this.#textsDropped) return;
    const bytes = Buffer.byteLength(text, 'utf8');
    const end = this.#textsUsed + bytes;
    if (end > this.#textBudget) {
      this.#textsDropped = true;
      this.#texts = undefined;
      this.#textsUsed = 0;
      this.#textStart.fill(-1, 0, i);
      return;
    }
    let texts = this.#texts;
    if (texts === undefined || end > texts.length) {
      texts =
        texts === undefined
          ? Buffer.allocUnsafeSlow(Math.min(this.#textBudget, Math.max(INITIAL_TEXT_BYTES, bytes)))
          : grownBuffer(texts, this.#textsUsed, end, this.#textBudget);
      this.#texts = texts;
    }
    texts.write(text, this.#textsUsed, 'utf8');
    this.#textStart[i] = this.#textsUsed;
    this.#textEnd[i] = end;
    this.#textsUsed = end;
  }

  /** The name of file `i`. */
  name(i: number): string {
    const start = i === 0 ? 0 : (this.#nameEnd[i - 1] ?? 0);
    return this.#names.toString('utf8', start, this.#nameEnd[i] ?? start);
  }

  /** The text kept for file `i` (decoded again), or undefined: read the file again. */
  text(i: number): string | undefined {
    if ((this.#batch[i] ?? -1) >= 0) return this.#pinned.toString('utf8', this.#pinStart[i] ?? 0, this.#pinEnd[i] ?? 0);
    const start = this.#textStart[i] ?? -1;
    if (start < 0 || this.#texts === undefined) return undefined;
    return this.#texts.toString('utf8', start, this.#textEnd[i] ?? start);
  }

  /** Indexes in recovery order: `(ts, seq, name)`; names are only decoded to break a tie. */
  order(): Uint32Array {
    const ts = this.#ts;
    const seq = this.#seq;
    const order = new Uint32Array(this.#count);
    for (let i = 0; i < order.length; i++) order[i] = i;
    return order.sort(
      (a, b) => (ts[a] ?? 0) - (ts[b] ?? 0) || (seq[a] ?? 0) - (seq[b] ?? 0) || compareNames(this.name(a), this.name(b)),
    );
  }
}
