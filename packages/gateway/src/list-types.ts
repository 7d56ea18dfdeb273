/** The entries of a spool listing ({@link scanSpool}/{@link listSpool} in list.ts): what each file is. */
import type { PayloadKind } from './payload.js';
import type { SpoolLocationOptions } from './spool.js';

/**
 * What a spool file is, for a listing:
 * - `pending`, `overflow`, `cap-drop`, `agent-history`: a readable payload of that kind (see {@link PayloadKind});
 * - `bad`: a `*.bad` file (a payload whose row the session store rejected, renamed by recovery);
 * - `batch`: a batch file (`batch-<32 hex>.json`: the payloads a stop wrote as one file; `members` says how many);
 * - `temp`: a complete payload (or batch) still under the temp name of a write a killed writer did not finish
 *   renaming — recovery's salvage adopts a payload under the name it was written for (`target`);
 * - `partial`: an incomplete temp file (cut short: a write in progress, or a writer killed mid-write), or one
 *   salvage moved aside as `*.partial`; it holds no complete message;
 * - `unknown`: a `*.json` file that is not one of the four payload shapes, or could not be read or parsed
 *   (`problem` says which).
 */
export type SpoolEntryKind = 'pending' | 'overflow' | 'cap-drop' | 'agent-history' | 'bad' | 'batch' | 'temp' | 'partial' | 'unknown';

/**
 * Why a file's content is not known:
 * - `foreign`: another uid's file this process cannot read (a 0600 payload of the other uid on a managed
 *   install; that uid's recovery handles it);
 * - `unreadable`: reading failed otherwise (the errno is in `error`);
 * - `unparseable`: not UTF-8 JSON (Python's NaN/Infinity are accepted);
 * - `too-deep`: JSON nested deeper than the parser's limit (`MAX_JSON_DEPTH`): refused, never a stack overflow;
 * - `not-an-object`: JSON, but not an object;
 * - `invalid-batch`: a batch file whose content is not a valid batch (`detail` says why); it is never half-used;
 * - `not-a-regular-file`: a symbolic link, directory, FIFO, socket or device named like a spool file
 *   (`fileType` says which); it is never followed and never opened.
 */
export type SpoolEntryProblem = 'foreign' | 'unreadable' | 'unparseable' | 'too-deep' | 'not-an-object' | 'invalid-batch' | 'not-a-regular-file';

/** Every {@link SpoolEntryProblem}, in the order listings count them. */
export const SPOOL_ENTRY_PROBLEMS: readonly SpoolEntryProblem[] = [
  'foreign',
  'unreadable',
  'unparseable',
  'too-deep',
  'not-an-object',
  'invalid-batch',
  'not-a-regular-file',
];

/** Every {@link SpoolEntryKind}, in the order listings count them. */
export const SPOOL_ENTRY_KINDS: readonly SpoolEntryKind[] = ['pending', 'overflow', 'cap-drop', 'agent-history', 'bad', 'batch', 'temp', 'partial', 'unknown'];

/** The file type of a spool entry, from `lstat` (or `fstat` of the descriptor a regular file was read through). */
export type SpoolFileType = 'file' | 'symlink' | 'directory' | 'fifo' | 'socket' | 'block-device' | 'character-device' | 'unknown';

/**
 * One spool file. Metadata only: message text, session keys and session ids are never part of an entry
 * (`hasSessionKey`/`hasSessionId` only say whether the payload carries them); {@link scanSpool} adds them,
 * as `content`, only when asked to.
 */
export interface SpoolEntry {
  /**
   * The name without `pending-` and `.json` (and a recovery `.bad` suffix): the 32-hex id of `pending-<id>.json`.
   * Other names (a temp file, a `.partial` file) keep what {@link spoolFileId} leaves of them.
   */
  readonly id: string;
  /** The file name, e.g. `pending-<32 hex>.json` or `pending-<32 hex>.json.bad`. */
  readonly name: string;
  readonly path: string;
  readonly kind: SpoolEntryKind;
  /** The payload's own kind, also for a `.bad` file and a complete temp; null when the content is not known. */
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
  /** Payloads a valid batch file (or a complete batch under a temp name) holds; null for other files. */
  readonly members: number | null;
  /** The name a temp or `.partial` file was written for (`pending-<32 hex>.json`); null for other files. */
  readonly target: string | null;
  /** Why the content is not known; null when it was read and parsed. */
  readonly problem: SpoolEntryProblem | null;
  /** The errno of a `foreign`/`unreadable` file (`EACCES`, `EPERM`, …), else null. */
  readonly error: string | null;
  /**
   * One line on what is wrong or pending: the parser's message for `unparseable`/`too-deep`, why a batch is
   * invalid, why a temp is incomplete; null when there is nothing to say.
   */
  readonly detail: string | null;
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
   * name is already known to be a spool file's (`*.json`, `*.bad`, a temp name, `*.partial`).
   */
  filter?: (name: string) => boolean;
}

/** How much of a message's text {@link scanSpool} keeps in `content.text`. */
export const SPOOL_PREVIEW_LENGTH = 200;
