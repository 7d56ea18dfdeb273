import { createHash, hash } from 'node:crypto';
import * as fs from 'node:fs';
import type { HeldDirectory } from '@hermes/fs-policy';
import { parseJsonTolerant } from './json.js';

const constants = fs.constants as Partial<typeof fs.constants>;

/**
 * How spool files are opened for reading: never through a symbolic link (`O_NOFOLLOW`: a link fails with
 * `ELOOP`), never blocking on a FIFO someone put in the directory (`O_NONBLOCK` has no effect on a regular
 * file), and without updating the access time (`O_NOATIME`: recovery reads each file just before deleting it,
 * and an atime update is an inode write, journalled, per file). `O_NOATIME` is refused (`EPERM`) on a file of
 * another uid unless the process may change its times; such a file is read again without it.
 */
export const READ_FLAGS: number = fs.constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);
const NOATIME: number = constants.O_NOATIME ?? 0;

/** The buffer spool reads go through, reused (never allocated per file); grown up to {@link SCRATCH_MAX}. */
let scratch: Buffer = Buffer.allocUnsafeSlow(64 * 1024);
/** A file larger than this is read into a buffer of its own, so one large file does not stay in memory. */
const SCRATCH_MAX = 1024 * 1024;

/**
 * Reads a whole spool file into the shared read buffer and returns a view of it, valid only until the next
 * read (copy what must outlive it). Opened without following a link and without blocking, checked with `fstat`
 * before a single byte is read (a FIFO, socket or device planted under a payload's name is refused with
 * ENOTREGULAR), with O_NOATIME when it is allowed (recovery reads each file just before deleting it; an atime
 * update is a journalled inode write per file). One read call for a file that does not grow meanwhile: the
 * buffer is asked for one byte more than `fstat` said, and a short read of a regular file is its end.
 */
function readBytes(dir: HeldDirectory, name: string): Buffer {
  let fd: number;
  try {
    try {
      fd = dir.openSync(name, READ_FLAGS | NOATIME);
    } catch (err) {
      if (NOATIME === 0 || (err as { code?: unknown } | null)?.code !== 'EPERM') throw err;
      fd = dir.openSync(name, READ_FLAGS);
    }
  } catch (err) {
    throw dir.explain(err);
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) {
      const p = dir.display(name);
      throw Object.assign(new Error(`ENOTREGULAR: not a regular file (a FIFO, socket or device), read '${p}'`), { code: 'ENOTREGULAR', path: p });
    }
    const need = st.size + 1;
    if (need > scratch.length && need <= SCRATCH_MAX) scratch = Buffer.allocUnsafeSlow(Math.min(SCRATCH_MAX, Math.max(need, scratch.length * 2)));
    let buf = need <= scratch.length ? scratch : Buffer.allocUnsafeSlow(need);
    let total = 0;
    for (;;) {
      const want = buf.length - total;
      const n = fs.readSync(fd, buf, total, want, null);
      total += n;
      if (n < want) break; // the end of the file (n === 0 included)
      const next = Buffer.allocUnsafeSlow(buf.length * 2); // the file grew past what fstat said
      buf.copy(next, 0, 0, total);
      buf = next;
    }
    return buf.subarray(0, total);
  } finally {
    fs.closeSync(fd);
  }
}

const REPLACEMENT = '\uFFFD';
const BOM = 0xfeff;
const fatalUtf8 = new TextDecoder('utf-8', { fatal: true });

/** A spool file that is not valid UTF-8 (the decoder's message); such a file is unparseable, not unreadable. */
export class InvalidUtf8Error extends Error {
  override readonly name = 'InvalidUtf8Error';
}

/** A spool file's content as text, with what the receipt id is computed from. */
export interface SpoolText {
  /** The decoded text (a UTF-8 BOM removed), ready for {@link parseJsonTolerant}. */
  readonly text: string;
  /**
   * The file's exact bytes when they had to be read as bytes (the text holds U+FFFD); undefined when the
   * decoded text re-encodes to exactly the file's bytes (the common case).
   */
  readonly bytes: Buffer | undefined;
  /** The decoded text before the BOM was removed: its UTF-8 encoding is the file's bytes (when `bytes` is unset). */
  readonly source: string;
}

/**
 * Reads the spool file `name` of the held spool `dir` — through its descriptor, never by a path — once as
 * UTF-8 (one native call: open, read, close). Invalid UTF-8 is refused as Python's
 * `utf-8-sig` refuses it ({@link InvalidUtf8Error}), a BOM is accepted. Throws the fs error (`code`: ENOENT, ELOOP, EACCES, …).
 *
 * Valid UTF-8 decodes to a string whose UTF-8 encoding is the same bytes, so the receipt can be computed from
 * the text; only text that contains U+FFFD (the decoder's replacement for invalid bytes, or a real U+FFFD) is
 * read again as bytes and decoded strictly.
 */
export function readSpoolText(dir: HeldDirectory, name: string): SpoolText {
  const view = readBytes(dir, name);
  const source = view.toString('utf8');
  if (!source.includes(REPLACEMENT)) return spoolTextOf(source);
  const bytes = Buffer.from(view); // kept with the text: the shared read buffer is reused by the next read
  let text: string;
  try {
    // TextDecoder drops a UTF-8 BOM (Python's utf-8-sig) and, with `fatal`, refuses invalid UTF-8.
    text = fatalUtf8.decode(bytes);
  } catch (err) {
    throw new InvalidUtf8Error(err instanceof Error ? err.message : String(err), { cause: err });
  }
  return { text, bytes, source: text };
}

/** The {@link SpoolText} of a file's valid UTF-8 content, decoded (`source`, a BOM included). */
export function spoolTextOf(source: string): SpoolText {
  return { text: source.charCodeAt(0) === BOM ? source.slice(1) : source, bytes: undefined, source };
}

/**
 * The receipt id of a spool file: sha256 over its name, a NUL byte and its exact bytes, as lowercase hex.
 * Identical for the same name and bytes whichever way the file was read.
 */
export function receiptIdOf(name: string, content: SpoolText): string {
  if (content.bytes === undefined) return hash('sha256', `${name}\u0000${content.source}`, 'hex');
  return createHash('sha256').update(name).update('\u0000').update(content.bytes).digest('hex');
}

/**
 * Reads and parses the spool file `name` of the held spool `dir` (UTF-8, BOM tolerated, Python's NaN/Infinity
 * accepted). Throws fs or parse errors.
 */
export function readSpoolPayload(dir: HeldDirectory, name: string): unknown {
  return parseJsonTolerant(readSpoolText(dir, name).text);
}
