/**
 * The compact per-file state recovery keeps between its two passes. A spool can hold 100,000 files; what the
 * pass keeps per file must not be a JS object or even a JS string each (those survive into V8's old
 * generation and inflate the heap by more than their size), so everything lives in typed arrays and byte
 * buffers outside the JS heap:
 * - the file name, packed back to back: the 16 bytes of its hex digits for a `pending-<32 hex>.json` name this
 *   package writes, UTF-8 otherwise;
 * - the ordering key: `ts` and `seq` (two doubles);
 * - the files' texts, as long as all of them fit a fixed budget, so that a spool of ordinary size is read
 *   once. A larger spool is read twice (the page cache makes the second read cheap) and keeps no text at all:
 *   texts kept for a part of it would save little, since recovery order is unrelated to directory order, and
 *   would still be held at the end of the pass, when the report is largest;
 * - for a member of a batch file (batch.ts), the batch it came from and its text, always: a member has no
 *   file of its own to read again, and the batch is read once.
 * What only some spools need (kept texts, batch members) is allocated when the first one comes: a spool of
 * 100,000 plain payloads costs about 37 bytes per file here (ordering key, name, name form).
 */

import { compareNames } from './names.js';
import { PENDING_FILE_PATTERN } from './payload.js';

const INITIAL_FILES = 1024;
const INITIAL_NAME_BYTES = 64 * 1024;
const INITIAL_TEXT_BYTES = 256 * 1024;
/** The size of every kept-text chunk after the first (a text larger than this gets a chunk of its own size). */
const TEXT_CHUNK_BYTES = 1024 * 1024;
/** UTF-8 needs at most 3 bytes per UTF-16 code unit. */
const MAX_UTF8_PER_UNIT = 3;
/** `pending-` and `.json` around the 32 hex digits of a payload name this package writes. */
const PENDING_PREFIX = 'pending-';
const PENDING_SUFFIX = '.json';

type Grown = Float64Array | Uint32Array | Int32Array | Uint8Array;

function grown<T extends Grown>(array: T, length: number, make: (n: number) => T): T {
  const next = make(Math.max(length, array.length * 2));
  next.set(array);
  return next;
}

function grownBuffer(buffer: Buffer, used: number, needed: number): Buffer {
  const size = Math.max(needed, buffer.length * 2);
  const next = Buffer.allocUnsafeSlow(size);
  buffer.copy(next, 0, 0, used);
  return next;
}

/**
 * Where kept texts are, while the budget holds (dropped as a whole once it does not): in chunks that are never
 * copied into larger ones (a doubling buffer would have left twice the budget behind as garbage on its way up).
 */
interface KeptTexts {
  chunks: Buffer[];
  /** Bytes written into the last chunk. */
  used: number;
  /** Bytes of text kept so far, all chunks (what the budget counts). */
  total: number;
  /** Chunk of each entry's text; -1 = not kept. */
  chunk: Int32Array;
  /** Byte range of each entry's text in its chunk. */
  start: Uint32Array;
  end: Uint32Array;
}

/** Batch membership and pinned member texts: allocated with the first member (most spools have none). */
interface Members {
  /** Batch index of each entry (-1: a file of its own). */
  batch: Int32Array;
  /** Byte range of each member's text in `pinned` (kept whatever the budget). */
  start: Float64Array;
  end: Float64Array;
  pinned: Buffer;
  used: number;
}

export class RecoveryOrder {
  #count = 0;
  #capacity = INITIAL_FILES;
  #ts = new Float64Array(INITIAL_FILES);
  #seq = new Float64Array(INITIAL_FILES);
  /** End offset of each name in #names (a name starts where the previous one ends). */
  #nameEnd = new Uint32Array(INITIAL_FILES);
  /**
   * 1 when the name is a payload name this package writes (`pending-<32 hex>.json`), stored as its 16 bytes;
   * 0 when it is stored as UTF-8.
   */
  #nameHex = new Uint8Array(INITIAL_FILES);
  #names: Buffer = Buffer.allocUnsafeSlow(INITIAL_NAME_BYTES);
  #namesUsed = 0;
  #texts: KeptTexts | undefined;
  #members: Members | undefined;
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
    if (i === this.#capacity) this.#grow(i * 2);
    this.#addName(i, name);
    this.#ts[i] = ts;
    this.#seq[i] = seq;
    if (batch >= 0) this.#pin(i, text ?? '', batch);
    else if (text !== undefined) this.#keepText(i, text);
    this.#count = i + 1;
  }

