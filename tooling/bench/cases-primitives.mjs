// B1, B1-floor-native, B1b, B2, B2-floor, B2-floor-native, B2b, R1: the fs-policy primitives against the syscall floor and the
// libraries users would pick, in this process's anchor mode (run.mjs measures the other mode in mode-child.mjs).
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import {
  anchorInfo,
  holdDirectorySync,
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
const { O_WRONLY, O_CREAT, O_EXCL, O_RDONLY } = fs.constants;

/** The 4 KiB JSON value of B1 and the peer case: 40 short messages padded to 4,096 bytes when pretty-printed. */
export function payload4k() {
  const messages = [];
  for (let i = 0; messages.length < 40; i++) messages.push({ role: i % 2 ? 'assistant' : 'user', content: `message ${i} `.repeat(6) });
  const value = { session_id: 'bench', messages };
  const size = Buffer.byteLength(JSON.stringify(value, null, 2));
  value.pad = 'p'.repeat(Math.max(0, 4096 - size - 12));
  return value;
}

/**
 * The addon of this platform loaded directly (the floor of a native descriptor append calls it with no policy code
 * around it), or undefined when this process is not in native mode.
 */
function nativeBinding() {
  if (anchorInfo().mode !== 'native') return undefined;
  try {
    return createRequire(import.meta.url)(`../../packages/fs-policy-${process.platform}-${process.arch}-gnu/fs-policy.node`);
  } catch {
    return undefined;
  }
}

/**
 * B1–B2b-many and R1 (those `want` accepts), each against its baseline in the same run. Every row carries the
 * anchor mode it was measured in (`mode`), and its title says it.
 */
export async function primitiveCases(workRoot, { samples, want = () => true }) {
  const mode = anchorInfo().mode;
  const results = await casesIn(workRoot, { samples, want });
  for (const r of results) {
    r.mode = mode;
    r.title = `${r.title}, ${mode} mode`;
  }
  return results;
}

async function casesIn(workRoot, { samples, want }) {
  const home = path.join(workRoot, 'home');
  fs.mkdirSync(home, { recursive: true, mode: 0o700 });
  const env = loadEnvironment({ home, env: { HERMES_MANAGED: 'false' } });
  const value = payload4k();
  const results = [];
  // The addon itself, for the native floors (B1-floor-native, B2-floor-native); undefined outside native mode.
  const binding = nativeBinding();

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

  // B1-floor-native: the least a descriptor-anchored atomic write can do with the addon, against B1's floor — the
  // directory held once for the whole run, the content in an unnamed file (O_TMPFILE), write, fchmod, fstat, fsync,
  // named with linkat, renamed over the target, the directory fsynced — inline, no policy code. Native mode only.
  if (want('B1-floor-native') && binding !== undefined) {
    const { O_PATH: PATH, O_TMPFILE } = binding.constants;
    const dirFd = fs.openSync(dir1, PATH | fs.constants.O_DIRECTORY);
    let n = 0;
    try {
      results.push({
        id: 'B1-floor-native',
        title: 'atomic JSON write, 4 KiB, fsync file + directory: the native descriptor floor against the path floor',
        target: { op: '<=', ratio: 1.15 },
        unit: 'per write',
        noise: 'fsync',
        ...(await compareEachOp({
          id: 'B1-floor-native',
          ours: {
            name: 'native floor: held directory, O_TMPFILE, linkat, renameat (inline)',
            run: () => {
              const data = Buffer.from(`${JSON.stringify(value, null, 2)}\n`);
              const fd = binding.openat(dirFd, '.', O_TMPFILE | fs.constants.O_WRONLY, 0o600);
              fs.writeSync(fd, data);
              fs.fchmodSync(fd, 0o600);
              binding.fstatat(fd, '', 0x1000 /* AT_EMPTY_PATH */);
              fs.fsyncSync(fd);
              const tmp = `.native-floor.json.${process.pid}.${n++}.tmp`;
              binding.linkFd(fd, dirFd, tmp);
              fs.closeSync(fd);
              binding.renameat2(dirFd, tmp, dirFd, 'native-floor.json', 0);
              const dfd = binding.openat(dirFd, '.', fs.constants.O_RDONLY | fs.constants.O_DIRECTORY, 0);
              fs.fsyncSync(dfd);
              fs.closeSync(dfd);
            },
          },
          baseline: { name: 'floor (inline syscalls)', run: floorWrite },
          ops: samples * 40,
        })),
      });
    } finally {
      fs.closeSync(dirFd);
    }
  }

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
  // B2-floor-native: the least a descriptor-anchored append can do with the addon — the home held once for the
  // whole run (no per-call open of the home at all), the file opened beneath it by one openat2 with kernel
  // containment, its fstat (refuse a FIFO or a device), the last byte read (a record starts on a new line), write,
  // close — inline, no policy code. Only in native mode.
  if (want('B2-floor-native') && binding !== undefined) {
    const RESOLVE = binding.constants.RESOLVE_NO_MAGICLINKS | binding.constants.RESOLVE_NO_SYMLINKS | binding.constants.RESOLVE_BENEATH;
    const { O_RDWR, O_CREAT } = fs.constants;
    const data = Buffer.from(line);
    const last = Buffer.alloc(1);
    const homeFd = fs.openSync(home, O_PATH | O_DIRECTORY);
    try {
      results.push({
        id: 'B2-floor-native',
        title: 'append 1 KiB JSONL line x 20,000 (open per call): the native descriptor floor against fs.appendFileSync',
        target: { op: '<=', ratio: 1.5 },
        unit: 'per line',
        ...(await compare({
          id: 'B2-floor-native',
          ours: {
            name: 'native floor: held home, openat2 beneath, fstat, pread, write, close (inline)',
            setup: fresh('native-floor.jsonl'),
            run: (f) => {
              const rel = `trajectories/${path.basename(f)}`;
              for (let i = 0; i < LINES; i++) {
                const fd = binding.openat2(homeFd, rel, O_RDWR | O_APPEND | O_CREAT | O_NONBLOCK | O_NOFOLLOW, 0o600, RESOLVE);
                const st = binding.fstatat(fd, '', 0x1000 /* AT_EMPTY_PATH */);
                if (st.size > 0) fs.readSync(fd, last, 0, 1, st.size - 1);
                fs.writeSync(fd, data);
                fs.closeSync(fd);
              }
            },
          },
          baseline: appendFileBaseline,
          samples,
          ops: LINES,
        })),
      });
    } finally {
      fs.closeSync(homeFd);
    }
  }
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
  // R1: resolve only — a directory six levels below the home reached as every primitive reaches its directory
  // (the home by path, each level below it through descriptors, links refused), held, and closed again; against a
  // plain open of the same path.
  if (want('R1')) {
    const deep = path.join(home, 'r1', 'a', 'b', 'c', 'd', 'e');
    fs.mkdirSync(deep, { recursive: true, mode: 0o700 });
    const N = 2_000;
    results.push({
      id: 'R1',
      title: 'resolve a directory 6 levels below the home (hold it, close it) x 2,000',
      // No target of its own: it shows what reaching a directory costs in each anchor mode.
      unit: 'per resolve',
      ...(await compare({
        id: 'R1',
        ours: { name: 'holdDirectorySync + close', run: () => { for (let i = 0; i < N; i++) holdDirectorySync(deep, { env, intent: 'read' }).close(); } },
        baseline: { name: 'fs.openSync(path, O_DIRECTORY) + close', run: () => { for (let i = 0; i < N; i++) fs.closeSync(fs.openSync(deep, O_RDONLY | O_DIRECTORY)); } },
        samples,
        ops: N,
      })),
    });
  }
  return results;
}
