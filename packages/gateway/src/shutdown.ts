import { constants as osConstants } from 'node:os';
import { type GatewayLogger, loggerFor } from './log.js';

export interface ShutdownHookOptions {
  /**
   * Persists what would otherwise be lost (typically `() => flushPending(…)` / `flushOverflow(…)`). May be
   * synchronous or return a promise; a `FlushReport` it returns is summarised in the log.
   */
  flush: () => unknown;
  /**
   * How long an asynchronous flush may take before the process exits anyway (default 5000 ms). A synchronous
   * flush blocks the event loop and always runs to completion.
   */
  budgetMs?: number;
  /** Default `['SIGTERM', 'SIGINT']`. */
  signals?: readonly NodeJS.Signals[];
  /** Exit with 128 + the signal number once flushed (default true; 143 for SIGTERM, 130 for SIGINT). */
  exit?: boolean;
  logger?: GatewayLogger;
  /** Called with the outcome before the process exits. */
  onComplete?: (outcome: ShutdownOutcome) => void;
}

export interface ShutdownOutcome {
  readonly signal: NodeJS.Signals;
  /** 128 + the signal number. */
  readonly exitCode: number;
  /** True when the budget ran out before the flush settled. */
  readonly timedOut: boolean;
  readonly elapsedMs: number;
  /** What `flush` returned (e.g. a FlushReport), when it settled in time. */
  readonly result?: unknown;
  /** What `flush` threw, if it did. */
  readonly error?: unknown;
}

export interface ShutdownHook {
  /** Removes the signal listeners (the default signal behaviour returns). */
  uninstall(): void;
  /** Runs the shutdown sequence as if `signal` had arrived (tests, or an embedder's own stop path). */
  trigger(signal: NodeJS.Signals): Promise<ShutdownOutcome>;
}

/** 128 + the signal's number, the exit status a shell reports for a process the signal ended. */
export function signalExitCode(signal: NodeJS.Signals): number {
  const n = (osConstants.signals as Partial<Record<NodeJS.Signals, number>>)[signal];
  return 128 + (n ?? 0);
}

interface FlushSummary {
  written: unknown[];
  failed: unknown[];
}

function isFlushSummary(value: unknown): value is FlushSummary {
  if (value === null || typeof value !== 'object') return false;
  const v = value as Partial<Record<'written' | 'failed', unknown>>;
  return Array.isArray(v.written) && Array.isArray(v.failed);
}

/**
 * Installs signal handlers that flush within a budget and then exit with 128 + signal. A second signal while
 * the flush runs exits at once (an operator who presses Ctrl-C twice means it).
 */
export function installShutdownHook(options: ShutdownHookOptions): ShutdownHook {
  const logger = loggerFor(options.logger);
  const budgetMs = options.budgetMs ?? 5000;
  const signals = options.signals ?? (['SIGTERM', 'SIGINT'] as const);
  const exit = options.exit ?? true;
  let running: Promise<ShutdownOutcome> | undefined;

  const run = async (signal: NodeJS.Signals): Promise<ShutdownOutcome> => {
    const started = Date.now();
    const exitCode = signalExitCode(signal);
    let timer: NodeJS.Timeout | undefined;
    const budget = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => {
        resolve('timeout');
      }, budgetMs);
    });
    let outcome: ShutdownOutcome;
    try {
      const settled = await Promise.race([
        Promise.resolve()
          .then(() => options.flush())
          .then((result) => ({ result })),
        budget,
      ]);
      if (settled === 'timeout') {
        outcome = { signal, exitCode, timedOut: true, elapsedMs: Date.now() - started };
        logger.error(`shutdown flush did not finish within ${budgetMs} ms; exiting anyway (messages not yet written are lost)`, {
          signal,
        });
      } else {
        outcome = { signal, exitCode, timedOut: false, elapsedMs: Date.now() - started, result: settled.result };
        if (isFlushSummary(settled.result)) {
          const line = `shutdown flush on ${signal}: ${settled.result.written.length} written, ${settled.result.failed.length} failed`;
          if (settled.result.failed.length > 0) logger.error(line, { signal });
          else logger.info(line, { signal });
        }
      }
    } catch (error) {
      outcome = { signal, exitCode, timedOut: false, elapsedMs: Date.now() - started, error };
      logger.error(`shutdown flush threw: ${error instanceof Error ? error.message : String(error)}`, { signal });
    } finally {
      if (timer !== undefined) clearTimeout(timer);
    }
    try {
      options.onComplete?.(outcome);
    } finally {
      if (exit) process.exit(exitCode);
    }
    return outcome;
  };

  const handler = (signal: NodeJS.Signals): void => {
    if (running !== undefined) {
      logger.warn(`second ${signal} during the shutdown flush; exiting now`, { signal });
      if (exit) process.exit(signalExitCode(signal));
      return;
    }
    running = run(signal);
  };

  for (const s of signals) process.on(s, handler);
  return {
    uninstall() {
      for (const s of signals) process.off(s, handler);
    },
    trigger(signal) {
      running ??= run(signal);
      return running;
    },
  };
}
