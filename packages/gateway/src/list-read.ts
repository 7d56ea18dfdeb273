/**
 * Reading one spool file for a listing: which names are spool files, how a file is opened (never through a
 * link, never blocking), and what its bytes say — a payload, a batch, a temp a killed writer left, a `.partial`
 * file, or what is wrong with it. Used by {@link scanSpool} and {@link readSpoolFile} (list.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { isBatchName, parseBatch } from './batch.js';
import { JsonTooDeepError, parseJsonTolerant } from './json.js';
import { spoolFileId } from './names.js';
import { classifyPayload, isRecord, type PayloadKind } from './payload.js';
import { InvalidUtf8Error, READ_FLAGS, spoolTextOf } from './read.js';
import { sys } from './held.js';
import { tempTarget } from './salvage-temp.js';
import type { SpoolEntryContent, SpoolEntryKind, SpoolEntryProblem, SpoolEntryWithContent, SpoolFileType } from './list-types.js';
import { SPOOL_PREVIEW_LENGTH } from './list-types.js';

/** What a name in the spool directory is: a payload (`*.json`), a `.bad` file, a temp file, a `.partial` file. */
export type SpoolNameClass = 'json' | 'bad' | 'temp' | 'partial';

/** `<temp name without the leading dot>.partial`, or `….partial.<n>` when that existed (salvage's names). */
const PARTIAL_NAME = /^([^.].*)\.partial(?:\.\d+)?$/s;

/** The class of a directory entry's name, or undefined when it is no spool file (README.txt, a rollback copy). */
export function spoolNameClass(name: string): SpoolNameClass | undefined {
  if (name.startsWith('.') && tempTarget(name) !== undefined) return 'temp';
  if (PARTIAL_NAME.test(name)) return 'partial';
  if (name.endsWith('.bad')) return 'bad';
  if (name.endsWith('.json')) return 'json';
  return undefined;
}

/** The payload name a temp or `.partial` file was written for; null for other names. */
export function targetOf(name: string, cls: SpoolNameClass | undefined): string | null {
  if (cls === 'temp') return tempTarget(name)?.target ?? null;
  if (cls === 'partial') {
    const m = PARTIAL_NAME.exec(name);
    return m?.[1] === undefined ? null : (tempTarget(`.${m[1]}`)?.target ?? null);
  }
  return null;
}

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'EUNKNOWN';
}

function euid(): number {
  return typeof process.geteuid === 'function' ? process.geteuid() : -1;
}

function nonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

const ENTRY_KIND: Readonly<Record<PayloadKind | 'unknown', SpoolEntryKind>> = {
  pending: 'pending',
  overflow: 'overflow',
  transcript_cap_drop: 'cap-drop',
  agent_history: 'agent-history',
  unknown: 'unknown',
};

const constants = fs.constants as Partial<typeof fs.constants>;
const NOATIME: number = constants.O_NOATIME ?? 0;

function fileTypeOf(st: fs.Stats | fs.Dirent): SpoolFileType {
  if (st.isFile()) return 'file';
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isDirectory()) return 'directory';
  if (st.isFIFO()) return 'fifo';
  if (st.isSocket()) return 'socket';
  if (st.isBlockDevice()) return 'block-device';
  if (st.isCharacterDevice()) return 'character-device';
  return 'unknown';
}

/**
 * Opens a spool file for reading: never through a link, never blocking (a FIFO), without an atime update where
 * allowed (O_NOATIME is refused with EPERM on another uid's file; that file is opened again without it).
 */
function openForRead(p: string): number {
  if (NOATIME !== 0) {
    try {
      return fs.openSync(sys(p), READ_FLAGS | NOATIME);
    } catch (err) {
      if (codeOf(err) !== 'EPERM') throw err;
      // Plain open decides: EACCES for a 0600 file of another uid.
    }
  }
  return fs.openSync(sys(p), READ_FLAGS);
}

const fatalUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Reused for the (typical) small payload: the bytes are decoded before the next file is read. */
const scratch = Buffer.allocUnsafe(64 * 1024);

/**
 * The file's bytes, read from its descriptor up to `size` (its fstat size) or end of file. A spool file is
 * complete when it appears (written to a temp name and renamed), so its size does not change while it is read.
 */
function readAll(fd: number, size: number): Buffer {
  const buf = size <= scratch.length ? scratch : Buffer.allocUnsafe(size);
  let got = 0;
  while (got < size) {
    const n = fs.readSync(fd, buf, got, size - got, got);
    if (n === 0) break;
    got += n;
  }
  return buf.subarray(0, got);
}

