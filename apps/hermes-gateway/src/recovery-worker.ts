/**
 * The recovery thread. It takes the home's gateway lock and holds it for the life of the service, and runs
 * every recovery pass (start-up and drains after an outage) — synchronous work that would otherwise stop the
 * HTTP thread from answering /readyz with 503 while it runs. The lock being this thread's, passes are
 * re-entrant in it; the main thread never recovers.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { acquireGatewayLock, type GatewayLock, GatewayLockError, recoverPending } from '@hermes/gateway';
import { openSessionDb, type SessionDb } from '@hermes/session-db';
import { installJsonLogger, type LogLevel } from './log.js';
import { gatewayStore } from './recovery-store.js';

export interface WorkerInit {
  readonly home: string;
  readonly logLevel: LogLevel;
  /** Int32Array over it: set to 1 and notified once the lock is released. */
  readonly released: SharedArrayBuffer;
}
export interface WorkerRequest {
  readonly op: 'lock' | 'recover' | 'release';
  readonly id: number;
}
export type WorkerReply =
  | { readonly id: number; readonly ok: true; readonly summary?: RecoverySummary }
  | { readonly id: number; readonly ok: false; readonly code: string; readonly message: string; readonly hint: string };

/** What a pass did, in numbers. */
export interface RecoverySummary {
  readonly scanned: number;
  readonly inserted: number;
  readonly alreadyCommitted: number;
  readonly kept: number;
  readonly storeErrors: number;
  readonly errors: number;
  readonly elapsedMs: number;
}

const init = workerData as WorkerInit;
installJsonLogger(init.logLevel);
let lock: GatewayLock | undefined;
let db: SessionDb | undefined;

function recover(): RecoverySummary {
  const started = performance.now();
  db ??= openSessionDb({ home: init.home });
  // Counts, not an entry per recovered file: a large spool at start must not cost memory per message.
  const report = recoverPending({ home: init.home, store: gatewayStore(db), listCommitted: false });
  return {
    scanned: report.scanned,
    inserted: report.counts.rows,
    alreadyCommitted: report.counts.alreadyCommitted,
    kept: report.kept.length,
    storeErrors: report.kept.filter((k) => k.reason === 'store-error' || k.reason === 'checkpoint-pending').length,
    errors: report.errors.length,
    elapsedMs: Math.round(performance.now() - started),
  };
}

function reply(msg: WorkerReply): void {
  parentPort?.postMessage(msg);
}

parentPort?.on('message', (req: WorkerRequest) => {
  try {
    if (req.op === 'lock') {
      lock ??= acquireGatewayLock({ home: init.home });
      reply({ id: req.id, ok: true });
    } else if (req.op === 'recover') {
      reply({ id: req.id, ok: true, summary: recover() });
    } else {
      db?.close();
      db = undefined;
      lock?.release();
      lock = undefined;
      const flag = new Int32Array(init.released);
      Atomics.store(flag, 0, 1);
      Atomics.notify(flag, 0);
      reply({ id: req.id, ok: true });
    }
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown; hint?: unknown };
    reply({
      id: req.id,
      ok: false,
      code: typeof e.code === 'string' ? e.code : err instanceof GatewayLockError ? 'ELOCKED' : 'EINTERNAL',
      message: typeof e.message === 'string' ? e.message : String(err),
      hint: typeof e.hint === 'string' ? e.hint : 'see the log line before this one',
    });
  }
});
