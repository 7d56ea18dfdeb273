/**
 * The native form of a descriptor-relative step. The resolver names `name` inside the directory held by `fd` as
 * `/proc/self/fd/<fd>/<name>` ({@link atFd}); when the addon is in force, the filesystem port hands such a
 * request to the matching `*at` syscall on `fd` itself — the same lookup (one component, relative to the very
 * directory the descriptor holds) without the four extra components of the `/proc` walk. A link whose source is a
 * descriptor — an open file with no name, `O_TMPFILE` — is the addon's `linkFd`. Anything else (a path the
 * operator gave, `/proc/self/fd/<fd>` alone, a multi-component name) keeps the `fs` call.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { getSystemErrorMap } from 'node:util';
import type { NativeBinding, NativeStat } from '../native.js';
import type { Req } from './io.js';

const AT = /^\/proc\/self\/fd\/(\d{1,9})\/([^/]+)$/u;
const SELF = /^\/proc\/self\/fd\/(\d{1,9})$/u;

/**
 * The held directory itself, for an open with `O_DIRECTORY` of `/proc/self/fd/<fd>` (the re-open of an `O_PATH`
 * directory for fsync or a listing, or `O_TMPFILE`, which includes `O_DIRECTORY`: a file with no name in it):
 * `openat(fd, ".")` reaches the same directory. Never the re-open of a file.
 */
function parseSelfDir(p: unknown, flags: unknown): { fd: number; name: string } | undefined {
  if (typeof p !== 'string' || typeof flags !== 'number' || (flags & fs.constants.O_DIRECTORY) === 0) return undefined;
  const m = SELF.exec(p);
  return m === null ? undefined : { fd: Number(m[1]), name: '.' };
}

/** `{ fd, name }` when `p` names one component inside a held descriptor, else undefined. */
export function parseAt(p: unknown): { fd: number; name: string } | undefined {
  if (typeof p !== 'string') return undefined;
  const m = AT.exec(p);
  if (m === null) return undefined;
  const name = m[2] ?? '';
  if (name === '.' || name === '..') return undefined;
  return { fd: Number(m[1]), name };
}

/** A `fs.Stats` built from the addon's `fstatat` (every field the package reads, and the type tests). */
class NativeStats {
  readonly dev: number;
  readonly ino: number;
  readonly mode: number;
  readonly nlink: number;
  readonly uid: number;
  readonly gid: number;
  readonly rdev: number;
  readonly size: number;
  readonly blksize: number;
  readonly blocks: number;
  readonly atimeMs: number;
  readonly mtimeMs: number;
  readonly ctimeMs: number;
  readonly birthtimeMs: number;
  constructor(s: NativeStat) {
    this.dev = s.dev;
    this.ino = s.ino;
    this.mode = s.mode;
    this.nlink = s.nlink;
    this.uid = s.uid;
    this.gid = s.gid;
    this.rdev = s.rdev;
    this.size = s.size;
    this.blksize = s.blksize;
    this.blocks = s.blocks;
    this.atimeMs = s.atimeMs;
    this.mtimeMs = s.mtimeMs;
    this.ctimeMs = s.ctimeMs;
    this.birthtimeMs = 0;
  }
  private type(): number {
    return this.mode & fs.constants.S_IFMT;
  }
  isFile(): boolean {
    return this.type() === fs.constants.S_IFREG;
  }
  isDirectory(): boolean {
    return this.type() === fs.constants.S_IFDIR;
  }
  isSymbolicLink(): boolean {
    return this.type() === fs.constants.S_IFLNK;
  }
  isFIFO(): boolean {
    return this.type() === fs.constants.S_IFIFO;
  }
  isSocket(): boolean {
    return this.type() === fs.constants.S_IFSOCK;
  }
  isBlockDevice(): boolean {
    return this.type() === fs.constants.S_IFBLK;
  }
  isCharacterDevice(): boolean {
    return this.type() === fs.constants.S_IFCHR;
  }
  get atime(): Date {
    return new Date(this.atimeMs);
  }
  get mtime(): Date {
    return new Date(this.mtimeMs);
  }
  get ctime(): Date {
    return new Date(this.ctimeMs);
  }
  get birthtime(): Date {
    return new Date(0);
  }
}

/** Converts the addon's stat into what `fs.lstatSync` returns. */
export function toStats(s: NativeStat): fs.Stats {
  const st: unknown = new NativeStats(s);
  return st as fs.Stats;
}

/** Marks a request the native layer does not take (the `fs` call runs instead). */
export const NOT_NATIVE: unique symbol = Symbol('not native');

let made = 0;

/** How many steps the native layer has made in this process (tests prove with it which layer ran). */
export function nativeStepCount(): number {
  return made;
}

let systemErrors: Map<number, [string, string]> | undefined;

/**
 * Gives a failed native step the shape of the `fs` error the same step by path would have had: libuv's message,
 * the `fs` syscall name and the `/proc/self/fd/<fd>/<name>` path (and `dest`), so that messages, codes and the
 * `FsPolicyError` mapping are the same in every mode. Argument errors (TypeError, RangeError) pass unchanged.
 */
