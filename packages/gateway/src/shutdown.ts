import { constants as osConstants } from 'node:os';
import { describeValue, GatewayInputError } from './errors.js';
import { emptyRemainder, type RemainderOutcome, writeRemainderSync } from './batch-write.js';
import { activeJobs, type DrainReason, drainBlocking, type FlushJob, type FlushReport, onJobStart } from './jobs.js';
import { count, type GatewayLogger, loggerFor } from './log.js';
import { StopClock, TICK_MS } from './stop-clock.js';
import { messageOf, type Settled, summarize } from './stop-summary.js';

/**
 * The exit status of a stop after which some messages are NOT on disk (failed, or never handed to a flush
 * that could be completed). 74 is `EX_IOERR` of sysexits(3); 128 + signal (143, 130) is used only when every
 * message is on disk. See docs/stop-contract.md.
 */
export const EXIT_FLUSH_INCOMPLETE = 74;

export interface ShutdownHookOptions {
  /**
   * Persists what would otherwise be lost (typically `() => flushPending(…)` / `flushOverflow(…)`). May be
   * synchronous or return a promise. For the stop contract to hold when the process is cut short, it must
   * hand its messages to this package's flush functions before its first `await`.
   */
  flush: () => unknown;
  /**
   * The stop's deadline, from its start (default 5000 ms): every stop path — signal, budget, `process.exit()` —
   * ends within it. Payloads are written one file each while the measured rate says they fit; the rest is
   * written as one batch file (see docs/stop-contract.md), so the deadline never costs a message.
   */
  budgetMs?: number;
  /**
   * Accepted for compatibility and checked, no longer used: the synchronous rest is one batch file written
   * inside `budgetMs`, not a second budget of per-file writes.
   */
  syncBudgetMs?: number;
  /**
   * Default `['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT']`: every signal whose default action ends the process and that
   * an ordinary stop sends (a closed terminal, `SendSIGHUP=`, a supervisor, Ctrl-\\).
   */
  signals?: readonly NodeJS.Signals[];
  /** Exit once flushed (default true): 128 + the signal number when every message is on disk, else 74. */
  exit?: boolean;
  /**
   * Also flush when the process exits without a signal having started the flush, or while it runs — another
   * listener's `process.exit()`, an uncaught exception, the event loop running dry (default true).
   */
  flushOnExit?: boolean;
  logger?: GatewayLogger;
  /** Called with the outcome before the process exits (synchronously on the exit path). */
  onComplete?: (outcome: ShutdownOutcome) => void;
}

export interface ShutdownOutcome {
  /** The signal that started the stop; null when the process exited without one. */
  readonly signal: NodeJS.Signals | null;
  /**
   * The status the process exits with: 128 + the signal number when every message is on disk, else
   * {@link EXIT_FLUSH_INCOMPLETE}. On the exit path: the status the exiting code chose when every message is
   * on disk, else 74.
   */
  readonly exitCode: number;
  /** True when the budget ran out before the flush settled. */
  readonly timedOut: boolean;
  /** What made the rest of the flush go the synchronous way (null: the async flush settled by itself). */
  readonly drained: DrainReason | null;
  /** Stop signals that arrived while the flush ran (each was logged; none aborted it). */
  readonly extraSignals: number;
  readonly elapsedMs: number;
  /** Messages handed to this package's flushes during the stop; null when the flush used none of them. */
  readonly messages: number | null;
  readonly written: number | null;
  readonly failed: number | null;
  /** Every message is on disk (written and the directory fsynced), and the flush did not throw. */
  readonly complete: boolean;
  /** The final report of every flush of the stop. */
  readonly reports: readonly FlushReport[];
  /** The summary line, as logged (the last line the hook logs). */
  readonly line: string;
  /** What `flush` returned (e.g. a FlushReport), when it settled before the stop ended. */
  readonly result?: unknown;
  /** What `flush` threw, if it did. */
  readonly error?: unknown;
}

export interface ShutdownHook {
  /** Removes the signal and exit listeners (the default signal behaviour returns). */
  uninstall(): void;
  /** Runs the shutdown sequence as if `signal` had arrived (tests, or an embedder's own stop path). */
  trigger(signal: NodeJS.Signals): Promise<ShutdownOutcome>;
}

/** 128 + the signal's number, the exit status a shell reports for a process the signal ended. */
export function signalExitCode(signal: NodeJS.Signals): number {
  const n = (osConstants.signals as Partial<Record<NodeJS.Signals, number>>)[signal];
  return 128 + (n ?? 0);
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function';
}

function nonNegative(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new GatewayInputError('EINVALID_OPTION', name, `${name} must be a finite number of milliseconds >= 0, got ${describeValue(value)}`);
  }
  return value;
}

/** The stop signals the hook listens to unless told otherwise. */
export const DEFAULT_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT'];