  #grow(n: number): void {
    this.#capacity = n;
    this.#ts = grown(this.#ts, n, (k) => new Float64Array(k));
    this.#seq = grown(this.#seq, n, (k) => new Float64Array(k));
    this.#nameEnd = grown(this.#nameEnd, n, (k) => new Uint32Array(k));
    this.#nameHex = grown(this.#nameHex, n, (k) => new Uint8Array(k));
    const t = this.#texts;
    if (t !== undefined) {
      t.chunk = grown(t.chunk, n, (k) => new Int32Array(k).fill(-1));
      t.start = grown(t.start, n, (k) => new Uint32Array(k));
      t.end = grown(t.end, n, (k) => new Uint32Array(k));
    }
    const m = this.#members;
    if (m !== undefined) {
      m.batch = grown(m.batch, n, (k) => new Int32Array(k).fill(-1));
      m.start = grown(m.start, n, (k) => new Float64Array(k));
      m.end = grown(m.end, n, (k) => new Float64Array(k));
    }
  }

  #addName(i: number, name: string): void {
    const hex = PENDING_FILE_PATTERN.test(name);
    const max = hex ? 16 : name.length * MAX_UTF8_PER_UNIT;
    if (this.#namesUsed + max > this.#names.length) {
      this.#names = grownBuffer(this.#names, this.#namesUsed, this.#namesUsed + max);
    }
    this.#namesUsed += hex
      ? this.#names.write(name.slice(PENDING_PREFIX.length, PENDING_PREFIX.length + 32), this.#namesUsed, 'hex')
      : this.#names.write(name, this.#namesUsed, 'utf8');
    this.#nameEnd[i] = this.#namesUsed;
    this.#nameHex[i] = hex ? 1 : 0;
  }

  #pin(i: number, text: string, batch: number): void {
    let m = this.#members;
    if (m === undefined) {
      const n = this.#capacity;
      m = { batch: new Int32Array(n).fill(-1), start: new Float64Array(n), end: new Float64Array(n), pinned: Buffer.allocUnsafeSlow(0), used: 0 };
      this.#members = m;
    }
    const max = text.length * MAX_UTF8_PER_UNIT;
    if (m.used + max > m.pinned.length) m.pinned = grownBuffer(m.pinned, m.used, Math.max(m.used + max, INITIAL_TEXT_BYTES));
    m.batch[i] = batch;
    m.start[i] = m.used;
    m.used += m.pinned.write(text, m.used, 'utf8');
    m.end[i] = m.used;
  }

  /** The batch entry `i` is a member of, or -1 for a file of its own. */
  batch(i: number): number {
    return this.#members?.batch[i] ?? -1;
  }

  #keepText(i: number, text: string): void {
    if (this.#textsDropped) return;
    const bytes = Buffer.byteLength(text, 'utf8');
    let t = this.#texts;
    if ((t?.total ?? 0) + bytes > this.#textBudget) {
      this.#textsDropped = true;
      this.#texts = undefined;
      return;
    }
    if (t === undefined) {
      const n = this.#capacity;
      t = { chunks: [], used: 0, total: 0, chunk: new Int32Array(n).fill(-1), start: new Uint32Array(n), end: new Uint32Array(n) };
      this.#texts = t;
    }
    let last = t.chunks.at(-1);
    if (last === undefined || t.used + bytes > last.length) {
      last = Buffer.allocUnsafeSlow(Math.max(bytes, t.chunks.length === 0 ? INITIAL_TEXT_BYTES : TEXT_CHUNK_BYTES));
      t.chunks.push(last);
      t.used = 0;
    }
    t.chunk[i] = t.chunks.length - 1;
    t.start[i] = t.used;
    t.used += last.write(text, t.used, 'utf8');
    t.end[i] = t.used;
    t.total += bytes;
  }

  /** The name of file `i`. */
  name(i: number): string {
    const start = i === 0 ? 0 : (this.#nameEnd[i - 1] ?? 0);
    const end = this.#nameEnd[i] ?? start;
    if (this.#nameHex[i] === 1) return `${PENDING_PREFIX}${this.#names.toString('hex', start, end)}${PENDING_SUFFIX}`;
    return this.#names.toString('utf8', start, end);
  }

  /** The text kept for file `i` (decoded again), or undefined: read the file again. */
  text(i: number): string | undefined {
    const m = this.#members;
    if (m !== undefined && (m.batch[i] ?? -1) >= 0) return m.pinned.toString('utf8', m.start[i] ?? 0, m.end[i] ?? 0);
    const t = this.#texts;
    const chunk = t === undefined ? undefined : t.chunks[t.chunk[i] ?? -1];
    if (t === undefined || chunk === undefined) return undefined;
    return chunk.toString('utf8', t.start[i] ?? 0, t.end[i] ?? 0);
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
