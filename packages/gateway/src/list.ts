import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseJsonTolerant } from './json.js';
import { compareNames, spoolFileId } from './names.js';
import { classifyPayload, isRecord, type PayloadKind } from './payload.js';
import { InvalidUtf8Error, READ_FLAGS, spoolTextOf } from './read.js';
import { explain, holdSpool, sys } from './held.js';
import { spoolLocation, type SpoolLocationOptions } from './spool.js';

/**
 * What a spool file is, for a listing:
 * - `pending`, `overflow`, `cap-drop`, `agent-history`: a readable payload of that kind (see {@link PayloadKind});
 * - `bad`: a `*.bad` file (a payload whose row the session store rejected, renamed by recovery);
 * - `unknown`: a `*.json` file that is not one of the four payload shapes, or could not be read or parsed
 *   (`problem` says which).
 */
export type SpoolEntryKind = 'pending' | 'overflow' | 'cap-drop' | 'agent-history' | 'bad' | 'unknown';

/**
 * Why a file's content is not known:
 * - `foreign`: another uid's file this process cannot read (a 0600 payload of the other uid on a managed
 *   install; that uid's recovery handles it);
 * - `unreadable`: reading failed otherwise (the errno is in `error`);
 * - `unparseable`: not UTF-8 JSON (Python's NaN/Infinity are accepted);
 * - `not-an-object`: JSON, but not an object;
 * - `not-a-regular-file`: a symbolic link, directory, FIFO, socket or device named like a spool file
 *   (`fileType` says which); it is never followed and never opened.
 */
export type SpoolEntryProblem = 'foreign' | 'unreadable' | 'unparseable' | 'not-an-object' | 'not-a-regular-file';

/** The file type of a spool entry, from `lstat` (or `fstat` of the descriptor a regular file was read through). */
export type SpoolFileType = 'file' | 'symlink' | 'directory' | 'fifo' | 'socket' | 'block-device' | 'character-device' | 'unknown';

/**
 * One spool file. Metadata only: message text, session keys and session ids are never part of an entry
 * (`hasSessionKey`/`hasSessionId` only say whether the payload carries them); {@link scanSpool} adds them,
 * as `content`, only when asked to.
 */
export interface SpoolEntry {
  /** The name without `pending-` and `.json` (and a recovery `.bad` suffix): the 32-hex id of `pending-<id>.json`. */
  readonly id: string;
  /** The file name, e.g. `pending-<32 hex>.json` or `pending-<32 hex>.json.bad`. */
  readonly name: string;
  readonly path: string;
  readonly kind: SpoolEntryKind;
  /** The payload's own kind, also for a `.bad` file; null when the content is not known. */
  readonly payloadKind: PayloadKind | 'unknown' | null;
  /** The payload's `ts` (epoch seconds) when it is a finite number, else null (recovery orders it as 0). */
  readonly ts: number | null;
  /** The payload's `seq` when it is an integer, else null (recovery orders it as -1). */
  readonly seq: number | null;
  /** The payload's `reason` (`shutdown`, `transcript_cap_drop`, …) when it is a string, else null. */
  readonly reason: string | null;
  /** Bytes on disk. */
  readonly size: number;
  /** Modification time, epoch milliseconds. */
  readonly mtime: number;
  /** Owner uid. */
  readonly uid: number;
  /** Permission bits (`mode & 0o7777`). */
  readonly mode: number;
  /** `file` for a regular file; what else it is for a `not-a-regular-file` entry. */
  readonly fileType: SpoolFileType;
  /** A non-empty `session_key` is present. */
  readonly hasSessionKey: boolean;
  /** A non-empty session id is present (`data.session_id`, or `session_id` of a snapshot). */
  readonly hasSessionId: boolean;
  /** Messages in an agent-history snapshot (`count`, else the length of `messages`); null for other kinds. */
  readonly messages: number | null;
  /** Why the content is not known; null when it was read and parsed. */
  readonly problem: SpoolEntryProblem | null;
  /** The errno of a `foreign`/`unreadable` file (`EACCES`, `EPERM`, …), else null. */
  readonly error: string | null;
}

