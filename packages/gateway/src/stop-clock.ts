/**
 * When a stop stops writing one file per payload and writes the rest as one batch file (batch.ts).
 *
 * Every stop path has one deadline: the stop's start + `budgetMs`. Per-file writes go on while their measured
 * rate says they can finish before the deadline minus a reserve; as soon as it says they cannot (or the reserve
 * is reached), the writes in flight are given a short grace to settle and the rest is written as one batch.
 *
 * The figures, measured on the reference machine (2 vCPU, ext4 on a virtual disk, load average 8–10 while other
 * suites ran): one durable payload file costs 0.5–5 ms (two fsyncs; 32 at once in the libuv pool overlap to
 * 0.3–2 ms each); a batch of 100,000 payloads is 45 MB and its atomic write (serialize, write, fsync, rename,
 * directory fsync) took 470–790 ms, i.e. 57–96 MB/s — but the whole rest of such a stop (the batch, settling and
 * reporting 100,000 members, the summary, the exit) took up to 1.8 s, i.e. 25 MB/s of batch. The reserve assumes
 * those 25 MB/s plus 150 ms fixed (the directory fsync, reading the spool for leftover temps), so the rest of
 * the largest remainder still ends inside the budget on that loaded machine.
 */

/** How often a running stop compares its per-file rate with the time left. */
export const TICK_MS = 20;
/**
 * The per-file rate decides only once this fraction of the budget is used: the first writes pay one-time costs
 * (fs-policy's first resolution, JIT), so an earlier projection is pessimistic — on a loaded machine it once
 * projected 2,000 files at over 60 s that took 4 s. A fifth of the budget (1 s of 5 s) leaves the rest of it
 * for the writes in flight and the batch.
 */
const RATE_AFTER_FRACTION = 0.2;
/** And not before this many payloads settled. */
const MIN_SAMPLE_ITEMS = 64;
/** Throughput of the whole rest of a stop assumed by the reserve (bytes of batch per ms: 25 MB/s). */
const BATCH_BYTES_PER_MS = 25_000;
/** Fixed part of the reserve: directory fsync, the spool read for leftover temps, the summary. */
const BATCH_FIXED_MS = 150;
/**
 * The process's own exit after the hook's last line (a process manager times the stop to the exit, not to the
 * hook): measured 80–130 ms at 100,000 payloads (freeing nothing, but closing the worker and the held spool);
 * twice that is kept.
 */
const EXIT_MS = 250;

/** What the per-file writes of a stop have done so far. */
export interface Progress {
  /** Payloads written or failed since the per-file phase began. */
  readonly settled: number;
  /** Payloads not settled yet. */
  readonly remaining: number;
  /** Their serialised size (what a batch of them would weigh, about). */
  readonly remainingBytes: number;
}

export class StopClock {
  /** How long the writes in flight get to settle once the stop switched to the batch. */
  readonly graceMs: number;

  /** How long per-file writes run before their rate may end them. */
  private readonly sampleMs: number;

  constructor(
    /** Epoch ms by which the stop must be done. */
    readonly deadline: number,
    budgetMs: number,
  ) {
    this.graceMs = Math.min(250, Math.max(20, budgetMs * 0.05));
    this.sampleMs = budgetMs * RATE_AFTER_FRACTION;
  }

  /** The time kept at the end of the budget for the grace, a batch of `remainingBytes` and the exit. */
  reserveMs(remainingBytes: number): number {
    return this.graceMs + BATCH_FIXED_MS + EXIT_MS + remainingBytes / BATCH_BYTES_PER_MS;
  }

  /**
   * True when the per-file writes should stop now and the rest go into one batch: the reserve is reached, or the
   * rate measured since `phaseStart` (epoch ms) projects an end past the deadline minus the reserve. The guarantee
   * is the deadline; per-file writes are kept as long as they fit because a file of its own is what the Python
   * reference and older releases read.
   */
  shouldBatch(now: number, phaseStart: number, p: Progress): boolean {
    if (p.remaining <= 0) return false;
    const latest = this.deadline - this.reserveMs(p.remainingBytes);
    if (now >= latest) return true;
    const elapsed = now - phaseStart;
    // No rate before a sample: a write that has not settled yet (a worker loading, a stalled disk) only meets
    // the latest point above.
    if (p.settled < MIN_SAMPLE_ITEMS || elapsed < this.sampleMs) return false;
    return now + (p.remaining * elapsed) / p.settled > latest;
  }

  /**
   * Whether `remaining` payloads can still be written one synchronous file after the other (each `perFileMs`)
   * and leave the reserve for a batch of the rest.
   */
  fitsPerFile(now: number, remaining: number, remainingBytes: number, perFileMs: number): boolean {
    return now + remaining * perFileMs + this.reserveMs(remainingBytes) <= this.deadline;
  }
}