/**
 * Installs the stop sequence: on the first signal it runs `flush()`; the process exits once every message is
 * on disk or reported, never before:
 * - a second (or third) signal never aborts the flush;
 * - every path ends within `budgetMs` of the stop's start: when one file per payload would not fit, the rest is
 *   written synchronously as one fsynced batch file, and its members count as written only once it is durable;
 * - `process.exit()` from anyone (before or after this hook's listener, or without any signal) still flushes:
 *   the `'exit'` listener writes whatever is not on disk (a worker thread, then the batch) within the same
 *   deadline;
 * - a stop that reports every message on disk leaves no temp file of this process behind.
 * The exit status is 128 + signal only when every message is on disk, else {@link EXIT_FLUSH_INCOMPLETE}; the
 * last line logged says how many were written and why the others were not.
 */
export function installShutdownHook(options: ShutdownHookOptions): ShutdownHook {
  if (typeof options.flush !== 'function') {
    throw new GatewayInputError('EINVALID_OPTION', 'flush', `flush must be a function, got ${describeValue(options.flush)}`);
  }
  const budgetMs = nonNegative('budgetMs', options.budgetMs ?? 5000);
  nonNegative('syncBudgetMs', options.syncBudgetMs ?? budgetMs);
  const given: unknown = options.signals ?? DEFAULT_SIGNALS;
  if (!Array.isArray(given) || given.some((s) => typeof s !== 'string')) {
    throw new GatewayInputError('EINVALID_OPTION', 'signals', `signals must be a list of signal names, got ${describeValue(given)}`);
  }
  const signals = given as readonly NodeJS.Signals[];
  const exit = options.exit ?? true;
  const flushOnExit = options.flushOnExit ?? true;
  const log = (): GatewayLogger => loggerFor(options.logger);

  let state: 'idle' | 'flushing' | 'done' = 'idle';
  let signal: NodeJS.Signals | null = null;
  let started = 0;
  let tracked = new Set<FlushJob>();
  let unsubscribe: (() => void) | undefined;
  let settled: Settled = { settled: false };
  let timer: NodeJS.Timeout | undefined;
  /** The stop's deadline (set when the flush starts) and when its per-file writes began. */
  let clock: StopClock | undefined;
  let phaseStart = 0;
  let switching = false;
  let outcome: ShutdownOutcome | undefined;
  let resolveRunning: ((o: ShutdownOutcome) => void) | undefined;
  let extraSignals = 0;
  const extraNames: string[] = [];
  let running: Promise<ShutdownOutcome> | undefined;

  /** Calls `flush()`, tracking every flush job that is running or starts from now on. */
  const startFlush = (): void => {
    started = Date.now();
    clock = new StopClock(started + budgetMs, budgetMs);
    tracked = new Set(activeJobs());
    unsubscribe = onJobStart((job) => tracked.add(job));
    let r: unknown;
    try {
      r = options.flush();
    } catch (error) {
      settled = { settled: true, error };
      return;
    } finally {
      phaseStart = Date.now(); // the package's flushes plan every payload before they return
    }
    if (!isPromiseLike(r)) {
      settled = { settled: true, result: r };
      return;
    }
    r.then(
      (result) => {
        settled = { settled: true, result };
        if (state === 'flushing') finish(null);
      },
      (error: unknown) => {
        settled = { settled: true, error };
        if (state === 'flushing') finish(null);
      },
    );
  };

  /** Payloads of the tracked jobs whose async write is under way. */
  const inFlight = (): boolean => {
    for (const job of tracked) if (job.report === undefined && job.items.some((i) => i.state === 'writing')) return true;
    return false;
  };

  /**
   * The per-file writes will not fit the deadline: they take no further payload, the writes in flight get the
   * clock's grace to settle (their temps then become files, or are removed by their writer), and the rest is
   * written as one batch file.
   */
  const takeOver = async (c: StopClock): Promise<void> => {
    switching = true;
    for (const job of tracked) if (job.report === undefined) job.drained = 'budget';
    const until = Math.min(Date.now() + c.graceMs, c.deadline);
    while (state === 'flushing' && inFlight() && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    if (state === 'flushing') finish('budget');
  };

  /** Every TICK_MS while the flush runs: compares the per-file rate with the time left. */
  const tick = (): void => {
    const c = clock;
    if (state !== 'flushing' || switching || c === undefined) return;
    const now = Date.now();
    let total = 0;
    let done = 0;
    let bytes = 0;
    for (const job of tracked) {
      if (job.report !== undefined) continue;
      total += job.items.length;
      done += job.settled;
      bytes += job.bytes;
    }
    const remaining = total - done;
    if (remaining <= 0) {
      // Only a directory fsync (or a flush of its own) is still running: the deadline ends it.
      if (now >= c.deadline) finish('budget');
      return;
    }
    if (c.shouldBatch(now, phaseStart, { settled: done, remaining, remainingBytes: (bytes * remaining) / total })) void takeOver(c);
  };

  /**
   * Ends the stop: writes whatever any tracked flush has not written yet — as files while the deadline allows,
   * else as one batch file — logs the summary line and exits (or, on the exit path, sets the exit status).
   * Idempotent.
   */
  const finish = (reason: DrainReason | null, exiting?: { code: number }): ShutdownOutcome => {
    if (outcome !== undefined) return outcome;
    if (timer !== undefined) clearInterval(timer);
    const jobs = [...tracked];
    const open = jobs.some((j) => j.report === undefined);
    const drained: DrainReason | null = open ? (reason ?? 'shutdown') : null;
    let rest: RemainderOutcome = emptyRemainder();
    if (reason === 'exit') {
      // Inside process.exit(): nothing can be awaited; a worker thread writes while this blocks, within the
      // time left of the stop's deadline (a stop that began with a signal keeps its deadline).
      rest = drainBlocking(jobs, 'exit', clock === undefined ? budgetMs : clock.deadline - Date.now());
    } else {
      // The per-file writes would not fit (or are stalled), or a flush outlived the hook: the rest, here.
      // After the budget's switch the rest is batched at once: the rate already said files do not fit.
      writeRemainderSync(jobs, drained ?? 'shutdown', rest, { clock, ...(reason === 'budget' ? { perFileMs: Number.POSITIVE_INFINITY } : {}) });
    }
    unsubscribe?.();
    const summary = summarize({ jobs, drained, reason, signal, budgetMs, extraSignals, extraNames, settled, rest });
    const exitCode = summary.complete ? (exiting !== undefined ? exiting.code : signalExitCode(signal ?? 'SIGTERM')) : EXIT_FLUSH_INCOMPLETE;
    const result: ShutdownOutcome = {
      signal,
      exitCode,
      timedOut: reason === 'budget',
      drained,
      extraSignals,
      elapsedMs: Date.now() - started,
      reports: jobs.map((j) => j.report).filter((r): r is FlushReport => r !== undefined),
      ...summary,
      ...(settled.settled && settled.error === undefined ? { result: settled.result } : {}),
      ...(settled.error === undefined ? {} : { error: settled.error }),
    };
    outcome = result;
    state = 'done';
    try {
      const fields = { signal: signal ?? undefined, exitCode };
      // Messages that had to be spooled at stop were not delivered: that is worth a warning even when all of
      // them are on disk. Nothing to spool and a plain stop is the only quiet case.
      const quiet = (summary.messages === null || summary.messages === 0) && drained === null && reason === null && extraSignals === 0;
      if (!summary.complete) log().error(summary.line, fields);
      else if (quiet) log().info(summary.line, fields);
      else log().warn(summary.line, fields);
    } catch {
      // a throwing logger changes nothing about the exit
    }
    try {
      options.onComplete?.(result);
    } catch (err) {
      try {
        log().error(`shutdown hook: onComplete threw: ${messageOf(err)}`);
      } catch {
        // nothing more to do
      }
    }
    resolveRunning?.(result);
    if (exiting !== undefined) {
      if (!summary.complete) process.exitCode = EXIT_FLUSH_INCOMPLETE;
    } else if (exit) {
      process.exit(exitCode);
    }
    return result;
  };

  /**
   * The `'exit'` listener runs first: a listener that throws stops `process.emit('exit')` at that listener, and
   * whatever comes after it never runs. Prepended when installed, and again when a stop begins (the application
   * may have prepended its own since).
   */
  const putExitListenerFirst = (): void => {
    if (process.listeners('exit')[0] === onExit) return;
    process.off('exit', onExit);
    process.prependListener('exit', onExit);
  };

  const run = (sig: NodeJS.Signals): Promise<ShutdownOutcome> => {
    if (running !== undefined) return running;
    putExitListenerFirst();
    if (outcome !== undefined) return Promise.resolve(outcome); // the exit path ended the stop already
    running = new Promise<ShutdownOutcome>((resolve) => {
      resolveRunning = resolve;
    });
    state = 'flushing';
    signal = sig;
    timer = setInterval(tick, TICK_MS);
    startFlush();
    if (settled.settled) finish(null);
    return running;
  };

  const onSignal = (sig: NodeJS.Signals): void => {
    if (state === 'idle') {
      void run(sig);
      return;
    }
    if (state === 'flushing') {
      // Never aborts the flush: the async writes are the fastest way to the end; the budget still applies.
      extraSignals++;
      extraNames.push(sig);
      try {
        let written = 0;
        let messages = 0;
        for (const job of tracked) {
          written += job.writtenCount();
          messages += job.messages();
        }
        log().warn(`${sig} during the shutdown flush: the flush is not aborted (${count(written)} of ${count(messages)} written so far)`, { signal: sig });
      } catch {
        // the flush matters, not the line
      }
    }
    // 'done': the process is already on its way out.
  };

  const onExit = (code: number): void => {
    if (state === 'done' || !flushOnExit) return;
    if (state === 'idle') {
      state = 'flushing';
      startFlush();
    }
    finish('exit', { code });
  };

  for (const s of signals) process.on(s, onSignal);
  process.prependListener('exit', onExit);
  return {
    uninstall() {
      for (const s of signals) process.off(s, onSignal);
      process.off('exit', onExit);
    },
    trigger(sig) {
      return run(sig);
    },
  };
}
