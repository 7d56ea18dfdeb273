/** What the pending commands share: finding a spool file by id, JSON of an entry, the spool's totals. */
import * as path from 'node:path';
import {
  SPOOL_ENTRY_KINDS,
  SPOOL_ENTRY_PROBLEMS,
  scanSpool,
  spoolEntryTime,
  spoolFileId,
  spoolLocation,
  type SpoolEntry,
  type SpoolEntryKind,
  type SpoolEntryProblem,
  type SpoolEntryWithContent,
} from '@hermes/gateway';
import type { PendingListTotalsJson } from '../json/pending.js';
import { CliError, EXIT } from '../lib/output.js';

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'EUNKNOWN';
}

/** The spool directory of a home. */
export function spoolDirOf(home: string): string {
  return spoolLocation({ home }).dir;
}

/** A spool directory that cannot be read: the command cannot run (exit 2), with the errno, the path and the fix. */
export function unreadableSpool(dir: string, err: unknown): CliError {
  const code = codeOf(err);
  return new CliError(`cannot read the spool ${dir} (${code})`, {
    code,
    path: dir,
    hint: code === 'ENOTDIR' ? 'pending_messages is not a directory: move it aside (hermes-fs doctor shows it)' : "run as the spool's owner (each uid recovers its own payloads) or as root",
    exitCode: EXIT.error,
    cause: err,
  });
}

/** An entry as the JSON documents show it: the gateway's entry (same names as listSpool) plus `time`, the age basis. */
export function entryJson<E extends SpoolEntry>(entry: E): E & { readonly time: number } {
  return { ...entry, time: spoolEntryTime(entry) };
}

/** The short id shown in tables: 8 hex characters of a standard name (enough for `show`/`export`), else the id. */
export function shortId(entry: Pick<SpoolEntry, 'id'>): string {
  return /^[0-9a-f]{32}$/.test(entry.id) ? entry.id.slice(0, 8) : entry.id;
}

/**
 * Finds one spool file by id, unique id prefix (4+ characters) or file name, looking only at matching names
 * (nothing else is opened). Exit 2 when none or several match.
 */
export function findSpoolFile(home: string, ref: string): SpoolEntryWithContent {
  const wanted = ref.trim();
  const base = path.basename(wanted);
  const dir = spoolDirOf(home);
  if (wanted === '') throw new CliError('an empty id matches nothing', { code: 'EUSAGE', exitCode: EXIT.error, hint: 'list the ids with: hermes-fs pending list' });
  const exact = (name: string): boolean => spoolFileId(name) === wanted || name === wanted || name === base;
  const prefix = (name: string): boolean => wanted.length >= 4 && (spoolFileId(name).startsWith(wanted) || name.startsWith(wanted));
  const exacts: SpoolEntryWithContent[] = [];
  const prefixed: SpoolEntryWithContent[] = [];
  let entries: Generator<SpoolEntryWithContent, void, undefined>;
  try {
    entries = scanSpool({ home, content: true, filter: (name) => exact(name) || prefix(name) });
  } catch (err) {
    throw unreadableSpool(dir, err);
  }
  for (const e of entries) (exact(e.name) ? exacts : prefixed).push(e);
  const candidates = exacts.length > 0 ? exacts : prefixed;
  if (candidates.length === 1 && candidates[0] !== undefined) return candidates[0];
  if (candidates.length > 1) {
    const names = candidates.slice(0, 5).map((e) => e.name).join(', ');
    throw new CliError(`${ref} matches ${candidates.length} spool files: ${names}${candidates.length > 5 ? ', …' : ''}`, {
      code: 'EAMBIGUOUS',
      path: dir,
      exitCode: EXIT.error,
      hint: 'give more characters of the id, or the whole file name (hermes-fs pending list)',
    });
  }
  throw new CliError(`no spool file ${ref} in ${dir}`, {
    code: 'ENOTFOUND',
    path: dir,
    exitCode: EXIT.error,
    hint: wanted.length < 4 ? 'an id prefix needs at least 4 characters; list the ids with: hermes-fs pending list' : 'list the ids with: hermes-fs pending list',
  });
}

const euid = typeof process.geteuid === 'function' ? process.geteuid() : -1;

function zeroes<K extends string>(keys: readonly K[]): Record<K, number> {
  return Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
}

/** A readable payload recovery replays (pending, overflow, cap-drop), under its final name or a temp name. */
function deliverable(e: SpoolEntry): boolean {
  const k = e.payloadKind;
  return e.problem === null && (k === 'pending' || k === 'overflow' || k === 'transcript_cap_drop');
}

/** Counts over every spool file, whatever is shown: kinds and problems by the gateway's names, sizes, times. */
export class SpoolTotals {
  files = 0;
  bytes = 0;
  readonly kinds: Record<SpoolEntryKind, number> = zeroes(SPOOL_ENTRY_KINDS);
  readonly problems: Record<SpoolEntryProblem, number> = zeroes(SPOOL_ENTRY_PROBLEMS);
  /** Readable payloads recovery can replay (pending, overflow, cap-drop) under their final names. */
  toDeliver = 0;
  /** Of them under temp names: complete payloads a killed writer left, which recovery's salvage adopts. */
  toAdopt = 0;
  /** Payloads held by valid batch files (a complete batch under a temp name included). */
  batchMembers = 0;
  /** Owners other than this uid. */
  readonly otherUids = new Set<number>();
  /** Oldest / newest entry time (epoch ms, see spoolEntryTime). */
  oldest: number | null = null;
  newest: number | null = null;

  add(e: SpoolEntry): void {
    this.files++;
    this.bytes += e.size;
    this.kinds[e.kind]++;
    if (e.problem !== null) this.problems[e.problem]++;
    else if (e.kind === 'temp' && deliverable(e)) this.toAdopt++;
    else if (e.kind === 'pending' || e.kind === 'overflow' || e.kind === 'cap-drop') this.toDeliver++;
    if (e.problem === null && e.members !== null) this.batchMembers += e.members;
    if (e.uid !== euid) this.otherUids.add(e.uid);
    const t = spoolEntryTime(e);
    this.oldest = this.oldest === null ? t : Math.min(this.oldest, t);
    this.newest = this.newest === null ? t : Math.max(this.newest, t);
  }

  /** The `totals` of `pending list --json` (schema/pending-list.schema.json). */
  toJSON(): PendingListTotalsJson {
    return {
      files: this.files,
      bytes: this.bytes,
      toDeliver: this.toDeliver,
      toAdopt: this.toAdopt,
      batchMembers: this.batchMembers,
      kinds: this.kinds,
      problems: this.problems,
      otherUids: [...this.otherUids].sort((a, b) => a - b),
      oldestTime: this.oldest,
      newestTime: this.newest,
    };
  }
}