/** The text of a spool file's bytes as recovery reads it: UTF-8, a BOM tolerated, invalid UTF-8 refused. */
function decode(bytes: Buffer): string {
  const source = bytes.toString('utf8');
  if (!source.includes('\uFFFD')) return spoolTextOf(source).text;
  try {
    return fatalUtf8.decode(bytes);
  } catch (err) {
    throw new InvalidUtf8Error(err instanceof Error ? err.message : String(err), { cause: err });
  }
}

function preview(text: string): string {
  if (text.length <= SPOOL_PREVIEW_LENGTH) return text;
  let end = SPOOL_PREVIEW_LENGTH;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--; // never keep half of a surrogate pair
  return text.slice(0, end);
}

function contentOf(payload: Readonly<Record<string, unknown>>): SpoolEntryContent {
  const data = isRecord(payload.data) ? payload.data : undefined;
  const message = data !== undefined && isRecord(data.message) ? data.message : undefined;
  const text = typeof data?.text === 'string' ? data.text : typeof message?.content === 'string' ? message.content : null;
  return {
    sessionKey: nonEmptyString(payload.session_key) ? payload.session_key : null,
    sessionId: nonEmptyString(data?.session_id) ? data.session_id : nonEmptyString(payload.session_id) ? payload.session_id : null,
    text: text === null ? null : preview(text),
    textLength: text === null ? null : text.length,
  };
}

/** One inspected file: its entry and, when asked, its parsed payload or the text of an unparseable file. */
export interface Inspected {
  readonly entry: SpoolEntryWithContent;
  readonly payload?: unknown;
  /** The file's text, when it was read but could not be parsed (lossy UTF-8 for invalid bytes). */
  readonly raw?: string;
}

export interface InspectOptions {
  readonly content: boolean;
  readonly keepPayload: boolean;
}

type Base = Omit<SpoolEntryWithContent, 'problem' | 'fileType'>;

function baseKind(cls: SpoolNameClass | undefined): SpoolEntryKind {
  return cls === 'bad' ? 'bad' : cls === 'temp' ? 'temp' : cls === 'partial' ? 'partial' : 'unknown';
}

function baseEntry(dir: string, name: string, st: fs.Stats): Base {
  const cls = spoolNameClass(name);
  return {
    id: spoolFileId(name),
    name,
    path: path.join(dir, name),
    kind: baseKind(cls),
    payloadKind: null,
    ts: null,
    seq: null,
    reason: null,
    size: st.size,
    mtime: st.mtimeMs,
    uid: st.uid,
    mode: st.mode & 0o7777,
    hasSessionKey: false,
    hasSessionId: false,
    messages: null,
    members: null,
    target: targetOf(name, cls),
    error: null,
    detail: null,
    content: null,
  };
}

function notRegular(dir: string, name: string, st: fs.Stats): Inspected {
  return { entry: { ...baseEntry(dir, name, st), fileType: fileTypeOf(st), problem: 'not-a-regular-file' } };
}

/**
 * Looks at one directory entry. `dirent` (from the directory listing) decides whether the file is opened at
 * all: only an entry the directory reports as a regular file is opened (O_NOFOLLOW|O_NONBLOCK), and its
 * descriptor is `fstat`ed before a byte is read; anything else is only `lstat`ed. Undefined when it vanished.
 */
export function inspect(dir: string, name: string, dirent: fs.Dirent | undefined, options: InspectOptions): Inspected | undefined {
  const p = path.join(dir, name);
  if (dirent?.isFile() !== true) {
    let st: fs.Stats;
    try {
      st = fs.lstatSync(sys(p));
    } catch (err) {
      if (codeOf(err) === 'ENOENT') return undefined;
      throw err;
    }
    if (!st.isFile()) return notRegular(dir, name, st);
  }
  let fd: number;
  try {
    fd = openForRead(p);
  } catch (err) {
    const code = codeOf(err);
    if (code === 'ENOENT') return undefined; // recovered or pruned meanwhile
    let st: fs.Stats;
    try {
      st = fs.lstatSync(sys(p));
    } catch (lstatErr) {
      if (codeOf(lstatErr) === 'ENOENT') return undefined;
      throw lstatErr;
    }
    if (!st.isFile()) return notRegular(dir, name, st); // swapped for a link or a FIFO since the listing
    const problem: SpoolEntryProblem = code === 'EACCES' || code === 'EPERM' ? (st.uid === euid() ? 'unreadable' : 'foreign') : 'unreadable';
    return { entry: { ...baseEntry(dir, name, st), fileType: 'file', problem, error: code } };
  }
  let st: fs.Stats;
  let bytes: Buffer;
  try {
    st = fs.fstatSync(fd);
    if (!st.isFile()) return notRegular(dir, name, st);
    bytes = readAll(fd, st.size);
  } catch (err) {
    return undefinedOrUnreadable(dir, name, err);
  } finally {
    fs.closeSync(fd);
  }
  return judge({ ...baseEntry(dir, name, st), fileType: 'file' as const }, bytes, options);
}

