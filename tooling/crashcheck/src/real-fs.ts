/**
 * The recorder's own access to the filesystem: the real `node:fs` functions (taken before any interposition, so
 * the recorder is never recorded), the flags it recognises, and each syscall made as fs-policy's synchronous
 * driver makes it.
 */
import * as fs from 'node:fs';

/** The real functions, taken before any interposition (the recorder itself must never be recorded). */
export const R = {
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

export const C = fs.constants;
export const O_PATH = 0o10000000;
/** Linux's O_TMPFILE: __O_TMPFILE (the same bit on every architecture) with the architecture's O_DIRECTORY. */
export const O_TMPFILE = 0o20000000 | C.O_DIRECTORY;

export function octal(n: unknown): string {
  return typeof n === 'number' ? `0o${n.toString(8)}` : String(n);
}

export function printable(args: readonly unknown[]): string {
  return args
    .map((a) => {
      if (a instanceof Uint8Array) return `<${String(a.length)} bytes>`;
      if (typeof a === 'string') return JSON.stringify(a);
      if (typeof a === 'number') return String(a);
      return String(a);
    })
    .join(', ');
}

export function errCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : err instanceof Error ? err.message : String(err);
}

/** fs.openSync's string flags, as numbers (the ones a protocol may use). */
export function numericFlags(flags: fs.OpenMode | undefined): number {
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

/** The syscall itself, as fs-policy's synchronous driver makes it. */
export function callFs(op: string, a: readonly unknown[]): unknown {
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
    case 'openBeneath':
      // The model has no multi-component lookup: the resolver then walks one component at a time (its answer
      // to any failure of this step), and every level is an operation the model knows.
      throw Object.assign(new Error('ENOSYS: crashcheck models lookups one component at a time'), { code: 'ENOSYS', errno: -38, syscall: 'openat2' });
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
