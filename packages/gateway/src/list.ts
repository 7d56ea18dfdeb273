import * as fs from 'node:fs';
import * as path from 'node:path';
import { classifyPayload, isRecord, type PayloadKind } from './payload.js';
import { compareNames, spoolFileId } from './names.js';
import { InvalidUtf8Error, readSpoolPayload } from './read.js';
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
 * - `not-a-regular-file`: a symbolic link, directory or device named like a spool file (never followed).
 */
export type SpoolEntryProblem = 'foreign' | 'unreadable' | 'unparseable' | 'not-an-object' | 'not-a-regular-file';

/**
 * One spool file. Metadata only: message text, session keys and session ids are never part of an entry
 * (`hasSessionKey`/`hasSessionId` only say whether the payload carries them).
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
  /** Bytes on disk (`lstat`). */
  readonly size: number;
  /** Modification time, epoch milliseconds. */
  readonly mtime: number;
  /** Owner uid. */
  readonly uid: number;
  /** Permission bits (`mode & 0o7777`). */
  readonly mode: number;
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

export interface ListSpoolOptions extends SpoolLocationOptions {
  /** List `*.bad` files too (default true). */
  includeBad?: boolean;
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

const ENTRY_KIND: Readonly<Record<PayloadKind | 'unknown', SpoolEntryKind>> = {
  pending: 'pending',
  overflow: 'overflow',
  transcript_cap_drop: 'cap-drop',
  agent_history: 'agent-history',
  unknown: 'unknown',
};

/** The listing entry of one directory entry, or undefined when it is no spool file or vanished. */
function entryOf(dir: string, name: string): SpoolEntry | undefined {
  const isBad = name.endsWith('.bad');
  if (!isBad && !name.endsWith('.json')) return undefined;
  const p = path.join(dir, name);
  let st: fs.Stats;
  try {
    st = fs.lstatSync(p);
  } catch {
    return undefined; // vanished (recovered or pruned meanwhile)
  }
  const unknownContent = {
    id: spoolFileId(name),
    name,
    path: p,
    kind: isBad ? 'bad' : 'unknown',
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
  } as const;
  if (!st.isFile()) return { ...unknownContent, problem: 'not-a-regular-file' };
  let payload: unknown;
  try {
    payload = readSpoolPayload(p);
  } catch (err) {
    const code = codeOf(err);
    if (code === 'ENOENT') return undefined;
    if (code === 'EACCES' || code === 'EPERM') {
      return { ...unknownContent, problem: st.uid === euid() ? 'unreadable' : 'foreign', error: code };
    }
    if (err instanceof SyntaxError || err instanceof InvalidUtf8Error) {
      return { ...unknownContent, problem: 'unparseable' };
    }
    return { ...unknownContent, problem: code === 'ELOOP' ? 'not-a-regular-file' : 'unreadable', error: code };
  }
  if (!isRecord(payload)) return { ...unknownContent, problem: 'not-an-object' };
  const payloadKind = classifyPayload(payload);
  const data = isRecord(payload.data) ? payload.data : undefined;
  const ts = payload.ts;
  const seq = payload.seq;
  return {
    ...unknownContent,
    kind: isBad ? 'bad' : ENTRY_KIND[payloadKind],
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
  };
}

/** Recovery order: `(ts, seq, name)`, a missing/non-finite `ts` as 0 and a missing/non-integer `seq` as -1. */
function compareEntries(a: SpoolEntry, b: SpoolEntry): number {
  return (a.ts ?? 0) - (b.ts ?? 0) || (a.seq ?? -1) - (b.seq ?? -1) || compareNames(a.name, b.name);
}

/**
 * One entry per spool file — `*.json` payloads (any kind, readable or not, regular or not) and, unless
 * `includeBad: false`, `*.bad` files — in recovery order `(ts, seq, name)`. Temp files of interrupted writes are
 * not listed (see {@link spoolStats}). Read-only: files are read without following links and never changed.
 * An absent spool directory lists as `[]`; a directory that cannot be read throws its fs error (`code`:
 * `EACCES`, …).
 */
export function listSpool(options: string | ListSpoolOptions = {}): SpoolEntry[] {
  const opts: ListSpoolOptions = typeof options === 'string' ? { home: options } : options;
  const { dir } = spoolLocation(opts);
  const includeBad = opts.includeBad ?? true;
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch (err) {
    if (codeOf(err) === 'ENOENT') return [];
    throw err;
  }
  const entries: SpoolEntry[] = [];
  for (const name of names) {
    if (!includeBad && name.endsWith('.bad')) continue;
    const entry = entryOf(dir, name);
    if (entry !== undefined) entries.push(entry);
  }
  return entries.sort(compareEntries);
}
