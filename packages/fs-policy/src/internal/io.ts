/**
 * The filesystem port. Every primitive is written once as a plan — a generator that yields the syscalls it
 * needs, each labelled with its step — and run by a synchronous or an asynchronous driver. That gives the
 * sync and async forms one body of logic, and gives tests one seam to fail or pause any step. When the native
 * layer is in force, a step on a name inside a held descriptor is made with the matching `*at` syscall
 * (`native-ops.ts`); the request, its checks and the fault hook are the same in every mode.
 */
import * as fs from 'node:fs';
import { promisify } from 'node:util';
import type { FsStep } from '../errors.js';
import { nativeBinding } from '../native.js';
import { nativeAsync, nativeSync, NOT_NATIVE } from './native-ops.js';

export interface Ops {
  lstat: (path: string) => fs.Stats;
  stat: (path: string) => fs.Stats;
  mkdir: (path: string, mode: number) => void;
  open: (path: string, flags: number, mode: number) => number;
  /**
   * Opens `rel` — several components, none of them a link — beneath the directory held by `dirfd` in one lookup
   * the kernel keeps inside it (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`).
   * Only the native layer makes it, where the kernel has `openat2`; anywhere else it fails with ENOSYS (the
   * caller then walks one component at a time, which it also does on any failure).
   */
  openBeneath: (dirfd: number, rel: string, flags: number) => number;
  write: (fd: number, buffer: Uint8Array, offset: number, length: number) => number;
  fchmod: (fd: number, mode: number) => void;
  /** Only ever called on `/proc/self/fd/<fd>` of an `O_PATH` descriptor: changes exactly the object it holds. */
  chmod: (path: string, mode: number) => void;
  read: (fd: number, buffer: Uint8Array, offset: number, length: number, position: number | null) => number;
  fchown: (fd: number, uid: number, gid: number) => void;
  fstat: (fd: number) => fs.Stats;
  fsync: (fd: number) => void;
  ftruncate: (fd: number, length: number) => void;
  close: (fd: number) => void;
  /**
   * `existing`: a name, or the descriptor of an open file with no name (`O_TMPFILE`). Only the native layer
   * names an open file (the addon's `linkFd`); without it that request fails with EOPNOTSUPP.
   */
  link: (existing: string | number, created: string) => void;
  rename: (from: string, to: string) => void;
  unlink: (path: string) => void;
  readlink: (path: string) => string;
  realpath: (path: string) => string;
  readdir: (path: string) => fs.Dirent[];
}

export type OpName = keyof Ops;

/** One request a plan yields: the syscall, its arguments, the step it belongs to and the path it concerns. */
export interface Req {
  readonly op: OpName;
  readonly args: readonly unknown[];
  readonly step: FsStep;
  readonly path: string;
}

export type Plan<T> = Generator<Req, T, unknown>;

/** Yields one syscall and returns its typed result. */
export function* call<K extends OpName>(
  step: FsStep,
  path: string,
  op: K,
  ...args: Parameters<Ops[K]>
): Generator<Req, ReturnType<Ops[K]>, unknown> {
  return (yield { op, args, step, path }) as ReturnType<Ops[K]>;
}

const syncOps: Ops = {
  lstat: (p) => fs.lstatSync(p),
  stat: (p) => fs.statSync(p),
  mkdir: (p, mode) => {
    fs.mkdirSync(p, { mode });
  },
  open: (p, flags, mode) => fs.openSync(p, flags, mode),
  openBeneath: (dirfd, rel) => {
    throw noOpenBeneath(dirfd, rel);
  },
  write: (fd, b, o, l) => fs.writeSync(fd, b, o, l),
  fchmod: (fd, mode) => {
    fs.fchmodSync(fd, mode);
  },
  fchown: (fd, uid, gid) => {
    fs.fchownSync(fd, uid, gid);
  },
  chmod: (p, mode) => {
    fs.chmodSync(p, mode);
  },
  read: (fd, b, o, l, pos) => fs.readSync(fd, b, o, l, pos),
  fstat: (fd) => fs.fstatSync(fd),
  fsync: (fd) => {
    fs.fsyncSync(fd);
  },
  ftruncate: (fd, length) => {
    fs.ftruncateSync(fd, length);
  },
  close: (fd) => {
    fs.closeSync(fd);
  },
  link: (a, b) => {
    if (typeof a === 'number') throw cannotNameOpenFile(a, b);
    fs.linkSync(a, b);
  },
  rename: (a, b) => {
    fs.renameSync(a, b);
  },
  unlink: (p) => {
    fs.unlinkSync(p);
  },
  readlink: (p) => fs.readlinkSync(p),
  realpath: (p) => fs.realpathSync(p),
  readdir: (p) => fs.readdirSync(p, { withFileTypes: true }),
};

/** `fs` has no `openat2`: the multi-component lookup is the native layer's step only. */
function noOpenBeneath(dirfd: number, rel: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`ENOSYS: a contained multi-component lookup needs the native layer, openat2 ${String(dirfd)} '${rel}'`), {
    code: 'ENOSYS',
    errno: -38,
    syscall: 'openat2',
  });
}

/** `fs` has no way to give an open file a name (`linkat` with `AT_EMPTY_PATH`): the native layer's step only. */
function cannotNameOpenFile(fd: number, created: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`EOPNOTSUPP: naming an open file needs the native layer, link fd ${String(fd)} -> '${created}'`), {
    code: 'EOPNOTSUPP',
    errno: -95,
    syscall: 'link',
  });
}

