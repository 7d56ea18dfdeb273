/**
 * The append handle's queue of issued records and how a group commit turns them into one write(2) buffer.
 *
 * A burst of records is copied into one buffer per group commit. That buffer is reused from one batch to the
 * next while the burst lasts (the previous batch's write has completed when the next is taken: batches are
 * written one at a time) and dropped when the queue empties, so an idle handle holds none. Allocating a fresh
 * megabyte per batch — or joining the records into one large string first — costs a large allocation, page
 * faults and the full collections that external memory brings, and dominated the CPU of a burst.
 */

/** Upper bound of one group commit, so a burst never builds one huge buffer. */
export const GROUP_COMMIT_BYTES = 1 << 20;

/** The record whose promise is being constructed (see {@link promiseOf}). */
let capturing: Pending | undefined;

/** One executor for every record's promise: it hands the settlers to the record being issued. */
function captureSettlers(resolve: (n: number) => void, reject: (err: unknown) => void): void {
  if (capturing === undefined) throw new Error('append-batch: a promise executor ran outside promiseOf()');
  capturing.resolve = resolve;
  capturing.reject = reject;
}

function unsettled(): void {
  throw new Error('append-batch: a record was settled before its promise existed');
}

/** One record issued and not yet written, with the promise it settles. */
export class Pending {
  resolve: (n: number) => void = unsettled;
  reject: (err: unknown) => void = unsettled;
  /**
   * @param rec Kept as issued (a string is encoded straight into the batch buffer: no per-record allocation).
   * @param bytes Its length in bytes (UTF-8 for a string).
   */
  constructor(
    readonly rec: string | Uint8Array,
    readonly bytes: number,
  ) {}
}

/** The promise `record` settles. Its settlers are captured by one shared executor, not a closure per record. */
export function promiseOf(record: Pending): Promise<number> {
  capturing = record;
  try {
    return new Promise<number>(captureSettlers);
  } finally {
    capturing = undefined;
  }
}

/** @internal The records of one group commit and the bytes to write for them. */
export interface Batch {
  readonly records: readonly Pending[];
  readonly data: Uint8Array;
}

/** @internal Records in call order, taken in batches of at most GROUP_COMMIT_BYTES (a larger record goes alone). */
export class BatchQueue {
  private items: Pending[] = [];
  /** Index of the first record not yet taken (taking a batch never shifts the rest of the array). */
  private head = 0;
  /** Bytes of the records not yet taken: sizes the reused buffer for the whole burst. */
  private waiting = 0;
  private scratch: Buffer | undefined;

  /** True while a record waits to be written. */
  get pending(): boolean {
    return this.head < this.items.length;
  }

  push(p: Pending): void {
    this.items.push(p);
    this.waiting += p.bytes;
  }

  /**
   * Takes the next batch. `reuse`: the batch may be encoded into the buffer the previous batch used — only
   * when no write of an earlier batch can still be reading it.
   */
  take(reuse: boolean): Batch {
    const start = this.head;
    let bytes = 0;
    for (;;) {
      const next = this.items[this.head];
      if (next === undefined) break;
      const n = next.bytes;
      if (this.head > start && bytes + n > GROUP_COMMIT_BYTES) break;
      bytes += n;
      this.head++;
    }
    const records = this.items.slice(start, this.head);
    const first = records[0];
    const data = records.length === 1 && first !== undefined ? single(first) : this.encode(records, bytes, reuse);
    this.waiting -= bytes;
    if (this.head === this.items.length) {
      this.clear();
    } else if (this.head >= 4096 && this.head * 2 >= this.items.length) {
      // A stream that never lets the queue empty: drop the written part now and then, not on every batch.
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return { records, data };
  }

  /** Empties the queue and returns what was in it (to be refused). */
  takeAll(): Pending[] {
    const left = this.items.slice(this.head);
    this.clear();
    return left;
  }

  private clear(): void {
    this.items = [];
    this.head = 0;
    this.waiting = 0;
    this.scratch = undefined;
  }

  private encode(records: readonly Pending[], bytes: number, reuse: boolean): Uint8Array {
    let out: Buffer;
    if (reuse) {
      if (this.scratch === undefined || this.scratch.length < bytes) {
        this.scratch = Buffer.allocUnsafeSlow(Math.min(GROUP_COMMIT_BYTES, Math.max(bytes, this.waiting)));
      }
      out = this.scratch;
    } else {
      out = Buffer.allocUnsafeSlow(bytes);
    }
    let at = 0;
    for (const r of records) {
      if (typeof r.rec === 'string') {
        at += out.write(r.rec, at, 'utf8');
      } else {
        out.set(r.rec, at);
        at += r.rec.length;
      }
    }
    return at === out.length ? out : out.subarray(0, at);
  }
}

function single(p: Pending): Uint8Array {
  return typeof p.rec === 'string' ? Buffer.from(p.rec, 'utf8') : p.rec;
}
