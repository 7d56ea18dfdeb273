/**
 * The spool as an operator sees it: one entry per file — payloads, `.bad` files, batch files, and what killed
 * writers left (complete payloads under temp names, incomplete temps, `.partial` files) — streamed or sorted
 * in recovery order. Entry types are in list-types.ts, the reading of one file in list-read.ts.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { compareNames } from './names.js';
import { explain, holdSpool, sys } from './held.js';
import { inspect, spoolNameClass } from './list-read.js';
import type { ListSpoolOptions, ScanSpoolOptions, SpoolEntry, SpoolEntryWithContent } from './list-types.js';
import { spoolLocation } from './spool.js';

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'EUNKNOWN';
}

function withoutContent(entry: SpoolEntryWithContent): SpoolEntry {
  const { content: _content, ...rest } = entry;
  return rest;
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
 * Streams the spool: one entry per spool file — `*.json` payloads (any kind, readable or not, regular or not),
 * batch files (`batch`, with their member count), the temp files of interrupted writes (`temp`: a complete
 * payload recovery's salvage adopts; `partial`: an incomplete one), `*.partial` files salvage moved aside and,
 * unless `includeBad: false`, `*.bad` files — in directory order, reading the directory incrementally, so
 * memory stays bounded however many files there are. Sort with {@link compareSpoolEntries} for recovery order.
 * A spool holding any of these is not empty: nothing a killed writer left is hidden.
 *
 * Read-only and never blocking: only an entry the directory reports as a regular file is opened (O_NOFOLLOW,
 * O_NONBLOCK, checked with fstat before reading); symbolic links, directories, FIFOs, sockets and devices
 * are `lstat`ed and listed as `not-a-regular-file`, never followed or opened. A file nested too deeply to
 * parse is one `too-deep` entry; the others are listed as usual. An absent spool directory yields nothing; a
 * directory that cannot be read throws its fs error (`code`: `EACCES`, `ENOTDIR`, …) before the first entry.
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
      const cls = spoolNameClass(name);
      if (cls === undefined || (!includeBad && cls === 'bad')) continue;
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
 * One entry per spool file — the entries of {@link scanSpool}: payloads, batch files, temp and `.partial` files
 * of interrupted writes and, unless `includeBad: false`, `*.bad` files — in recovery order `(ts, seq, name)`.
 * Read-only: files are read without following links, FIFOs and other non-regular files are never opened,
 * nothing is changed. An absent spool directory lists as `[]`; a directory that cannot be read throws its fs
 * error (`code`: `EACCES`, …).
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