/** What a payload says, for an operator's listing: exact strings, never escaped or collapsed. */
export interface SpoolEntryContent {
  /** `session_key` when it is a non-empty string. */
  readonly sessionKey: string | null;
  /** `data.session_id`, else the snapshot's `session_id`, when a non-empty string. */
  readonly sessionId: string | null;
  /**
   * The start of the message text (`data.text`, else a cap-drop's `data.message.content` when it is a string),
   * at most {@link SPOOL_PREVIEW_LENGTH} UTF-16 code units, never ending inside a surrogate pair; null when none.
   */
  readonly text: string | null;
  /** The whole text's length in UTF-16 code units (more than `text.length` when it was cut); null when none. */
  readonly textLength: number | null;
}

/** A spool entry with what its payload says (null when the content is not known: see `problem`). */
export interface SpoolEntryWithContent extends SpoolEntry {
  readonly content: SpoolEntryContent | null;
}

export interface ListSpoolOptions extends SpoolLocationOptions {
  /** List `*.bad` files too (default true). */
  includeBad?: boolean;
}

export interface ScanSpoolOptions extends ListSpoolOptions {
  /** Add each payload's session key, session id and the start of its text (`content`). Default false. */
  content?: boolean;
  /**
   * Only names for which this returns true are looked at (before any `stat` or read): e.g. an id prefix. The
   * name is already known to end in `.json` or `.bad`.
   */
  filter?: (name: string) => boolean;
}

/** How much of a message's text {@link scanSpool} keeps in `content.text`. */
export const SPOOL_PREVIEW_LENGTH = 200;

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

interface Inspected {
  readonly entry: SpoolEntryWithContent;
  readonly payload?: unknown;
  /** The file's text, when it was read but could not be parsed (lossy UTF-8 for invalid bytes). */
  readonly raw?: string;
}

interface InspectOptions {
  readonly content: boolean;
  readonly keepPayload: boolean;
}

