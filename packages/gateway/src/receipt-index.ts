/**
 * The first file a recovery pass queued for each receipt (payload identity), kept compact: a pass over 100,000
 * files would otherwise hold a 64-character key and a path string per file (~200 bytes) only to tell, when the
 * store answers "duplicate", whether the payload was delivered by this pass (and under which name) or by an
 * earlier one. Here a file costs its 32-byte receipt, its name's bytes and a few table slots.
 */

/** Receipts are SHA-256 digests in lowercase hex (identity.ts). */
const RECEIPT_BYTES = 32;
const HEX = /^[0-9a-f]{64}$/;

export class ReceiptIndex {
  /** Open addressing: slot + 1 of the entry whose hash lands here, 0 for empty. */
  #table = new Int32Array(1024);
  #receipts = Buffer.alloc(RECEIPT_BYTES * 256);
  /** Names of files directly in the spool, as latin1 bytes, and where each starts (entry i: starts[i]..starts[i+1]). */
  #names = Buffer.alloc(16 * 1024);
  #starts = new Uint32Array(257);
  #count = 0;
  #namesEnd = 0;
  /** Paths that are not `<prefix><name>` with a one-component latin1 name (batch members): few, kept as they are. */
  readonly #paths = new Map<number, string>();
  /** Receipts that are not 64 lowercase hex digits (another store's ids): kept as they are. */
  readonly #other = new Map<string, string>();
  readonly #prefix: string;

  /** `prefix`: the spool directory with a trailing separator (the start of every spool file's path). */
  constructor(prefix: string) {
    this.#prefix = prefix;
  }

  get size(): number {
    return this.#count + this.#other.size;
  }

  /** Remembers `path` as the first file of `receiptId`, unless one is remembered already. */
  add(receiptId: string, path: string): void {
    if (!HEX.test(receiptId)) {
      if (!this.#other.has(receiptId)) this.#other.set(receiptId, path);
      return;
    }
    const digest = Buffer.from(receiptId, 'hex');
    let i = this.#probe(digest);
    if (this.#table[i] !== 0) return;
    if ((this.#count + 1) * 2 > this.#table.length) {
      this.#grow();
      i = this.#probe(digest);
    }
    const slot = this.#count++;
    this.#table[i] = slot + 1;
    this.#reserve(slot);
    digest.copy(this.#receipts, slot * RECEIPT_BYTES);
    const name = path.startsWith(this.#prefix) ? path.slice(this.#prefix.length) : undefined;
    if (name === undefined || name.includes('/') || !/^[\x20-\x7e]*$/.test(name)) {
      this.#paths.set(slot, path);
      this.#starts[slot + 1] = this.#namesEnd;
      return;
    }
    if (this.#namesEnd + name.length > this.#names.length) {
      const bigger = Buffer.alloc(Math.max(this.#names.length * 2, this.#namesEnd + name.length));
      this.#names.copy(bigger, 0, 0, this.#namesEnd);
      this.#names = bigger;
    }
    this.#namesEnd += this.#names.write(name, this.#namesEnd, 'latin1');
    this.#starts[slot + 1] = this.#namesEnd;
  }

  /** The first file remembered for `receiptId`, or undefined. */
  get(receiptId: string): string | undefined {
    if (!HEX.test(receiptId)) return this.#other.get(receiptId);
    const entry = this.#table[this.#probe(Buffer.from(receiptId, 'hex'))] ?? 0;
    if (entry === 0) return undefined;
    const slot = entry - 1;
    const kept = this.#paths.get(slot);
    if (kept !== undefined) return kept;
    return this.#prefix + this.#names.toString('latin1', this.#starts[slot], this.#starts[slot + 1]);
  }

  /** The table index of `digest`: its entry, or the empty index where it would go (linear probing). */
  #probe(digest: Buffer): number {
    const mask = this.#table.length - 1;
    let i = digest.readUInt32LE(0) & mask;
    for (;;) {
      const entry = this.#table[i] ?? 0;
      if (entry === 0) return i;
      const at = (entry - 1) * RECEIPT_BYTES;
      if (this.#receipts.compare(digest, 0, RECEIPT_BYTES, at, at + RECEIPT_BYTES) === 0) return i;
      i = (i + 1) & mask;
    }
  }

  #grow(): void {
    const old = this.#table;
    this.#table = new Int32Array(old.length * 2);
    const mask = this.#table.length - 1;
    for (const entry of old) {
      if (entry === 0) continue;
      let i = this.#receipts.readUInt32LE((entry - 1) * RECEIPT_BYTES) & mask;
      while (this.#table[i] !== 0) i = (i + 1) & mask;
      this.#table[i] = entry;
    }
  }

  /** Room for entry `slot` in the receipt and name-offset arrays. */
  #reserve(slot: number): void {
    if ((slot + 1) * RECEIPT_BYTES > this.#receipts.length) {
      const bigger = Buffer.alloc(this.#receipts.length * 2);
      this.#receipts.copy(bigger);
      this.#receipts = bigger;
    }
    if (slot + 2 > this.#starts.length) {
      const bigger = new Uint32Array(this.#starts.length * 2);
      bigger.set(this.#starts);
      this.#starts = bigger;
    }
  }
}
