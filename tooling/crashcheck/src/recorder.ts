/**
 * The recording driver. It sees every syscall a protocol makes in two ways:
 * - through `@hermes/fs-policy`'s fault port: a hook that performs each requested syscall itself and returns
 *   `{ result }`, so it sees the request, its arguments and its result (fs-policy primitives, sync and async);
 * - by interposing on `node:fs`'s synchronous functions (`syncBuiltinESMExports`), for code that calls
 *   `node:fs` directly (the gateway's recovery pass).
 * Each syscall is logged, and the ones that change the checked tree become model operations. Names reached as
 * `/proc/self/fd/<fd>/<name>` are mapped back by `stat`ing the held directory; descriptors are mapped to
 * their inodes (`fstat`) and paths (`readlink /proc/self/fd/<fd>`) when they are opened.
 */
import * as fs from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import * as path from 'node:path';
import type { Req } from '@hermes/fs-policy/testing';
import { applyMeta, applyWrite } from './apply.js';
import { type MetaOp, type ModelOp, type Syscall, type WriteOp } from './ops.js';
import { cloneTree, differences, entries, snapshot, type Exclude, type Tree } from './tree.js';

/** The real functions, taken before any interposition (the recorder itself must never be recorded). */
const R = {
  lstatSync: fs.lstatSync,
  statSync: fs.statSync,
  fstatSync: fs.fstatSync,
  openSync: fs.openSync,
  closeSync: fs.closeSync,
  writeSync: fs.writeSync,
  readSync: fs.readSync,
  fsyncSync: fs.fsyncSync,
  fdatasyncSync: fs.fdatasyncSync,
  ftruncateSync: fs.ftruncateSync,
  fchmodSync: fs.fchmodSync,
  chmodSync: fs.chmodSync,
  fchownSync: fs.fchownSync,
  chownSync: fs.chownSync,
  linkSync: fs.linkSync,
  renameSync: fs.renameSync,
  unlinkSync: fs.unlinkSync,
  rmdirSync: fs.rmdirSync,
  mkdirSync: fs.mkdirSync,
  readlinkSync: fs.readlinkSync,
  realpathSync: fs.realpathSync,
  readdirSync: fs.readdirSync,
  writeFileSync: fs.writeFileSync,
};

const C = fs.constants;
const O_PATH = 0o10000000;

interface Fd {
  readonly ino: number;
  readonly dir: boolean;
  readonly append: boolean;
  readonly path: string;
  pos: number;
}

/** Everything a run produced: the syscall log, the model operations, and the tree before and after. */
export interface Recording {
  readonly root: string;
  readonly initial: Tree;
  readonly final: Tree;
  readonly syscalls: readonly Syscall[];
  readonly ops: readonly ModelOp[];
  /** A name for every inode the run touched, for reports. */
  readonly names: ReadonlyMap<number, string>;
  /**
   * What the model cannot stand behind: a mutation outside the checked tree, an in-place overwrite, a
   * difference between the replayed model and the real tree after the run (an operation the recorder missed).
   */
  readonly problems: readonly string[];
}

function octal(n: unknown): string {
  return typeof n === 'number' ? `0o${n.toString(8)}` : String(n);
}

function printable(args: readonly unknown[]): string {
  return args
    .map((a) => {
      if (a instanceof Uint8Array) return `<${String(a.length)} bytes>`;
      if (typeof a === 'string') return JSON.stringify(a);
      if (typeof a === 'number') return String(a);
      return String(a);
    })
    .join(', ');
}

function errCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : err instanceof Error ? err.message : String(err);
}

