/**
 * The worker behind the exit path's blocking drain (see `drainBlocking` in jobs.ts): the main thread, inside
 * a `process.exit()`, cannot await, so it hands the payloads that are not on disk yet to this worker and
 * blocks on a shared flag; the worker writes them with the async primitive, many at once (their fsyncs
 * overlap), and reports each outcome in shared memory.
 *
 * Shared memory: `status[0]` 0 → 2 (started) → 1 (done: every write it started has settled); `status[1 + i]` 3
 * started / 1 written / 2 failed; `modes[i]` the written file's mode; `control[0]` set to 1 by the main thread:
 * start no further write (the rest goes into a batch file); `control[1]` the count of settled writes (the main
 * thread's rate estimate); `details` a 4-byte length then the JSON of the failures `{ [i]: FailureFields }`.
 */
import * as path from 'node:path';
import { workerData } from 'node:worker_threads';
import { atomicWrite, atomicWriteAt, FsPolicyError, type HeldDirectory, holdDirectorySync, type HermesEnvironment } from '@hermes/fs-policy';

interface DrainWorkerData {
  /** The target of each payload; its bytes are `blob[offsets[i], offsets[i + 1])` (shared, not copied). */
  readonly paths: readonly string[];
  readonly blob: SharedArrayBuffer;
  readonly offsets: Float64Array;
  readonly env: HermesEnvironment;
  /** The held spool's descriptor path (the write's root: nothing is resolved above it). */
  readonly root: string | undefined;
  /**
   * True when `paths` are entries of the held spool reached through `root` (its descriptor path): the worker
   * then holds that directory once and writes each payload relative to it (fs-policy's `atomicWriteAt`), so a
   * root process checks the chain above the spool once, not once per payload. False in the main thread's
   * by-path mode (logical paths, checked one by one).
   */
  readonly heldRoot: boolean;
  readonly concurrency: number;
  readonly status: SharedArrayBuffer;
  readonly modes: SharedArrayBuffer;
  readonly control: SharedArrayBuffer;
  readonly details: SharedArrayBuffer;
}

const data = workerData as DrainWorkerData;
const status = new Int32Array(data.status);
const modes = new Int32Array(data.modes);
const control = new Int32Array(data.control);
Atomics.store(status, 0, 2);
Atomics.notify(status, 0);

const failures: Record<number, { code: string; path: string; step: string; message: string; hint: string; uid: number; gid: number; line: string }> = {};
/** The spool held once for every write, or undefined: each payload is then written by its path (as before). */
function holdSpool(): HeldDirectory | undefined {
  if (!data.heldRoot || data.root === undefined) return undefined;
  try {
    return holdDirectorySync(data.root, { env: data.env, root: data.root });
  } catch {
    return undefined; // each write below meets the same refusal and reports it for its payload
  }
}
const held = holdSpool();
try {
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      if (Atomics.load(control, 0) === 1) return; // the main thread batches the rest
      const i = next++;
      const target = data.paths[i];
      if (target === undefined) return;
      const item = { path: target, data: new Uint8Array(data.blob, data.offsets[i] ?? 0, (data.offsets[i + 1] ?? 0) - (data.offsets[i] ?? 0)) };
      Atomics.store(status, i + 1, 3);
      try {
        const r =
          held !== undefined
            ? await atomicWriteAt(held, path.basename(item.path), item.data, { kind: 'pending-messages', durable: 'file', env: data.env })
            : await atomicWrite(item.path, item.data, { kind: 'pending-messages', durable: 'file', createParents: false, env: data.env, ...(data.root === undefined ? {} : { root: data.root }) });
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
      Atomics.add(control, 1, 1);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(data.concurrency, data.paths.length)) }, () => worker()));
} finally {
  held?.close();
  const bytes = Buffer.from(JSON.stringify(failures), 'utf8');
  const out = new Uint8Array(data.details);
  if (bytes.length + 4 <= out.length) {
    new DataView(data.details).setInt32(0, bytes.length, true);
    out.set(bytes, 4);
  }
  Atomics.store(status, 0, 1);
  Atomics.notify(status, 0);
}
