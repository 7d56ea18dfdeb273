/** Recording code that calls `node:fs` directly: its synchronous functions, interposed for the duration of a run. */
import type * as fs from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { numericFlags } from './real-fs.js';

/** Performs one syscall, logs it and turns it into model operations (the recorder's). */
export type Perform = (op: string, step: string, p: string, args: readonly unknown[]) => unknown;

/** Interposes on node:fs's synchronous functions until the returned function is called. */
export function interposeFs(perform: Perform, fdPath: (fd: number) => string): () => void {
  const require = createRequire(import.meta.url);
  const cjs = require('node:fs') as Record<string, unknown>;
  const saved = new Map<string, unknown>();
  const wrap = (name: string, fn: (...a: unknown[]) => unknown): void => {
    saved.set(name, cjs[name]);
    cjs[name] = fn;
  };
  const p = (a: unknown): string => (typeof a === 'string' ? a : a instanceof URL ? a.pathname : String(a));
  wrap('openSync', (file, flags, mode) => perform('open', 'fs', p(file), [p(file), numericFlags(flags as fs.OpenMode | undefined), (mode) ?? 0o666]));
  wrap('closeSync', (fd) => perform('close', 'fs', fdPath(fd as number), [fd]));
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
    return perform('write', 'fs', fdPath(f), [f, bytes, 0, bytes.length]);
  });
  wrap('fsyncSync', (fd) => perform('fsync', 'fs', fdPath(fd as number), [fd]));
  wrap('fdatasyncSync', (fd) => perform('fsync', 'fs', fdPath(fd as number), [fd]));
  wrap('ftruncateSync', (fd, len) => perform('ftruncate', 'fs', fdPath(fd as number), [fd, (len) ?? 0]));
  wrap('fchmodSync', (fd, mode) => perform('fchmod', 'fs', fdPath(fd as number), [fd, mode]));
  wrap('chmodSync', (file, mode) => perform('chmod', 'fs', p(file), [p(file), mode]));
  wrap('fchownSync', (fd, uid, gid) => perform('fchown', 'fs', fdPath(fd as number), [fd, uid, gid]));
  wrap('linkSync', (a, b) => perform('link', 'fs', p(b), [p(a), p(b)]));
  wrap('renameSync', (a, b) => perform('rename', 'fs', p(b), [p(a), p(b)]));
  wrap('unlinkSync', (file) => perform('unlink', 'fs', p(file), [p(file)]));
  wrap('mkdirSync', (file, options) => {
    const o = options as fs.MakeDirectoryOptions | number | undefined;
    if (typeof o === 'object' && o.recursive === true) throw new Error('crashcheck: recursive mkdirSync is not modelled');
    const mode = typeof o === 'number' ? o : (o?.mode as number | undefined) ?? 0o777;
    return perform('mkdir', 'fs', p(file), [p(file), mode]);
  });
  wrap('writeFileSync', (file, data, options) => {
    if (typeof file === 'number') throw new Error('crashcheck: writeFileSync on a descriptor is not modelled');
    const o: { encoding?: string | null; flag?: string; mode?: fs.Mode } =
      typeof options === 'string' ? { encoding: options } : ((options ?? {}));
    const bytes = typeof data === 'string' ? Buffer.from(data, (o.encoding ?? 'utf8') as BufferEncoding) : (data as Uint8Array);
    const fd = perform('open', 'fs', p(file), [p(file), numericFlags(o.flag ?? 'w'), (o.mode) ?? 0o666]) as number;
    try {
      let off = 0;
      while (off < bytes.length) off += perform('write', 'fs', p(file), [fd, bytes, off, bytes.length - off]) as number;
    } finally {
      perform('close', 'fs', p(file), [fd]);
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