/** fs.openSync's string flags, as numbers (the ones a protocol may use). */
function numericFlags(flags: fs.OpenMode | undefined): number {
  if (flags === undefined) return C.O_RDONLY;
  if (typeof flags === 'number') return flags;
  const table: Record<string, number> = {
    r: C.O_RDONLY,
    rs: C.O_RDONLY | C.O_SYNC,
    'r+': C.O_RDWR,
    w: C.O_TRUNC | C.O_CREAT | C.O_WRONLY,
    wx: C.O_TRUNC | C.O_CREAT | C.O_WRONLY | C.O_EXCL,
    'w+': C.O_TRUNC | C.O_CREAT | C.O_RDWR,
    'wx+': C.O_TRUNC | C.O_CREAT | C.O_RDWR | C.O_EXCL,
    a: C.O_APPEND | C.O_CREAT | C.O_WRONLY,
    ax: C.O_APPEND | C.O_CREAT | C.O_WRONLY | C.O_EXCL,
    'a+': C.O_APPEND | C.O_CREAT | C.O_RDWR,
    'ax+': C.O_APPEND | C.O_CREAT | C.O_RDWR | C.O_EXCL,
  };
  const n = table[flags];
  if (n === undefined) throw new Error(`crashcheck: open flags ${JSON.stringify(flags)} are not modelled`);
  return n;
}

export interface RecorderOptions {
  /** Paths (relative to the root) that are not part of the model (e.g. the SQLite files). */
  readonly exclude?: Exclude;
  /** Mutation testing: requests for which this returns true are dropped (not performed, not recorded). */
  readonly drop?: (req: Req) => boolean;
  /** Mutation testing: requests are changed before they are performed. */
  readonly rewrite?: (req: Req) => Req;
}

export class Recorder {
  readonly root: string;
  readonly #initial: Tree;
  readonly #live: Tree;
  readonly #exclude: Exclude;
  readonly #drop: ((req: Req) => boolean) | undefined;
  readonly #rewrite: ((req: Req) => Req) | undefined;
  readonly #syscalls: Syscall[] = [];
  readonly #ops: ModelOp[] = [];
  readonly #problems: string[] = [];
  readonly #fds = new Map<number, Fd>();
  readonly #names = new Map<number, string>();
  #dropped = 0;

