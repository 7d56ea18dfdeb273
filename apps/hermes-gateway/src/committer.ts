/**
 * Group commit: every message waits in one queue; one cycle at a time takes everything queued and makes it
 * durable together — one state.db transaction (one fsync) while the database works, one spool flush while it
 * does not. Requests that arrive while a cycle runs form the next group.
 */
import type { HermesEnvironment, FsPolicyLogger } from '@hermes/fs-policy';
import { SessionDbError, type SessionDb } from '@hermes/session-db';
import { SESSION_SOURCE } from './ids.js';
import type { Metrics } from './metrics.js';
import { type Job, NotDurableError, settleSpooled, startSpool } from './spool.js';

/** What a drain of the spool into state.db found (see recovery-client.ts). */
export interface DrainResult {
  readonly clean: boolean;
  readonly inserted: number;
}

export interface CommitterOptions {
  readonly db: SessionDb;
  readonly home: string;
  readonly env?: HermesEnvironment;
  readonly metrics: Metrics;
  readonly logger: FsPolicyLogger;
  /** Extra time a cycle waits for more messages before committing (ms; default 0: what queued meanwhile). */
  readonly windowMs?: number;
  /** Recovers the spool into state.db (in order) before direct commits resume after an outage. */
  readonly drain: () => Promise<DrainResult>;
  /** How often a drain is tried while state.db is unavailable (ms, default 1000). */
  readonly drainEveryMs?: number;
}

/** True for a failure of the database itself (full, busy, read-only, I/O), after which the spool takes over. */
export function isStoreFailure(err: unknown): boolean {
  if (!(err instanceof SessionDbError)) return (err as { code?: unknown } | null)?.code === 'ENOSPC';
  return err.code !== 'EINVALID_ROW' && err.code !== 'ESESSION_MISSING' && err.code !== 'ESESSION_EXISTS';
}

/** The longest a cycle keeps gathering messages that are already arriving (ms). */
const GATHER_MS = 5;

export class GroupCommitter {
  readonly #o: CommitterOptions;
  #queue: Job[] = [];
  #running = false;
  #spoolMode = false;
  #nextDrain = 0;
  /** How many messages the previous cycle committed: under load, about as many are on their way again. */
  #lastBatch = 0;
  readonly #known = new Set<string>();
  #idle: Promise<void> = Promise.resolve();
  #idleResolve: (() => void) | undefined;

  constructor(options: CommitterOptions) {
    this.#o = options;
  }

  /** Messages received and not yet durable. */
  get queued(): number {
    return this.#queue.length;
  }

  /** True while state.db is unavailable and messages go to the spool. */
  get spooling(): boolean {
    return this.#spoolMode;
  }

