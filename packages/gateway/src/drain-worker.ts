/**
 * The worker behind the exit path's blocking drain (see `drainBlocking` in jobs.ts): the main thread, inside
 * a `process.exit()`, cannot await, so it hands the payloads that are not on disk yet to this worker and
 * blocks on a shared flag; the worker writes them with the async primitive, many at once (their fsyncs
 * overlap), and reports each outcome in shared memory.
 *
 * Shared memory: `status[0]` 0 → 2 (started) → 1 (done); `status[1 + i]` 1 written / 2 failed; `modes[i]` the
 * written file's mode; `details` a 4-byte length then the JSON of the failures `{ [i]: FailureFields }`.
 */
import { workerData } from 'node:worker_threads';
import { atomicWrite, FsPolicyError, type HermesEnvironment } from '@hermes/fs-policy';

interface DrainWorkerData {
  readonly items: readonly { readonly path: string; readonly data: Uint8Array }[];
  readonly env: HermesEnvironment;
  /** The held spool's descriptor path (the write's root: nothing is resolved above it). */
  readonly root: string | undefined;
  readonly concurrency: number;
  readonly status: SharedArrayBuffer;
  readonly modes: SharedArrayBuffer;
  readonly details: SharedArrayBuffer;
}

const data = workerData as DrainWorkerData;
const status = new Int32Array(data.status);
const modes = new Int32Array(data.modes);
Atomics.store(status, 0, 2);
Atomics.notify(status, 0);

const failures: Record<number, { code: string; path: string; step: string; message: string; hint: string; uid: number; gid: number; line: string }> = {};
try {
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      const item = data.items[i];
      if (item === undefined) return;
      try {
        const r = await atomicWrite(item.path, item.data, { kind: 'pending-messages', durable: 'file', createParents: false, env: data.env, ...(data.root === undefined ? {} : { root: data.root }) });
        modes[i] = r.mode;
        Atomics.store(status, i + 1, 1);
      } catch (err) {
        const e =
          err instanceof FsPolicyError
            ? err
            : new FsPolicyError({ code: 'EUNEXPECTED', step: 'write', path: item.path, message: `writing ${item.path} failed: ${String(err)}`, cause: err });
        failures[i] = { code: e.code, path: e.path, step: e.step, message: e.message, hint: e.hint, uid: e.uid, gid: e.gid, line: e.toLine() };
        Atomics.store(status, i + 1, 2);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(data.concurrency, data.items.length)) }, () => worker()));
} finally {
  const bytes = Buffer.from(JSON.stringify(failures), 'utf8');
  const out = new Uint8Array(data.details);
  if (bytes.length + 4 <= out.length) {
    new DataView(data.details).setInt32(0, bytes.length, true);
    out.set(bytes, 4);
  }
  Atomics.store(status, 0, 1);
  Atomics.notify(status, 0);
}