  constructor(root: string, options: RecorderOptions = {}) {
    this.root = fs.realpathSync(root);
    this.#exclude = options.exclude ?? (() => false);
    this.#drop = options.drop;
    this.#rewrite = options.rewrite;
    this.#initial = snapshot(this.root, this.#exclude);
    this.#live = cloneTree(this.#initial);
    this.#names.set(this.#initial.root, '.');
    for (const e of entries(this.#initial)) if (!this.#names.has(e.ino)) this.#names.set(e.ino, e.rel);
  }

  /** How many requests the mutation dropped or changed (a mutation that touches nothing is an error). */
  get dropped(): number {
    return this.#dropped;
  }

  /** A promise the protocol made to its caller, at this point of the log. */
  mark(label: string, data: unknown = null): void {
    this.#ops.push({ kind: 'mark', label, data, sys: -1 });
  }

  /** The store was asked to commit transaction `id`. */
  dbBegin(id: number): void {
    this.#ops.push({ kind: 'db-begin', id, sys: -1 });
  }

  /** The store checkpointed its write-ahead log (recorded; no effect in the model). */
  dbCheckpoint(complete: boolean): void {
    this.#ops.push({ kind: 'db-checkpoint', complete, sys: -1 });
  }

  /** The store's commit of transaction `id` returned. */
  dbCommit(id: number, payload: unknown): void {
    this.#ops.push({ kind: 'db-commit', id, payload, sys: -1 });
  }

  /** The fault-port hook: performs the request itself and returns its result (see @hermes/fs-policy/testing). */
  readonly hook = (request: Req): { result: unknown } => {
    const req = this.#rewrite?.(request) ?? request;
    if (req !== request) this.#dropped++;
    if (this.#drop?.(req) === true) {
      this.#dropped++;
      this.#log(req.op, req.step, req.path, `DROPPED: ${printable(req.args)}`, 'not performed (mutation)');
      return { result: undefined };
    }
    return { result: this.#perform(req.op, req.step, req.path, req.args) };
  };

  /** Interposes on node:fs's synchronous functions until the returned function is called. */
  interposeFs(): () => void {
    const require = createRequire(import.meta.url);
    const cjs = require('node:fs') as Record<string, unknown>;
    const saved = new Map<string, unknown>();
    const wrap = (name: string, fn: (...a: unknown[]) => unknown): void => {
      saved.set(name, cjs[name]);
      cjs[name] = fn;
    };
    const p = (a: unknown): string => (typeof a === 'string' ? a : a instanceof URL ? a.pathname : String(a));
    wrap('openSync', (file, flags, mode) => this.#perform('open', 'fs', p(file), [p(file), numericFlags(flags as fs.OpenMode | undefined), (mode) ?? 0o666]));
    wrap('closeSync', (fd) => this.#perform('close', 'fs', this.#fdPath(fd as number), [fd]));
    wrap('writeSync', (fd, buffer, a, b, position) => {
      const f = fd as number;
      let bytes: Uint8Array;
      let pos: unknown;
      if (typeof buffer === 'string') {
        bytes = Buffer.from(buffer, typeof b === 'string' ? (b as BufferEncoding) : 'utf8');
        pos = a;
      } else {
        const buf = buffer as Uint8Array;
        const offset = typeof a === 'number' ? a : 0;
        const length = typeof b === 'number' ? b : buf.length - offset;
        bytes = buf.subarray(offset, offset + length);
        pos = position;
      }
      if (pos !== undefined && pos !== null) throw new Error('crashcheck: positional writeSync is not modelled');
      return this.#perform('write', 'fs', this.#fdPath(f), [f, bytes, 0, bytes.length]);
    });
    wrap('fsyncSync', (fd) => this.#perform('fsync', 'fs', this.#fdPath(fd as number), [fd]));
    wrap('fdatasyncSync', (fd) => this.#perform('fsync', 'fs', this.#fdPath(fd as number), [fd]));
    wrap('ftruncateSync', (fd, len) => this.#perform('ftruncate', 'fs', this.#fdPath(fd as number), [fd, (len) ?? 0]));
    wrap('fchmodSync', (fd, mode) => this.#perform('fchmod', 'fs', this.#fdPath(fd as number), [fd, mode]));
    wrap('chmodSync', (file, mode) => this.#perform('chmod', 'fs', p(file), [p(file), mode]));
    wrap('fchownSync', (fd, uid, gid) => this.#perform('fchown', 'fs', this.#fdPath(fd as number), [fd, uid, gid]));
    wrap('linkSync', (a, b) => this.#perform('link', 'fs', p(b), [p(a), p(b)]));
    wrap('renameSync', (a, b) => this.#perform('rename', 'fs', p(b), [p(a), p(b)]));
    wrap('unlinkSync', (file) => this.#perform('unlink', 'fs', p(file), [p(file)]));
    wrap('mkdirSync', (file, options) => {
      const o = options as fs.MakeDirectoryOptions | number | undefined;
      if (typeof o === 'object' && o.recursive === true) throw new Error('crashcheck: recursive mkdirSync is not modelled');
      const mode = typeof o === 'number' ? o : (o?.mode as number | undefined) ?? 0o777;
      return this.#perform('mkdir', 'fs', p(file), [p(file), mode]);
    });
    wrap('writeFileSync', (file, data, options) => {
      if (typeof file === 'number') throw new Error('crashcheck: writeFileSync on a descriptor is not modelled');
      const o: { encoding?: string | null; flag?: string; mode?: fs.Mode } =
        typeof options === 'string' ? { encoding: options } : ((options ?? {}));
      const bytes = typeof data === 'string' ? Buffer.from(data, (o.encoding ?? 'utf8') as BufferEncoding) : (data as Uint8Array);
      const fd = this.#perform('open', 'fs', p(file), [p(file), numericFlags(o.flag ?? 'w'), (o.mode) ?? 0o666]) as number;
      try {
        let off = 0;
        while (off < bytes.length) off += this.#perform('write', 'fs', p(file), [fd, bytes, off, bytes.length - off]) as number;
      } finally {
        this.#perform('close', 'fs', p(file), [fd]);
      }
    });
    for (const name of ['rmSync', 'rmdirSync', 'appendFileSync', 'copyFileSync', 'cpSync', 'truncateSync', 'symlinkSync', 'lchmodSync']) {
      wrap(name, () => {
        throw new Error(`crashcheck: node:fs ${name} is not modelled; the recording cannot account for it`);
      });
    }
    syncBuiltinESMExports();
    return () => {
      for (const [name, fn] of saved) cjs[name] = fn;
      syncBuiltinESMExports();
    };
  }

  /** Ends the recording: the real tree now must be the model replayed in full, or the recording missed something. */
  finish(): Recording {
    const final = snapshot(this.root, this.#exclude);
    const diff = differences(this.#live, final);
    const problems = [...this.#problems];
    if (diff.length > 0) problems.push(`the replayed model differs from the tree on disk (an operation was not recorded): ${diff.join('; ')}`);
    return { root: this.root, initial: this.#initial, final, syscalls: this.#syscalls, ops: this.#ops, names: this.#names, problems };
  }

  #fdPath(fd: number): string {
    return this.#fds.get(fd)?.path ?? `fd ${String(fd)}`;
  }

  #log(op: string, step: string, p: string, args: string, result: string): number {
    const seq = this.#syscalls.length;
    this.#syscalls.push({ seq, op, step, path: p, args, result });
    return seq;
  }

  #emit(op: ModelOp): void {
    this.#ops.push(op);
    if (op.kind === 'write') {
      const n = this.#live.nodes.get(op.ino);
      if (n?.kind === 'file' && op.offset < n.data.length) {
        this.#problems.push(`in-place overwrite of ${this.#names.get(op.ino) ?? String(op.ino)} at offset ${String(op.offset)} (the model covers appends only)`);
      }
      applyWrite(this.#live, op);
    } else if (op.kind !== 'fsync' && op.kind !== 'mark' && op.kind !== 'db-begin' && op.kind !== 'db-commit' && op.kind !== 'db-checkpoint') {
      applyMeta(this.#live, op);
      this.#nameAfter(op);
    }
  }

  #nameAfter(op: MetaOp): void {
    const at = (parent: number, name: string): string => {
      const base = this.#names.get(parent) ?? `<dir ${String(parent)}>`;
      return base === '.' ? name : `${base}/${name}`;
    };
    if (op.kind === 'mkdir' || op.kind === 'create') this.#names.set(op.ino, at(op.parent, op.name));
    else if (op.kind === 'rename') this.#names.set(op.ino, at(op.toParent, op.toName));
  }

  /** Is this inode part of the checked tree (now)? */
  #inside(ino: number): boolean {
    return this.#live.nodes.has(ino);
  }

  #lstat(p: string): fs.Stats | undefined {
    try {
      return R.lstatSync(p);
    } catch {
      return undefined;
    }
  }

  /** The inode of the directory that holds `p` (a `/proc/self/fd/<fd>/<name>` path resolves to the held directory). */
  #parentIno(p: string): number | undefined {
    try {
      return R.statSync(path.dirname(p)).ino;
    } catch {
      return undefined;
    }
  }

  #outside(what: string): void {
    this.#problems.push(`a change outside the checked tree: ${what}`);
  }

  /** Performs one syscall for real, logs it, and turns it into model operations. */
  #perform(op: string, step: string, p: string, args: readonly unknown[]): unknown {
    const a = args;
    // What must be seen before the call (what a name refers to before it is replaced or removed).
    let pre: { parent?: number | undefined; ino?: number | undefined; replaced?: number | undefined; fromParent?: number | undefined } = {};
    if (op === 'open') {
      const flags = a[1] as number;
      if ((flags & C.O_CREAT) !== 0) pre = { parent: this.#parentIno(a[0] as string), ino: this.#lstat(a[0] as string)?.ino };
    } else if (op === 'link') {
      pre = { ino: this.#lstat(a[0] as string)?.ino, parent: this.#parentIno(a[1] as string) };
    } else if (op === 'rename') {
      pre = {
        ino: this.#lstat(a[0] as string)?.ino,
        fromParent: this.#parentIno(a[0] as string),
        parent: this.#parentIno(a[1] as string),
        replaced: this.#lstat(a[1] as string)?.ino,
      };
    } else if (op === 'unlink') {
      pre = { ino: this.#lstat(a[0] as string)?.ino, parent: this.#parentIno(a[0] as string) };
    } else if (op === 'mkdir') {
      pre = { parent: this.#parentIno(a[0] as string) };
    }
    let writeAt = 0;
    if (op === 'write') {
      const f = this.#fds.get(a[0] as number);
      if (f !== undefined) writeAt = f.append ? R.fstatSync(a[0] as number).size : f.pos;
    }

    let result: unknown;
    const argText = op === 'open' ? `${JSON.stringify(a[0])}, flags ${octal(a[1])}, mode ${octal(a[2])}` : op === 'fchmod' || op === 'chmod' ? `${printable(a.slice(0, 1))}, ${octal(a[1])}` : printable(a);
    try {
      result = this.#call(op, a);
    } catch (err) {
      this.#log(op, step, p, argText, `error ${errCode(err)}`);
      throw err;
    }
    const sys = this.#log(op, step, p, argText, typeof result === 'number' || typeof result === 'string' ? String(result) : 'ok');

    switch (op) {
      case 'open': {
        const fd = result as number;
        const st = R.fstatSync(fd);
        const flags = a[1] as number;
        let real: string;
        try {
          real = R.readlinkSync(`/proc/self/fd/${String(fd)}`);
        } catch {
          real = a[0] as string;
        }
        this.#fds.set(fd, { ino: st.ino, dir: st.isDirectory(), append: (flags & C.O_APPEND) !== 0, path: real, pos: 0 });
        if ((flags & O_PATH) === O_PATH) break;
        if ((flags & C.O_CREAT) !== 0 && pre.ino === undefined) {
          if (pre.parent !== undefined && this.#inside(pre.parent)) {
            this.#emit({ kind: 'create', parent: pre.parent, name: path.basename(a[0] as string), ino: st.ino, mode: st.mode & 0o7777, sys });
          } else {
            this.#outside(`create ${real}`);
          }
        } else if ((flags & C.O_TRUNC) !== 0 && (flags & (C.O_WRONLY | C.O_RDWR)) !== 0 && this.#inside(st.ino)) {
          this.#emit({ kind: 'truncate', ino: st.ino, length: 0, sys });
        }
        break;
      }
      case 'close':
        this.#fds.delete(a[0] as number);
        break;
      case 'write': {
        const f = this.#fds.get(a[0] as number);
        const n = result as number;
        if (f === undefined || n <= 0) break;
        if (!this.#inside(f.ino)) {
          if (!f.path.startsWith('/dev/') && !f.path.startsWith('pipe:') && !f.path.startsWith('socket:')) this.#outside(`write to ${f.path}`);
          break;
        }
        const buf = a[1] as Uint8Array;
        const off = a[2] as number;
        const w: WriteOp = { kind: 'write', ino: f.ino, offset: writeAt, data: Buffer.from(buf.subarray(off, off + n)), sys };
        f.pos = writeAt + n;
        this.#emit(w);
        break;
      }
      case 'fsync': {
        const f = this.#fds.get(a[0] as number);
        if (f !== undefined && this.#inside(f.ino)) this.#emit({ kind: 'fsync', ino: f.ino, dir: f.dir, sys });
        break;
      }
      case 'ftruncate': {
        const f = this.#fds.get(a[0] as number);
        if (f !== undefined && this.#inside(f.ino)) this.#emit({ kind: 'truncate', ino: f.ino, length: a[1] as number, sys });
        break;
      }
      case 'fchmod': {
        const f = this.#fds.get(a[0] as number);
        if (f !== undefined && this.#inside(f.ino)) this.#emit({ kind: 'chmod', ino: f.ino, mode: R.fstatSync(a[0] as number).mode & 0o7777, sys });
        else if (f !== undefined) this.#outside(`fchmod ${f.path}`);
        break;
      }
      case 'chmod': {
        const st = R.statSync(a[0] as string);
        if (this.#inside(st.ino)) this.#emit({ kind: 'chmod', ino: st.ino, mode: st.mode & 0o7777, sys });
        else this.#outside(`chmod ${a[0] as string}`);
        break;
      }
      case 'link': {
        if (pre.ino !== undefined && pre.parent !== undefined && this.#inside(pre.parent)) {
          this.#emit({ kind: 'link', ino: pre.ino, parent: pre.parent, name: path.basename(a[1] as string), sys });
        } else {
          this.#outside(`link ${a[1] as string}`);
        }
        break;
      }
      case 'rename': {
        if (pre.ino !== undefined && pre.parent !== undefined && pre.fromParent !== undefined && this.#inside(pre.parent) && this.#inside(pre.fromParent)) {
          this.#emit({
            kind: 'rename',
            ino: pre.ino,
            fromParent: pre.fromParent,
            fromName: path.basename(a[0] as string),
            toParent: pre.parent,
            toName: path.basename(a[1] as string),
            replaced: pre.replaced,
            sys,
          });
        } else {
          this.#outside(`rename ${a[0] as string} -> ${a[1] as string}`);
        }
        break;
      }
      case 'unlink': {
        if (pre.ino !== undefined && pre.parent !== undefined && this.#inside(pre.parent)) {
          this.#emit({ kind: 'unlink', ino: pre.ino, parent: pre.parent, name: path.basename(a[0] as string), sys });
        } else {
          this.#outside(`unlink ${a[0] as string}`);
        }
        break;
      }
      case 'mkdir': {
        const st = R.lstatSync(a[0] as string);
        if (pre.parent !== undefined && this.#inside(pre.parent)) {
          this.#emit({ kind: 'mkdir', parent: pre.parent, name: path.basename(a[0] as string), ino: st.ino, mode: st.mode & 0o7777, sys });
        } else {
          this.#outside(`mkdir ${a[0] as string}`);
        }
        break;
      }
      default:
        break;
    }
    return result;
  }

  /** The syscall itself, as fs-policy's synchronous driver makes it. */
  #call(op: string, a: readonly unknown[]): unknown {
    switch (op) {
      case 'lstat':
        return R.lstatSync(a[0] as string);
      case 'stat':
        return R.statSync(a[0] as string);
      case 'mkdir':
        R.mkdirSync(a[0] as string, { mode: a[1] as number });
        return undefined;
      case 'open':
        return R.openSync(a[0] as string, a[1] as number, a[2] as number);
      case 'write':
        return R.writeSync(a[0] as number, a[1] as Uint8Array, a[2] as number, a[3] as number);
      case 'fchmod':
        R.fchmodSync(a[0] as number, a[1] as number);
        return undefined;
      case 'fchown':
        R.fchownSync(a[0] as number, a[1] as number, a[2] as number);
        return undefined;
      case 'chmod':
        R.chmodSync(a[0] as string, a[1] as number);
        return undefined;
      case 'read':
        return R.readSync(a[0] as number, a[1] as Uint8Array, a[2] as number, a[3] as number, a[4] as number | null);
      case 'fstat':
        return R.fstatSync(a[0] as number);
      case 'fsync':
        R.fsyncSync(a[0] as number);
        return undefined;
      case 'ftruncate':
        R.ftruncateSync(a[0] as number, a[1] as number);
        return undefined;
      case 'close':
        R.closeSync(a[0] as number);
        return undefined;
      case 'link':
        R.linkSync(a[0] as string, a[1] as string);
        return undefined;
      case 'rename':
        R.renameSync(a[0] as string, a[1] as string);
        return undefined;
      case 'unlink':
        R.unlinkSync(a[0] as string);
        return undefined;
      case 'readlink':
        return R.readlinkSync(a[0] as string);
      case 'realpath':
        return R.realpathSync(a[0] as string);
      case 'readdir':
        return R.readdirSync(a[0] as string, { withFileTypes: true });
      default:
        throw new Error(`crashcheck: the port asked for ${op}, which the recorder does not know`);
    }
  }
}
