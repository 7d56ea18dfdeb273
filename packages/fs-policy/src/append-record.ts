/**
 * Writing one record (or one group-committed batch) to an open append target.
 *
 * Every record starts on a new line. Before writing, the writer looks at the file's last byte through its own
 * descriptor (a pread at size - 1); when it is not a newline — a record cut short by a full device, by this
 * or another writer, or a line someone left unterminated — a newline is written first, in the same write(2).
 * Readers skip blank lines, so the worst outcome of the check is an empty line, never two records glued.
 *
 * Concurrency (O_APPEND): the check and the write are two syscalls. Another appender's whole record landing
 * in between ends in a newline, so the verdict stays right. Two writers that both see an unterminated end
 * both prefix a newline: one blank line; so does a writer that sees another's large record mid-copy and
 * stalled there for longer than its re-checks (see needsNewline). The residual case: another writer's record
 * is cut short (its device filled) between this writer's check and its write — then this record follows that
 * fragment on its line. That writer's error names the torn record, and it terminates the fragment itself when
 * the device lets it.
 */
import { FsPolicyError, toPolicyError } from './errors.js';
import { selfFd } from './internal/anchor.js';
import { call, type Plan } from './internal/io.js';
import { isInside, op } from './internal/steps.js';

/** What one writer knows about the end of its file between records. */
export interface Tail {
  /** False when the descriptor is write-only: the last byte cannot be read, so a newline is put first. */
  readonly readable: boolean;
  /**
   * The file's size right after this writer's last record, when that record ended in a newline and was
   * whole; undefined otherwise. A file still that size ends with that newline: no read is needed.
   */
  cleanEnd: number | undefined;
}

export interface RecordTarget {
  readonly fd: number;
  readonly file: string;
  /** fsync after the write. */
  readonly sync: boolean;
  /** The home's real path the file must still be inside after the write (managed homes), or undefined. */
  readonly watch: string | undefined;
  readonly tail: Tail;
}

const NEWLINE = Buffer.from('\n');
const LF = 0x0a;

/** How often the last byte is looked at again while the file keeps growing (other writers at work). */
const SETTLE_TRIES = 8;
const NOTHING = Buffer.alloc(0);

/**
 * True when a newline must come before the next record: the file is not empty and its last byte is not a
 * newline (or cannot be read). `size` is the file's size, or undefined to take it from the descriptor now.
 *
 * Another writer's record larger than a page grows the file page by page while it is copied in, so a last
 * byte inside someone's record can be seen mid-write. Such a byte is not taken at its word: a write of
 * nothing waits for the write in progress (the kernel serialises writes to one file under the inode lock),
 * and only a size that did not change across it is final — a fragment left by a failed write stays put.
 */
function* needsNewline(t: RecordTarget, size: number | undefined): Plan<{ size: number; prefix: boolean }> {
  let now = size ?? (yield* op('write', t.file, 'fstat', t.fd)).size;
  if (now === 0 || now === t.tail.cleanEnd) return { size: now, prefix: false };
  if (!t.tail.readable) return { size: now, prefix: true };
  const last = Buffer.alloc(1);
  for (let tries = 1; ; tries++) {
    const n = yield* op('write', t.file, 'read', t.fd, last, 0, 1, now - 1);
    // n === 0: the file shrank meanwhile (only its owner can truncate it); nothing to continue.
    if (n !== 1 || last[0] === LF) return { size: now, prefix: false };
    if (tries >= SETTLE_TRIES) return { size: now, prefix: true };
    yield* op('write', t.file, 'write', t.fd, NOTHING, 0, 0);
    const again = (yield* op('write', t.file, 'fstat', t.fd)).size;
    if (again === now) return { size: now, prefix: true };
    now = again;
  }
}

/**
 * One write(2) per record: with O_APPEND the kernel places it whole at the end, so concurrent writers never
 * interleave inside a line. A short write (the device refused the rest; libuv drops the errno after partial
 * progress) never truncates the file — another writer's line may already follow our fragment. Instead the
 * fragment is terminated with a newline when the device takes one more byte, and the failure is reported;
 * when it does not, the next record (of any appender) starts on a new line (see {@link needsNewline}).
 *
 * `size`: the file's size if the caller has just taken it (one-shot appends: the fstat of the open).
 */
export function* writeRecordPlan(t: RecordTarget, record: Uint8Array, size?: number): Plan<number> {
  if (record.length === 0) return 0;
  const { fd, file } = t;
  const before = yield* needsNewline(t, size);
  const data = before.prefix ? Buffer.concat([NEWLINE, record]) : record;
  t.tail.cleanEnd = undefined;
  const n = yield* op('write', file, 'write', fd, data, 0, data.length);
  if (n === data.length) {
    if (data[data.length - 1] === LF) t.tail.cleanEnd = before.size + data.length;
    if (t.sync) yield* op('fsync', file, 'fsync', fd);
    if (t.watch !== undefined) yield* checkStillInside(fd, file, t.watch);
    return record.length;
  }
  if (n === 0) {
    throw new FsPolicyError({
      code: 'ESHORT_WRITE',
      step: 'short-write',
      path: file,
      message: `append to ${file} failed: the device accepted none of the ${String(record.length)} bytes; nothing was written`,
    });
  }
  // Our partial record is in the file. Terminate it.
  let cause: FsPolicyError | undefined;
  let terminated = false;
  try {
    terminated = (yield* call('write', file, 'write', fd, NEWLINE, 0, 1)) === 1;
  } catch (err) {
    cause = toPolicyError(err, 'write', file, `append to ${file}`);
  }
  throw new FsPolicyError({
    code: cause?.code ?? 'ETORN_RECORD',
    step: cause === undefined ? 'short-write' : 'write',
    path: file,
    message:
      `append to ${file} failed after ${String(n)} of ${String(data.length)} bytes (${cause?.code ?? 'short write'}); ` +
      (terminated
        ? 'the partial record was terminated with a newline, so every other line still parses'
        : 'the file ends with the partial record; the next record (of any appender) starts on a new line'),
    ...(cause?.errno === undefined ? {} : { errno: cause.errno }),
    cause,
  });
}

/** The file's own descriptor must still name a path inside the home (it cannot be reached by name any more otherwise). */
function* checkStillInside(fd: number, file: string, watch: string): Plan<void> {
  const now = yield* op('write', file, 'readlink', selfFd(fd, file));
  if (isInside(now, watch)) return;
  throw new FsPolicyError({
    code: 'ERACE',
    step: 'write',
    path: file,
    message: `${file} was moved out of the home (it is now ${now}) by another process; the record was appended there, not in the home`,
  });
}