/** What the bytes of a regular spool file say. */
function judge(base: Base & { fileType: 'file' }, bytes: Buffer, options: InspectOptions): Inspected {
  const raw = (): { raw?: string } => (options.keepPayload ? { raw: bytes.toString('utf8') } : {});
  const cls = spoolNameClass(base.name);
  const underTemp = cls === 'temp' || cls === 'partial';
  let payload: unknown;
  try {
    payload = parseJsonTolerant(decode(bytes));
  } catch (err) {
    if (err instanceof JsonTooDeepError) return { entry: { ...base, problem: 'too-deep', detail: err.message }, ...raw() };
    if (err instanceof SyntaxError || err instanceof InvalidUtf8Error) {
      if (underTemp) {
        const why = bytes.length === 0 ? 'empty' : err instanceof InvalidUtf8Error ? 'not valid UTF-8 (cut inside a character?)' : `not complete JSON (${messageOf(err)})`;
        return { entry: { ...base, kind: 'partial', problem: null, detail: `incomplete: ${why}` }, ...raw() };
      }
      return { entry: { ...base, problem: 'unparseable', detail: messageOf(err) }, ...raw() };
    }
    throw err;
  }
  const keep = options.keepPayload ? { payload } : {};
  if (!isRecord(payload)) return { entry: { ...base, problem: 'not-an-object', detail: 'complete JSON, but not an object' }, ...keep };
  const target = base.target ?? base.name;
  if (isBatchName(cls === 'temp' ? target : base.name)) return { entry: batchEntry(base, payload, cls), ...keep };
  const payloadKind = classifyPayload(payload);
  const data = isRecord(payload.data) ? payload.data : undefined;
  const ts = payload.ts;
  const seq = payload.seq;
  const entry: SpoolEntryWithContent = {
    ...base,
    kind: cls === 'json' ? ENTRY_KIND[payloadKind] : base.kind,
    payloadKind,
    ts: typeof ts === 'number' && Number.isFinite(ts) ? ts : null,
    seq: typeof seq === 'number' && Number.isInteger(seq) ? seq : null,
    reason: typeof payload.reason === 'string' ? payload.reason : null,
    hasSessionKey: nonEmptyString(payload.session_key),
    hasSessionId: nonEmptyString(data?.session_id) || nonEmptyString(payload.session_id),
    messages:
      payloadKind !== 'agent_history'
        ? null
        : typeof payload.count === 'number'
          ? payload.count
          : Array.isArray(payload.messages)
            ? payload.messages.length
            : null,
    problem: null,
    detail: tempDetail(cls, payloadKind, target),
    content: options.content ? contentOf(payload) : null,
  };
  return { entry, ...keep };
}

function tempDetail(cls: SpoolNameClass | undefined, payloadKind: PayloadKind | 'unknown', target: string): string | null {
  if (cls === 'partial') return 'moved aside by salvage: incomplete when it was found';
  if (cls !== 'temp') return null;
  if (payloadKind === 'unknown') return 'complete JSON, but none of the payload shapes: salvage leaves it in place';
  return `a complete payload under a temp name: recovery adopts it as ${target}`;
}

/** A batch file (or a complete batch under a temp name): its member count, or why it is no valid batch. */
function batchEntry(base: Base & { fileType: 'file' }, payload: Readonly<Record<string, unknown>>, cls: SpoolNameClass | undefined): SpoolEntryWithContent {
  const kind: SpoolEntryKind = cls === 'json' ? 'batch' : base.kind;
  const parsed = parseBatch(payload);
  const ts = typeof payload.ts === 'number' && Number.isFinite(payload.ts) ? payload.ts : null;
  const reason = typeof payload.reason === 'string' ? payload.reason : null;
  if (parsed.batch === undefined) return { ...base, kind, ts, reason, problem: 'invalid-batch', detail: parsed.problem };
  const n = parsed.batch.count;
  const detail = cls === 'temp' ? `a complete batch of ${String(n)} payload(s) under a temp name` : cls === 'partial' ? 'moved aside by salvage' : null;
  return { ...base, kind, ts, reason, members: n, problem: null, detail };
}

function undefinedOrUnreadable(dir: string, name: string, err: unknown): Inspected | undefined {
  const code = codeOf(err);
  if (code === 'ENOENT') return undefined;
  let st: fs.Stats;
  try {
    st = fs.lstatSync(sys(path.join(dir, name)));
  } catch {
    return undefined;
  }
  return { entry: { ...baseEntry(dir, name, st), fileType: fileTypeOf(st), problem: 'unreadable', error: code } };
}
