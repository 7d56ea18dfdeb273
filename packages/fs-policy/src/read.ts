import type * as fs from 'node:fs';
import * as path from 'node:path';
import { errnoCode, FsPolicyError, toPolicyError } from './errors.js';
import { call, O, type Plan, runAsync, runSync } from './internal/io.js';
import { bestEffort, op } from './internal/steps.js';
import { checkRegular } from './internal/verify.js';

export interface ReadRegularOptions {
  /** Refuse files larger than this many bytes (ETOO_LARGE) instead of reading them (default 16 MiB). */
  maxBytes?: number;
  /** Follow a symlink at the last component (default false: a link is refused with ESYMLINK). */
  follow?: boolean;
}

export interface RegularFile {
  readonly path: string;
  readonly data: Buffer;
  /** `fstat` of the descriptor that was read. */
  readonly stat: fs.Stats;
}

const DEFAULT_MAX = 16 * 1024 * 1024;

/** `absent: true`: a missing file (ENOENT, ENOTDIR) is `undefined`, not an error (no error object is built). */
function readPlan(file: string, options: ReadRegularOptions): Plan<RegularFile>;
function readPlan(file: string, options: ReadRegularOptions, absent: true): Plan<RegularFile | undefined>;
function* readPlan(file: string, options: ReadRegularOptions, absent = false): Plan<RegularFile | undefined> {
  const target = path.resolve(file);
  const max = options.maxBytes ?? DEFAULT_MAX;
  // O_NONBLOCK: opening a FIFO never waits for a writer, and fstat refuses it before any read.
  const flags = O.RDONLY | O.NONBLOCK | (options.follow === true ? 0 : O.NOFOLLOW);
  let fd: number;
  try {
    fd = yield* call('open', target, 'open', target, flags, 0);
  } catch (err) {
    const code = errnoCode(err);
    if (absent && (code === 'ENOENT' || code === 'ENOTDIR')) return undefined;
    if (code === 'ELOOP') {
      throw new FsPolicyError({ code: 'ESYMLINK', step: 'open', path: target, message: `${target} is a symbolic link; refusing to read through it`, cause: err });
    }
    if (code === 'ENXIO') {
      throw new FsPolicyError({ code: 'ENOTREGULAR', step: 'open', path: target, message: `${target} is not a regular file (a socket)`, cause: err });
    }
    throw toPolicyError(err, 'open', target, `open ${target}`);
  }
  try {
    const st = yield* op('read', target, 'fstat', fd);
    checkRegular(target, st, 'open');
    if (st.size > max) {
      throw new FsPolicyError({
        code: 'ETOO_LARGE',
        step: 'read',
        path: target,
        message: `${target} is ${String(st.size)} bytes, more than the ${String(max)} read for it`,
      });
    }
    // Read up to one byte past the limit: a file that grew since fstat is still caught.
    const buf = Buffer.allocUnsafe(Math.min(max + 1, Math.max(st.size + 1, 4096)));
    let total = 0;
    for (;;) {
      if (total === buf.length) break;
      const n = yield* op('read', target, 'read', fd, buf, total, buf.length - total, null);
      if (n === 0) break;
      total += n;
    }
    if (total > max) {
      throw new FsPolicyError({ code: 'ETOO_LARGE', step: 'read', path: target, message: `${target} grew past ${String(max)} bytes while it was read` });
    }
    return { path: target, data: buf.subarray(0, total), stat: st };
  } finally {
    yield* bestEffort([], 'close', target, 'close', fd);
  }
}

/**
 * Reads a small file that another uid may have replaced: never blocks (a FIFO, socket or device planted under
 * the name is refused after `fstat`, before any read), refuses a symlink unless `follow`, and refuses a file
 * over `maxBytes`. What is returned is what the checked descriptor held.
 */
export async function readRegularFile(file: string, options: ReadRegularOptions = {}): Promise<RegularFile> {
  return runAsync(readPlan(file, options));
}

/** Synchronous form of {@link readRegularFile}. */
export function readRegularFileSync(file: string, options: ReadRegularOptions = {}): RegularFile {
  return runSync(readPlan(file, options));
}

/**
 * {@link readRegularFileSync} for a file whose absence is ordinary (a marker): `undefined` when it does not
 * exist, every other refusal thrown as usual.
 */
export function readRegularFileIfExistsSync(file: string, options: ReadRegularOptions = {}): RegularFile | undefined {
  return runSync(readPlan(file, options, true));
}