function baseEntry(dir: string, name: string, st: fs.Stats): Omit<SpoolEntryWithContent, 'problem' | 'fileType'> {
  return {
    id: spoolFileId(name),
    name,
    path: path.join(dir, name),
    kind: name.endsWith('.bad') ? 'bad' : 'unknown',
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
    error: null,
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
function inspect(dir: string, name: string, dirent: fs.Dirent | undefined, options: InspectOptions): Inspected | undefined {
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
  const base = { ...baseEntry(dir, name, st), fileType: 'file' as const };
  let payload: unknown;
  try {
    payload = parseJsonTolerant(decode(bytes));
  } catch (err) {
    if (err instanceof SyntaxError || err instanceof InvalidUtf8Error) {
      return { entry: { ...base, problem: 'unparseable' }, ...(options.keepPayload ? { raw: bytes.toString('utf8') } : {}) };
    }
    throw err;
  }
  if (!isRecord(payload)) return { entry: { ...base, problem: 'not-an-object' }, ...(options.keepPayload ? { payload } : {}) };
  const payloadKind = classifyPayload(payload);
  const data = isRecord(payload.data) ? payload.data : undefined;
  const ts = payload.ts;
  const seq = payload.seq;
  const entry: SpoolEntryWithContent = {
    ...base,
    kind: name.endsWith('.bad') ? 'bad' : ENTRY_KIND[payloadKind],
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
    content: options.content ? contentOf(payload) : null,
  };
  return options.keepPayload ? { entry, payload } : { entry };
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

function withoutContent(entry: SpoolEntryWithContent): SpoolEntry {
  const { content: _content, ...rest } = entry;
  return rest;
}

function isSpoolName(name: string): boolean {
  return name.endsWith('.json') || name.endsWith('.bad');
}

/**
 * Recovery order: `(ts, seq, name)`, a missing/non-finite `ts` as 0 and a missing/non-integer `seq` as -1,
 * names in code-unit order. Sorting entries with it gives the order recovery replays them in.
 */
export function compareSpoolEntries(a: SpoolEntry, b: SpoolEntry): number {
  return (a.ts ?? 0) - (b.ts ?? 0) || (a.seq ?? -1) - (b.seq ?? -1) || compareNames(a.name, b.name);
}

/**
 * The time an entry's age is measured from, epoch milliseconds: the payload's `ts` when it is a positive
 * finite number, else the file's modification time (a payload the reference wrote without `ts`, a `.bad` or
 * unreadable file). {@link prune} ages agent-history snapshots by the same rule.
 */
export function spoolEntryTime(entry: Pick<SpoolEntry, 'ts' | 'mtime'>): number {
  return entry.ts !== null && entry.ts > 0 ? entry.ts * 1000 : entry.mtime;
}

/**
 * Streams the spool: one entry per spool file — `*.json` payloads (any kind, readable or not, regular or not)
 * and, unless `includeBad: false`, `*.bad` files — in directory order, reading the directory incrementally, so
 * memory stays bounded however many files there are. Sort with {@link compareSpoolEntries} for recovery order.
 *
 * Read-only and never blocking: only an entry the directory reports as a regular file is opened (O_NOFOLLOW,
 * O_NONBLOCK, checked with fstat before reading); symbolic links, directories, FIFOs, sockets and devices
 * are `lstat`ed and listed as `not-a-regular-file`, never followed or opened. Temp files of interrupted writes
 * are not listed (see {@link spoolStats}). An absent spool directory yields nothing; a directory that cannot
 * be read throws its fs error (`code`: `EACCES`, `ENOTDIR`, …) before the first entry.
 */
export function scanSpool(options: ScanSpoolOptions & { content: true }): Generator<SpoolEntryWithContent, void, undefined>;
export function scanSpool(options?: string | ScanSpoolOptions): Generator<SpoolEntry, void, undefined>;
export function scanSpool(options: string | ScanSpoolOptions = {}): Generator<SpoolEntry, void, undefined> {
  const opts: ScanSpoolOptions = typeof options === 'string' ? { home: options } : options;
  const loc = spoolLocation(opts);
  const { dir } = loc;
  // Held for the generator's life: every entry is read relative to the spool's descriptor.
  const release = holdSpool(dir, loc.env);
  // No spool directory: nothing to list, and nothing is read by path (a link may take its place).
  if (release === undefined) return scan(dir, undefined, opts, undefined);
  let handle: fs.Dir | undefined;
  try {
    handle = fs.opendirSync(sys(dir), { bufferSize: 1024 });
  } catch (err) {
    release();
    if (codeOf(err) !== 'ENOENT') throw explain(err);
  }
  return scan(dir, handle, opts, release);
}

function* scan(dir: string, handle: fs.Dir | undefined, opts: ScanSpoolOptions, release: (() => void) | undefined): Generator<SpoolEntry, void, undefined> {
  if (handle === undefined) return;
  const includeBad = opts.includeBad ?? true;
  const content = opts.content === true;
  try {
    for (let dirent = handle.readSync(); dirent !== null; dirent = handle.readSync()) {
      const name = dirent.name;
      if (!isSpoolName(name) || (!includeBad && name.endsWith('.bad'))) continue;
      if (opts.filter !== undefined && !opts.filter(name)) continue;
      const found = inspect(dir, name, dirent, { content, keepPayload: false });
      if (found !== undefined) yield content ? found.entry : withoutContent(found.entry);
    }
  } finally {
    handle.closeSync();
    release?.();
  }
}

/**
 * One entry per spool file — `*.json` payloads (any kind, readable or not, regular or not) and, unless
 * `includeBad: false`, `*.bad` files — in recovery order `(ts, seq, name)`. Temp files of interrupted writes are
 * not listed (see {@link spoolStats}). Read-only: files are read without following links, FIFOs and other
 * non-regular files are never opened, nothing is changed. An absent spool directory lists as `[]`; a directory
 * that cannot be read throws its fs error (`code`: `EACCES`, …). {@link scanSpool} streams the same entries.
 */
export function listSpool(options: string | ListSpoolOptions = {}): SpoolEntry[] {
  const opts: ListSpoolOptions = typeof options === 'string' ? { home: options } : options;
  const entries = [...scanSpool({ ...opts, content: false })];
  return entries.sort(compareSpoolEntries);
}

/** One spool file read in full, for an operator's `show`/`export`. */
export interface SpoolFile {
  readonly entry: SpoolEntryWithContent;
  /** The parsed payload when it could be read and parsed (any JSON value); undefined otherwise. */
  readonly payload: unknown;
  /** The file's text when it was read but is not JSON (invalid UTF-8 shown as U+FFFD); undefined otherwise. */
  readonly raw: string | undefined;
}

/**
 * Reads one spool file (a path inside a spool directory) with the rules of {@link scanSpool}: its entry with
 * content, the parsed payload, or the raw text of an unparseable file. Never follows a link, never opens a
 * FIFO or device. Undefined when the file does not exist.
 */
export function readSpoolFile(file: string): SpoolFile | undefined {
  const found = inspect(path.dirname(file), path.basename(file), undefined, { content: true, keepPayload: true });
  if (found === undefined) return undefined;
  return { entry: found.entry, payload: found.payload, raw: found.raw };
}