  /** Queues a message; settles once it is durable (or rejects: not durable, not acknowledged). */
  submit(job: Job): void {
    this.#queue.push(job);
    if (!this.#running) this.#start();
  }

  /** Settles when no cycle runs and nothing is queued. */
  idle(): Promise<void> {
    return this.#running ? this.#idle : Promise.resolve();
  }

  #start(): void {
    this.#running = true;
    this.#idle = new Promise((resolve) => (this.#idleResolve = resolve));
    void this.#loop().finally(() => {
      this.#running = false;
      this.#idleResolve?.();
    });
  }

  async #loop(): Promise<void> {
    const windowMs = this.#o.windowMs ?? 0;
    while (this.#queue.length > 0) {
      if (windowMs > 0) await new Promise<void>((resolve) => setTimeout(resolve, windowMs));
      await this.#gather();
      if (this.#spoolMode && Date.now() >= this.#nextDrain) await this.#tryDrain();
      const batch = this.#queue;
      this.#queue = [];
      if (batch.length === 0) continue;
      if (!this.#spoolMode) {
        try {
          this.#commit(batch);
          continue;
        } catch (err) {
          if (!isStoreFailure(err)) {
            for (const job of batch) job.reject(err as Error);
            continue;
          }
          this.#spoolMode = true;
          this.#nextDrain = Date.now() + (this.#o.drainEveryMs ?? 1000);
          const line = err instanceof SessionDbError ? err.toLine() : String(err);
          this.#o.logger.error(`state.db unavailable: ${String(batch.length)} message(s) go to the spool until it works again: ${line}`, {
            code: (err as { code?: unknown }).code,
            path: this.#o.db.path,
          });
        }
      }
      await this.#spool(batch, 'db-unavailable');
    }
  }

  /**
   * Lets the requests the kernel already holds reach the queue before a commit: yields to the event loop while
   * messages keep arriving — until they pause for longer than twice their mean gap so far (at least 50 µs, at most
   * 1 ms) — and, after a cycle of several messages, at least until about as many as that cycle carried are queued
   * (their clients, just acknowledged, are sending again); never longer than {@link GATHER_MS}. A commit blocks the
   * thread (SQLite is synchronous), so what arrived during it is read only now; committing at the first quiet
   * moment would split a burst that arrives slower than the event loop turns (a loaded machine), and a fixed wait
   * would add its whole length to every ack of a few closed-loop clients.
   */
  async #gather(): Promise<void> {
    const start = performance.now();
    const until = start + GATHER_MS;
    const expected = this.#lastBatch > 1 ? this.#lastBatch : 0;
    let seen = this.#queue.length;
    let arrivals = 0;
    let firstArrival = start;
    let lastArrival = start;
    for (;;) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      const now = performance.now();
      if (this.#queue.length !== seen) {
        if (arrivals === 0) firstArrival = now;
        arrivals += Math.max(0, this.#queue.length - seen);
        seen = this.#queue.length;
        lastArrival = now;
      }
      if (now >= until) break;
      if (seen < expected) continue;
      // The mean gap between arrivals seen in this gather (the wait before the first one is not a gap).
      const gap = arrivals > 1 ? (lastArrival - firstArrival) / (arrivals - 1) : 0;
      if (now - lastArrival >= Math.min(1, Math.max(0.05, 2 * gap))) break;
    }
    this.#lastBatch = this.#queue.length;
  }

  async #tryDrain(): Promise<void> {
    try {
      const r = await this.#o.drain();
      if (r.clean) {
        this.#spoolMode = false;
        this.#o.logger.info(`state.db works again: ${String(r.inserted)} spooled message(s) recovered; direct commits resume`);
        return;
      }
    } catch (err) {
      this.#o.logger.warn(`spool drain failed: ${(err as Error).message}`, { code: (err as { code?: unknown }).code });
    }
    this.#nextDrain = Date.now() + (this.#o.drainEveryMs ?? 1000);
  }

  /** Creates the sessions a batch needs (once per process each) — separate small transactions. */
  #ensureSessions(batch: readonly Job[]): void {
    for (const job of batch) {
      if (this.#known.has(job.sessionId)) continue;
      if (this.#o.db.getSession(job.sessionId) === undefined) {
        this.#o.db.createSession({ id: job.sessionId, source: SESSION_SOURCE, sessionKey: job.sessionKey, startedAt: job.timestamp });
      }
      this.#known.add(job.sessionId);
    }
  }

  /** One state.db transaction for the whole batch; resolves every job. Throws on a failure of the database. */
  #commit(batch: readonly Job[]): void {
    this.#ensureSessions(batch);
    const started = performance.now();
    const outcomes = this.#o.db.appendMessages(
      batch.map((j) => ({
        sessionId: j.sessionId,
        role: j.role,
        content: j.content,
        timestamp: j.timestamp,
        ...(j.idempotencyKey === undefined ? {} : { idempotencyKey: j.idempotencyKey }),
      })),
    );
    this.#o.metrics.commitSeconds.observe((performance.now() - started) / 1000);
    this.#o.metrics.commits++;
    batch.forEach((job, i) => {
      const o = outcomes[i];
      if (o === undefined || o.status === 'rejected') {
        job.reject(new NotDurableError(o?.code ?? 'EINTERNAL', o?.error ?? 'no outcome for this message', 'correct the message and send it again'));
        return;
      }
      if (o.status === 'inserted') this.#o.metrics.committedMessages++;
      job.resolve({ status: 'committed', id: o.id, duplicate: o.status === 'duplicate' });
    });
  }

  async #spool(batch: readonly Job[], reason: string): Promise<void> {
    const started = performance.now();
    const reports = await Promise.all(startSpool(batch, this.#o.home, this.#o.env, reason));
    this.#o.metrics.flushSeconds.observe((performance.now() - started) / 1000);
    this.#o.metrics.flushes++;
    const { written } = settleSpooled(batch, reports);
    this.#o.metrics.spooledMessages += written;
  }

  /**
   * The stop's part (called by the shutdown hook's flush, synchronously): takes everything queued and makes it
   * durable — one state.db commit when the database works, else handed to the spool's flushes, whose promises
   * are returned for the hook to await.
   */
  flushForStop(): Promise<unknown>[] {
    const batch = this.#queue;
    this.#queue = [];
    if (batch.length === 0) return [];
    if (!this.#spoolMode) {
      try {
        this.#commit(batch);
        return [];
      } catch (err) {
        if (!isStoreFailure(err)) {
          for (const job of batch) job.reject(err as Error);
          return [];
        }
      }
    }
    const flushes = startSpool(batch, this.#o.home, this.#o.env, 'shutdown');
    return [
      Promise.all(flushes).then((reports) => {
        this.#o.metrics.spooledMessages += settleSpooled(batch, reports).written;
        return reports;
      }),
    ];
  }
}
