// B1, B1b, B2, B2-floor, B2b: the fs-policy primitives against the syscall floor and the libraries users would pick.
import * as fs from 'node:fs';
import * as path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import {
  privateAppendSync,
  atomicWriteJsonSync,
  loadEnvironment,
  openAppendHandle,
  openAppendHandleSync,
  setLogger,
  silentLogger,
} from '../../packages/fs-policy/dist/index.js';
import { compare, compareEachOp } from './harness.mjs';

setLogger(silentLogger);
const { O_WRONLY, O_CREAT, O_EXCL } = fs.constants;

/** The 4 KiB JSON value of B1 and the peer case: 40 short messages padded to 4,096 bytes when pretty-printed. */
export function payload4k() {
  const messages = [];
  for (let i = 0; messages.length < 40; i++) messages.push({ role: i % 2 ? 'assistant' : 'user', content: `message ${i} `.repeat(6) });
  const value = { session_id: 'bench', messages };
  const size = Buffer.byteLength(JSON.stringify(value, null, 2));
  value.pad = 'p'.repeat(Math.max(0, 4096 - size - 12));
  return value;
}

/** B1–B2b-many (those `want` accepts), each against its baseline in the same run. */
export async function primitiveCases(workRoot, { samples, want = () => true }) {
  const home = path.join(workRoot, 'home');
  fs.mkdirSync(home, { recursive: true, mode: 0o700 });
  const env = loadEnvironment({ home, env: { HERMES_MANAGED: 'false' } });
  const value = payload4k();
  const results = [];

  // B1: atomic JSON write of 4 KiB with file + directory fsync, against the same syscalls inline.
  const dir1 = path.join(home, 'pending_messages');
  fs.mkdirSync(dir1, { mode: 0o700 });
  let counter = 0;
  const floorTarget = path.join(dir1, 'floor.json');
  const oursTarget = path.join(dir1, 'ours.json');
  const floorWrite = () => {
    const data = Buffer.from(`${JSON.stringify(value, null, 2)}\n`);
    const tmp = `${floorTarget}.${process.pid}.${counter++}.tmp`;
    const fd = fs.openSync(tmp, O_WRONLY | O_CREAT | O_EXCL, 0o600);
    fs.writeSync(fd, data);
    fs.fchmodSync(fd, 0o600);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fs.renameSync(tmp, floorTarget);
    const dfd = fs.openSync(dir1, 'r');
    fs.fsyncSync(dfd);
    fs.closeSync(dfd);
  };
  if (want('B1')) results.push({
    id: 'B1',
    title: 'atomic JSON write, 4 KiB, fsync file + directory',
    target: { op: '<=', ratio: 1.2 },
    unit: 'per write',
    noise: 'fsync',
    ...(await compareEachOp({
      id: 'B1',
      ours: { name: 'atomicWriteJsonSync', run: () => atomicWriteJsonSync(oursTarget, value, { kind: 'pending-messages', env }) },
      baseline: { name: 'floor (inline syscalls)', run: floorWrite },
      ops: samples * 40,
    })),
  });

  // B1b: the same with the file fsync only, against write-file-atomic@7 (fsync: true).
  const wfaTarget = path.join(dir1, 'wfa.json');
  if (want('B1b')) results.push({
    id: 'B1b',
    title: 'atomic JSON write, 4 KiB, file fsync only',
    target: { op: '<=', ratio: 1.0 },
    unit: 'per write',
    noise: 'fsync',
    ...(await compareEachOp({
      id: 'B1b',
      ours: { name: "atomicWriteJsonSync (durable: 'file')", run: () => atomicWriteJsonSync(oursTarget, value, { kind: 'pending-messages', env, durable: 'file' }) },
      baseline: { name: 'write-file-atomic@7 sync', run: () => writeFileAtomic.sync(wfaTarget, `${JSON.stringify(value, null, 2)}\n`, { fsync: true, mode: 0o600 }) },
      ops: samples * 40,
    })),
  });

  // B2 / B2b: 20,000 JSONL lines of 1 KiB.
  const LINES = 20_000;
  // The line is serialised once up front: both sides append the same 1 KiB of JSON text.
  const line = `${JSON.stringify({ kind: 'turn', text: 'l'.repeat(1024 - 27) })}\n`;
  const dir2 = path.join(home, 'trajectories');
  fs.mkdirSync(dir2, { mode: 0o700 });
  const fresh = (name) => () => {
    const f = path.join(dir2, name);
    fs.rmSync(f, { force: true });
    return f;
  };
  const appendFileBaseline = {
    name: 'fs.appendFileSync',
    setup: fresh('baseline.jsonl'),
    run: (f) => { for (let i = 0; i < LINES; i++) fs.appendFileSync(f, line); },
  };
  if (want('B2')) results.push({
    id: 'B2',
    title: 'append 1 KiB JSONL line x 20,000 (open per call)',
    target: { op: '<=', ratio: 2.0 },
    unit: 'per line',
    ...(await compare({
      id: 'B2',
      ours: { name: 'privateAppendSync', setup: fresh('ours.jsonl'), run: (f) => { for (let i = 0; i < LINES; i++) privateAppendSync(f, line, { kind: 'trajectories', env }); } },
      baseline: appendFileBaseline,
      samples,
      ops: LINES,
    })),
  });
  // B2-floor: the same open-per-call append against the least a descriptor-anchored append must do — the
  // directory opened O_PATH without following a link, the file opened relative to it through /proc/self/fd
  // (Node has no openat), fstat (refuse a FIFO or a device), write, two closes — inline, no policy code.
  const O_PATH = 0o10000000;
  const { O_APPEND, O_NONBLOCK, O_NOFOLLOW, O_DIRECTORY } = fs.constants;
  if (want('B2-floor')) results.push({
    id: 'B2-floor',
    title: 'append 1 KiB JSONL line x 20,000 (open per call), against the descriptor floor',
    target: { op: '<=', ratio: 2.0 },
    unit: 'per line',
    ...(await compare({
      id: 'B2-floor',
      ours: { name: 'privateAppendSync', setup: fresh('ours-floor.jsonl'), run: (f) => { for (let i = 0; i < LINES; i++) privateAppendSync(f, line, { kind: 'trajectories', env }); } },
      baseline: {
        name: 'descriptor floor (inline syscalls)',
        setup: fresh('floor.jsonl'),
        run: (f) => {
          const name = path.basename(f);
          for (let i = 0; i < LINES; i++) {
            const d = fs.openSync(dir2, O_PATH | O_DIRECTORY | O_NOFOLLOW);
            const fd = fs.openSync(`/proc/self/fd/${d}/${name}`, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_NOFOLLOW, 0o600);
            fs.fstatSync(fd);
            fs.closeSync(d);
            fs.writeSync(fd, line);
            fs.closeSync(fd);
          }
        },
      },
      samples,
      ops: LINES,
    })),
  });
  if (want('B2b-sync')) results.push({
    id: 'B2b-sync',
    title: 'append 1 KiB JSONL line x 20,000 (handle, appendSync: one write per line)',
    target: { op: '>=faster', ratio: 1 },
    unit: 'per line',
    ...(await compare({
      id: 'B2b-sync',
      ours: {
        name: 'append handle, appendSync',
        setup: fresh('handle-sync.jsonl'),
        run: (f) => {
          const h = openAppendHandleSync(f, { kind: 'trajectories', env });
          for (let i = 0; i < LINES; i++) h.appendSync(line);
          h.closeSync();
        },
      },
      baseline: appendFileBaseline,
      samples,
      ops: LINES,
    })),
  });
  if (want('B2b')) results.push({
    id: 'B2b',
    title: 'append 1 KiB JSONL line x 20,000 (handle keeps the fd)',
    target: { op: '>=faster', ratio: 5 },
    unit: 'per line',
    ...(await compare({
      id: 'B2b',
      ours: {
        name: 'append handle, append (group commit)',
        setup: fresh('handle.jsonl'),
        run: async (f) => {
          const h = await openAppendHandle(f, { kind: 'trajectories', env });
          const pending = [];
          for (let i = 0; i < LINES; i++) pending.push(h.append(line));
          await Promise.all(pending);
          await h.close();
        },
      },
      baseline: appendFileBaseline,
      samples,
      ops: LINES,
    })),
  });
  if (want('B2b-many')) results.push({
    id: 'B2b-many',
    title: 'append 1 KiB JSONL line x 20,000 (handle, appendManySync in batches of 100)',
    target: { op: '>=faster', ratio: 5 },
    unit: 'per line',
    ...(await compare({
      id: 'B2b-many',
      ours: {
        name: 'append handle, appendManySync x 100',
        setup: fresh('handle-many.jsonl'),
        run: (f) => {
          const h = openAppendHandleSync(f, { kind: 'trajectories', env });
          const batch = Array.from({ length: 100 }, () => line);
          for (let i = 0; i < LINES; i += 100) h.appendManySync(batch);
          h.closeSync();
        },
      },
      baseline: appendFileBaseline,
      samples,
      ops: LINES,
    })),
  });
  return results;
}
