/** The main thread's handle on the recovery thread (recovery-worker.ts): lock, recover, release. */
import { Worker } from 'node:worker_threads';
import type { LogLevel } from './log.js';
import type { RecoverySummary, WorkerInit, WorkerReply, WorkerRequest } from './recovery-worker.js';

/** A refusal or failure of the recovery thread, with its code (`ELOCKED`, an errno, a SQLite code) and fix. */
export class RecoveryThreadError extends Error {
  readonly code: string;
  readonly hint: string;
  constructor(code: string, message: string, hint: string) {
    super(message);
    this.name = 'RecoveryThreadError';
    this.code = code;
    this.hint = hint;
  }
}

export class RecoveryThread {
  readonly #worker: Worker;
  readonly #released = new SharedArrayBuffer(4);
  readonly #pending = new Map<number, { resolve: (r: WorkerReply) => void; reject: (e: Error) => void }>();
  #next = 1;
  #dead: Error | undefined;

  constructor(home: string, logLevel: LogLevel) {
    const init: WorkerInit = { home, logLevel, released: this.#released };
    this.#worker = new Worker(new URL('./recovery-worker.js', import.meta.url), { workerData: init, trackUnmanagedFds: false });
    this.#worker.unref();
    this.#worker.on('message', (msg: WorkerReply) => {
      this.#pending.get(msg.id)?.resolve(msg);
      this.#pending.delete(msg.id);
    });
    const fail = (err: Error): void => {
      this.#dead = err;
      for (const p of this.#pending.values()) p.reject(err);
      this.#pending.clear();
    };
    this.#worker.on('error', fail);
    this.#worker.on('exit', (code) => {
      fail(new RecoveryThreadError('EWORKER', `the recovery thread exited (${String(code)})`, 'restart the service'));
    });
  }

  async #ask(op: WorkerRequest['op']): Promise<RecoverySummary | undefined> {
    if (this.#dead !== undefined) throw this.#dead;
    const id = this.#next++;
    const reply = await new Promise<WorkerReply>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.ref();
      this.#worker.postMessage({ op, id } satisfies WorkerRequest);
    }).finally(() => {
      if (this.#pending.size === 0) this.#worker.unref();
    });
    if (!reply.ok) throw new RecoveryThreadError(reply.code, reply.message, reply.hint);
    return reply.summary;
  }

  /** Takes the home's gateway lock (held until {@link releaseSync} or the process ends); throws ELOCKED. */
  async lock(): Promise<void> {
    await this.#ask('lock');
  }

  /** One recovery pass of the spool into state.db, exactly once per message. */
  async recover(): Promise<RecoverySummary> {
    const s = await this.#ask('recover');
    if (s === undefined) throw new RecoveryThreadError('EINTERNAL', 'the recovery thread returned no summary', 'restart the service');
    return s;
  }

  /**
   * Releases the lock from an exit path (synchronous): asks the thread and blocks up to `waitMs` for it.
   * Returns false when it did not answer in time (the next start then proves this process dead and takes over).
   */
  releaseSync(waitMs = 1000): boolean {
    if (this.#dead !== undefined) return false;
    const flag = new Int32Array(this.#released);
    this.#worker.postMessage({ op: 'release', id: this.#next++ } satisfies WorkerRequest);
    Atomics.wait(flag, 0, 0, waitMs);
    return Atomics.load(flag, 0) === 1;
  }
}
