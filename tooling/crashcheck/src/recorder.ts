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
import type * as fs from 'node:fs';
import * as path from 'node:path';
import type { Req } from '@hermes/fs-policy/testing';
import { applyMeta, applyWrite } from './apply.js';
import { interposeFs } from './interpose.js';
import { C, callFs, errCode, O_PATH, O_TMPFILE, octal, printable, R } from './real-fs.js';
import { type MetaOp, type ModelOp, type Syscall, unnamedName, type WriteOp } from './ops.js';
import { cloneTree, differences, entries, snapshot, type Exclude, type Tree } from './tree.js';

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

export interface RecorderOptions {
  /** Paths (relative to the root) that are not part of the model (e.g. the SQLite files). */
  readonly exclude?: Exclude;
  /** Mutation testing: requests for which this returns true are dropped (not performed, not recorded). */
  readonly drop?: (req: Req) => boolean;
  /** Mutation testing: requests are changed before they are performed. */
  readonly rewrite?: (req: Req) => Req;
  /**
   * Mutation testing: requests for which `hold` returns true are held back (answered `undefined`, not yet
   * performed) and performed, in order, right after the first later request for which `until` returns true.
   */
  readonly defer?: { readonly hold: (req: Req) => boolean; readonly until: (req: Req) => boolean };
  /**
   * Let `open(O_TMPFILE)` run (the protocol with an unnamed temp file, which needs fs-policy's native layer to be
   * named). Otherwise the recorder answers it EOPNOTSUPP, as a filesystem without unnamed files does, and the
   * protocol records its named temp file.
   */
  readonly tmpfile?: boolean;
}

export class Recorder {
  readonly root: string;
  readonly #initial: Tree;
  readonly #live: Tree;
  readonly #exclude: Exclude;
  readonly #drop: ((req: Req) => boolean) | undefined;
  readonly #rewrite: ((req: Req) => Req) | undefined;
  readonly #defer: RecorderOptions['defer'];
  readonly #held: Req[] = [];
  readonly #tmpfile: boolean;
  readonly #syscalls: Syscall[] = [];
  readonly #ops: ModelOp[] = [];
  readonly #problems: string[] = [];
  readonly #fds = new Map<number, Fd>();
  readonly #names = new Map<number, string>();
  #dropped = 0;

  constructor(root: string, options: RecorderOptions = {}) {
    this.root = R.realpathSync(root);
    this.#exclude = options.exclude ?? (() => false);
    this.#drop = options.drop;
    this.#rewrite = options.rewrite;
    this.#defer = options.defer;
    this.#tmpfile = options.tmpfile === true;
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

  /**
   * The fault-port hook: performs the request itself and returns its result (see @hermes/fs-policy/testing). A
   * link of an open file (its descriptor: an O_TMPFILE file) is made by the port (`perform`: the native layer),
   * which alone can name an open file.
   */
  readonly hook = (request: Req, perform?: () => unknown): { result: unknown } => {
    const req = this.#rewrite?.(request) ?? request;
    if (req !== request) this.#dropped++;
    if (this.#drop?.(req) === true) {
      this.#dropped++;
      this.#log(req.op, req.step, req.path, `DROPPED: ${printable(req.args)}`, 'not performed (mutation)');
      return { result: undefined };
    }
    if (this.#defer?.hold(req) === true) {
      this.#dropped++;
      this.#held.push(req);
      this.#log(req.op, req.step, req.path, `HELD BACK: ${printable(req.args)}`, 'performed later (mutation)');
      return { result: undefined };
    }
    if (!this.#tmpfile && req.op === 'open' && ((req.args[1] as number) & O_TMPFILE) === O_TMPFILE) {
      this.#log(req.op, req.step, req.path, `${JSON.stringify(req.args[0])}, flags ${octal(req.args[1])}`, 'error EOPNOTSUPP (no unnamed files: the named temp is recorded)');
      throw Object.assign(new Error('EOPNOTSUPP: operation not supported (crashcheck records the named temp)'), { code: 'EOPNOTSUPP', errno: -95 });
    }
    const result = this.#perform(req.op, req.step, req.path, req.args, perform);
    if (this.#held.length > 0 && this.#defer?.until(req) === true) {
      for (const h of this.#held.splice(0)) this.#perform(h.op, h.step, h.path, h.args);
    }
    return { result };
  };

  /** Interposes on node:fs's synchronous functions until the returned function is called. */
  interposeFs(): () => void {
    return interposeFs(
      (op, step, p, args) => this.#perform(op, step, p, args),
      (fd) => this.#fdPath(fd),
    );
  }

  /** Ends the recording: the real tree now must be the model replayed in full, or the recording missed something. */
  finish(): Recording {
    const final = snapshot(this.root, this.#exclude);
    const diff = differences(this.#live, final);
    const problems = [...this.#problems];
    if (this.#held.length > 0) problems.push(`${String(this.#held.length)} held-back request(s) were never performed (the mutation's release point never came)`);
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
    else if (op.kind === 'tmpfile') this.#names.set(op.ino, unnamedName(this.#names.get(op.dir) ?? `<dir ${String(op.dir)}>`));
    else if (op.kind === 'link' && this.#names.get(op.ino)?.startsWith('<unnamed ') === true) this.#names.set(op.ino, at(op.parent, op.name));
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
  #perform(op: string, step: string, p: string, args: readonly unknown[], perform?: () => unknown): unknown {
    const a = args;
    // A link whose source is a descriptor names the open file it holds (an O_TMPFILE file).
    const linkedFd = op === 'link' && typeof a[0] === 'number' ? a[0] : undefined;
    // What must be seen before the call (what a name refers to before it is replaced or removed).
    let pre: { parent?: number | undefined; ino?: number | undefined; replaced?: number | undefined; fromParent?: number | undefined } = {};
    if (op === 'open') {
      const flags = a[1] as number;
      if ((flags & C.O_CREAT) !== 0) pre = { parent: this.#parentIno(a[0] as string), ino: this.#lstat(a[0] as string)?.ino };
    } else if (op === 'link') {
      // The source of a link of an open file is the file its descriptor holds, not the /proc link itself.
      const ino = linkedFd === undefined ? this.#lstat(a[0] as string)?.ino : this.#fds.get(linkedFd)?.ino;
      pre = { ino, parent: this.#parentIno(a[1] as string) };
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
      if (linkedFd !== undefined) {
        if (perform === undefined) throw new Error(`crashcheck: a link of an open file (fd ${String(linkedFd)}) is made by the port, which did not offer it`);
        result = perform();
      } else {
        result = callFs(op, a);
      }
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
        if ((flags & O_TMPFILE) === O_TMPFILE) {
          // A file with no name in the directory the path reaches: data without an entry, until a link.
          const dir = R.statSync(a[0] as string).ino;
          if (this.#inside(dir)) this.#emit({ kind: 'tmpfile', dir, ino: st.ino, mode: st.mode & 0o7777, sys });
          else this.#outside(`O_TMPFILE file in ${real}`);
        } else if ((flags & C.O_CREAT) !== 0 && pre.ino === undefined) {
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
}