type AsyncOps = { [K in OpName]: (...args: Parameters<Ops[K]>) => Promise<ReturnType<Ops[K]>> };

const pWrite = promisify(fs.write);
const pFchmod = promisify(fs.fchmod);
const pFchown = promisify(fs.fchown);
const pFstat = promisify(fs.fstat);
const pFsync = promisify(fs.fsync);
const pClose = promisify(fs.close);
const pFtruncate = promisify(fs.ftruncate);
const pOpen = promisify(fs.open);
const pRead = promisify(fs.read);

const asyncOps: AsyncOps = {
  lstat: (p) => fs.promises.lstat(p),
  stat: (p) => fs.promises.stat(p),
  mkdir: async (p, mode) => {
    await fs.promises.mkdir(p, { mode });
  },
  open: (p, flags, mode) => pOpen(p, flags, mode),
  openBeneath: (dirfd, rel) => Promise.reject(noOpenBeneath(dirfd, rel)),
  write: async (fd, b, o, l) => (await pWrite(fd, b, o, l)).bytesWritten,
  fchmod: (fd, mode) => pFchmod(fd, mode),
  fchown: (fd, uid, gid) => pFchown(fd, uid, gid),
  chmod: (p, mode) => fs.promises.chmod(p, mode),
  read: async (fd, b, o, l, pos) => (await pRead(fd, b, o, l, pos)).bytesRead,
  fstat: (fd) => pFstat(fd),
  fsync: (fd) => pFsync(fd),
  ftruncate: (fd, length) => pFtruncate(fd, length),
  close: (fd) => pClose(fd),
  link: (a, b) => (typeof a === 'number' ? Promise.reject(cannotNameOpenFile(a, b)) : fs.promises.link(a, b)),
  rename: (a, b) => fs.promises.rename(a, b),
  unlink: (p) => fs.promises.unlink(p),
  readlink: (p) => fs.promises.readlink(p),
  realpath: (p) => fs.promises.realpath(p),
  readdir: (p) => fs.promises.readdir(p, { withFileTypes: true }),
};

/**
 * A test-only hook consulted before every syscall. Throw to fail the step; return `{ result }` to replace
 * the syscall's result without performing it (a short write returns `{ result: 0 }`); return undefined to
 * let it run. A hook may also block (a crash test pauses here and is killed). `perform` makes the request now,
 * synchronously, exactly as the port would without the hook (the native layer included), and returns its
 * result or throws its error: for a hook that records what each call did.
 */
export type FaultHook = (req: Req, perform: () => unknown) => { result: unknown } | undefined;

let faultHook: FaultHook | undefined;

/** Installs (or removes, with undefined) the fault hook. Not exported from the package entry. */
export function setFaultHook(hook: FaultHook | undefined): void {
  faultHook = hook;
}

/** The request, made synchronously by the native layer when it takes it, else by `fs`. */
function performSync(req: Req): unknown {
  const native = nativeBinding();
  if (native !== undefined) {
    const r = nativeSync(native, req);
    if (r !== NOT_NATIVE) return r;
  }
  const fn = syncOps[req.op] as (...a: readonly unknown[]) => unknown;
  return fn(...req.args);
}

function invokeSync(req: Req): unknown {
  const override = faultHook?.(req, () => performSync(req));
  if (override) return override.result;
  return performSync(req);
}

async function invokeAsync(req: Req): Promise<unknown> {
  const override = faultHook?.(req, () => performSync(req));
  if (override) return override.result;
  const native = nativeBinding();
  if (native !== undefined) {
    const r = nativeAsync(native, req);
    if (r !== NOT_NATIVE) return r;
  }
  const fn = asyncOps[req.op] as (...a: readonly unknown[]) => Promise<unknown>;
  return fn(...req.args);
}

/** Runs a plan with synchronous syscalls. */
export function runSync<T>(plan: Plan<T>): T {
  let step = plan.next();
  while (step.done !== true) {
    let value: unknown;
    try {
      value = invokeSync(step.value);
    } catch (err) {
      step = plan.throw(err);
      continue;
    }
    step = plan.next(value);
  }
  return step.value;
}

/** Runs a plan with asynchronous syscalls. */
export async function runAsync<T>(plan: Plan<T>): Promise<T> {
  let step = plan.next();
  while (step.done !== true) {
    let value: unknown;
    try {
      value = await invokeAsync(step.value);
    } catch (err) {
      step = plan.throw(err);
      continue;
    }
    step = plan.next(value);
  }
  return step.value;
}

/** Flags, guarded for platforms that lack them. */
export const O = {
  RDONLY: fs.constants.O_RDONLY,
  WRONLY: fs.constants.O_WRONLY,
  RDWR: fs.constants.O_RDWR,
  CREAT: fs.constants.O_CREAT,
  EXCL: fs.constants.O_EXCL,
  APPEND: fs.constants.O_APPEND,
  TRUNC: fs.constants.O_TRUNC,
  NOFOLLOW: (fs.constants as Partial<typeof fs.constants>).O_NOFOLLOW ?? 0,
  DIRECTORY: (fs.constants as Partial<typeof fs.constants>).O_DIRECTORY ?? 0,
  NONBLOCK: (fs.constants as Partial<typeof fs.constants>).O_NONBLOCK ?? 0,
} as const;