function asFsError(thrown: unknown, req: Req): unknown {
  let err = thrown;
  if (err instanceof RangeError && (err as NodeJS.ErrnoException).code === 'ENAMETOOLONG') {
    // The kernel's answer to the same name: the addon refuses it before the call.
    err = Object.assign(new Error('ENAMETOOLONG'), { code: 'ENAMETOOLONG', errno: -os.constants.errno.ENAMETOOLONG });
  }
  const e = err as NodeJS.ErrnoException;
  if (!(err instanceof Error) || typeof e.errno !== 'number' || typeof e.code !== 'string' || err.name !== 'Error') return err;
  systemErrors ??= getSystemErrorMap();
  const text = systemErrors.get(e.errno)?.[1] ?? err.message;
  const [source, to] = req.args;
  // The open file a link names is shown as its descriptor path (what `linkFd` follows without AT_EMPTY_PATH).
  const from =
    req.op === 'openBeneath' ? `/proc/self/fd/${String(source)}/${String(to)}` : typeof source === 'number' ? `/proc/self/fd/${String(source)}` : source;
  const two = req.op === 'rename' || req.op === 'link';
  e.syscall = req.op;
  e.path = String(from);
  if (two) (e as { dest?: string }).dest = String(to);
  err.message = `${e.code}: ${text}, ${req.op} '${String(from)}'${two ? ` -> '${String(to)}'` : ''}`;
  return err;
}

/** Runs `req` through the addon when it is a descriptor-relative step, synchronously. */
export function nativeSync(b: NativeBinding, req: Req): unknown {
  let r: unknown;
  try {
    r = nativeSyncStep(b, req);
  } catch (err) {
    made++;
    throw asFsError(err, req);
  }
  if (r !== NOT_NATIVE) made++;
  return r;
}

/** `openat2` resolve bits of {@link Ops.openBeneath}: contained, no symlink followed, no magic link. */
function beneath(b: NativeBinding): number {
  return b.constants.RESOLVE_BENEATH | b.constants.RESOLVE_NO_SYMLINKS | b.constants.RESOLVE_NO_MAGICLINKS;
}

function nativeSyncStep(b: NativeBinding, req: Req): unknown {
  const a = req.args;
  if (req.op === 'openBeneath') return b.openat2(a[0] as number, a[1] as string, a[2] as number, 0, beneath(b));
  if (req.op === 'rename' || req.op === 'link') {
    const to = parseAt(a[1]);
    if (req.op === 'link' && typeof a[0] === 'number') {
      if (to === undefined) return NOT_NATIVE;
      b.linkFd(a[0], to.fd, to.name);
      return undefined;
    }
    const from = parseAt(a[0]);
    if (from === undefined || to === undefined) return NOT_NATIVE;
    if (req.op === 'rename') b.renameat2(from.fd, from.name, to.fd, to.name, 0);
    else b.linkat(from.fd, from.name, to.fd, to.name, 0);
    return undefined;
  }
  const t = req.op === 'open' ? (parseAt(a[0]) ?? parseSelfDir(a[0], a[1])) : parseAt(a[0]);
  if (t === undefined) return NOT_NATIVE;
  switch (req.op) {
    case 'open':
      return b.openat(t.fd, t.name, a[1] as number, a[2] as number);
    case 'mkdir':
      b.mkdirat(t.fd, t.name, a[1] as number);
      return undefined;
    case 'lstat':
      return toStats(b.fstatat(t.fd, t.name));
    case 'readlink':
      return b.readlinkat(t.fd, t.name);
    case 'unlink':
      b.unlinkat(t.fd, t.name, 0);
      return undefined;
    default:
      return NOT_NATIVE;
  }
}

/** The same, on the thread pool. */
export function nativeAsync(b: NativeBinding, req: Req): Promise<unknown> | typeof NOT_NATIVE {
  const r = nativeAsyncStep(b, req);
  if (r === NOT_NATIVE) return r;
  made++;
  return r.catch((err: unknown) => {
    throw asFsError(err, req);
  });
}

function nativeAsyncStep(b: NativeBinding, req: Req): Promise<unknown> | typeof NOT_NATIVE {
  const a = req.args;
  if (req.op === 'openBeneath') return b.openat2Async(a[0] as number, a[1] as string, a[2] as number, 0, beneath(b));
  if (req.op === 'rename' || req.op === 'link') {
    const to = parseAt(a[1]);
    if (req.op === 'link' && typeof a[0] === 'number') return to === undefined ? NOT_NATIVE : b.linkFdAsync(a[0], to.fd, to.name).then(() => undefined);
    const from = parseAt(a[0]);
    if (from === undefined || to === undefined) return NOT_NATIVE;
    return req.op === 'rename' ? b.renameat2Async(from.fd, from.name, to.fd, to.name, 0) : b.linkatAsync(from.fd, from.name, to.fd, to.name, 0);
  }
  const t = req.op === 'open' ? (parseAt(a[0]) ?? parseSelfDir(a[0], a[1])) : parseAt(a[0]);
  if (t === undefined) return NOT_NATIVE;
  switch (req.op) {
    case 'open':
      return b.openatAsync(t.fd, t.name, a[1] as number, a[2] as number);
    case 'mkdir':
      return b.mkdiratAsync(t.fd, t.name, a[1] as number);
    case 'lstat':
      return b.fstatatAsync(t.fd, t.name).then(toStats);
    case 'readlink':
      return b.readlinkatAsync(t.fd, t.name);
    case 'unlink':
      return b.unlinkatAsync(t.fd, t.name, 0);
    default:
      return NOT_NATIVE;
  }
}
