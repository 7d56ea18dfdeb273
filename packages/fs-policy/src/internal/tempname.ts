/**
 * Names of this package's temp and rollback files: `.<target>.<pid>-<pidns>.<12 hex>.tmp|bak`.
 *
 * The pid namespace travels with the pid: a sweeper only trusts a pid it can see, i.e. one from its own
 * namespace (a writer in a container sharing the volume has pids that mean nothing here). The name always
 * fits NAME_MAX (255 bytes): a long target is cut, on a UTF-8 boundary, to make room for the suffix.
 */
import { randomFillSync } from 'node:crypto';
import { pidNamespace } from './anchor.js';

const NAME_MAX = 255;

/**
 * The name pattern: target, pid, optional pid namespace, 12 hex, type. `s`: targets may contain newlines.
 * Names written by earlier versions (no namespace) still match.
 */
export const TEMP_FILE_PATTERN = /^\.(.+)\.(\d+)(?:-(\d+))?\.([0-9a-f]{12})\.(tmp|bak)$/s;

export interface ParsedTempName {
  /** The target's name (cut when the full name would not have fit NAME_MAX). */
  readonly target: string;
  readonly pid: number;
  /** The writer's pid namespace, or undefined when the name does not say (older writers, no procfs). */
  readonly pidns?: string;
  readonly type: 'tmp' | 'bak';
}

/** Parses this package's temp-file name, or returns null for any other name. */
export function parseTempName(name: string): ParsedTempName | null {
  const m = TEMP_FILE_PATTERN.exec(name);
  if (m === null) return null;
  const parsed = { target: m[1] ?? '', pid: Number(m[2]), type: m[5] === 'bak' ? ('bak' as const) : ('tmp' as const) };
  return m[3] === undefined ? parsed : { ...parsed, pidns: m[3] };
}

/** Cuts `text` to at most `max` UTF-8 bytes without splitting a character. */
function cutUtf8(text: string, max: number): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= max) return text;
  let end = max;
  while (end > 0 && ((buf[end] ?? 0) & 0xc0) === 0x80) end--; // step back to a character boundary
  return buf.subarray(0, end).toString('utf8');
}

let writerTag: string | undefined;

/** `<pid>-<pidns>` of this process, computed once (reading `process.pid` is a syscall each time). */
function tag(): string {
  if (writerTag === undefined) {
    const ns = pidNamespace();
    writerTag = `${String(process.pid)}${ns === null ? '' : `-${ns}`}`;
  }
  return writerTag;
}

/**
 * Random bytes for names, drawn from the CSPRNG 4 KiB at a time: the same unpredictable bytes as one call per
 * name (a member of the service group must not guess the next temp name), without a `getrandom` (and the
 * `getpid` of its fork check) per write.
 */
const pool = Buffer.alloc(4096);
let used = pool.length;

function randomHex6(): string {
  if (used + 6 > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  const hex = pool.toString('hex', used, used + 6); // each byte is handed out once
  used += 6;
  return hex;
}

/** A fresh temp (or rollback) name for `target` (a single name, not a path). */
export function tempNameFor(target: string, suffix: 'tmp' | 'bak'): string {
  const tail = `.${tag()}.${randomHex6()}.${suffix}`;
  return `.${cutUtf8(target, NAME_MAX - 1 - Buffer.byteLength(tail))}${tail}`;
}
