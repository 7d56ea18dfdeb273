/**
 * `hermes-fs pending list`: the spool as a stream. The gateway's scanner reads the directory incrementally;
 * the table keeps only the newest N entries (a bounded heap in recovery order) plus totals, and `--json`
 * writes each entry as it is read — memory stays bounded however many files wait.
 */
import * as fs from 'node:fs';
import { compareSpoolEntries, scanSpool, spoolEntryTime, type SpoolEntryWithContent } from '@hermes/gateway';
import type { RunContext } from '../commands/common.js';
import {
  ChunkedWriter,
  colorsFor,
  count,
  describeError,
  EXIT,
  type ExitCode,
  exitCodeOf,
  formatAge,
  formatBytes,
  plural,
  println,
  stderrLine,
  writeLines,
} from '../lib/output.js';
import { type Cell, type Column, renderTable } from '../lib/table.js';
import { outputWidth, termSafe, wrapLine } from '../lib/term.js';
import { entryJson, shortId, SpoolTotals, spoolDirOf, unreadableSpool } from './common.js';
import type { PendingListJson } from '../json/pending.js';

export interface ListOptions {
  /** Rows of the table (and, when given explicitly with --json, entries of the document). */
  readonly limit: number;
  /** `--limit` was given on the command line. */
  readonly limitGiven: boolean;
  readonly all: boolean;
}

/** The newest `limit` entries in recovery order: a min-heap whose root is the oldest entry kept. */
class Newest {
  readonly #heap: SpoolEntryWithContent[] = [];
  constructor(private readonly limit: number) {}

  push(e: SpoolEntryWithContent): void {
    const h = this.#heap;
    if (h.length < this.limit) {
      h.push(e);
      this.#up(h.length - 1);
    } else if (this.limit > 0 && h[0] !== undefined && compareSpoolEntries(e, h[0]) > 0) {
      h[0] = e;
      this.#down(0);
    }
  }

  /** The kept entries, oldest first (recovery order). */
  sorted(): SpoolEntryWithContent[] {
    return [...this.#heap].sort(compareSpoolEntries);
  }

  #less(i: number, j: number): boolean {
    const a = this.#heap[i];
    const b = this.#heap[j];
    return a !== undefined && b !== undefined && compareSpoolEntries(a, b) < 0;
  }

  #swap(i: number, j: number): void {
    const h = this.#heap;
    const t = h[i];
    const u = h[j];
    if (t === undefined || u === undefined) return;
    h[i] = u;
    h[j] = t;
  }

  #up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#less(i, parent)) return;
      this.#swap(i, parent);
      i = parent;
    }
  }

  #down(i: number): void {
    const n = this.#heap.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.#less(l, m)) m = l;
      if (r < n && this.#less(r, m)) m = r;
      if (m === i) return;
      this.#swap(i, m);
      i = m;
    }
  }
}

function spoolExists(dir: string): boolean {
  try {
    fs.statSync(dir);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw unreadableSpool(dir, err);
  }
}

function openScan(home: string, dir: string): Generator<SpoolEntryWithContent, void, undefined> {
  try {
    return scanSpool({ home, content: true });
  } catch (err) {
    throw unreadableSpool(dir, err);
  }
}

export async function listAction(ctx: RunContext, opts: ListOptions): Promise<ExitCode> {
  const dir = spoolDirOf(ctx.home);
  const exists = spoolExists(dir);
  return ctx.json ? listJson(ctx, dir, exists, opts) : listText(ctx, dir, exists, opts);
}

/**
 * One document, written as it is read: `entries` in directory order (sort by ts, seq, name for recovery
 * order) — or, with an explicit `--limit N`, the newest N in recovery order — then `totals` and `ok`. A
 * failure half-way ends the document with `"ok": false` and the error.
 */
async function listJson(ctx: RunContext, dir: string, exists: boolean, opts: ListOptions): Promise<ExitCode> {
  const scan = openScan(ctx.home, dir);
  const bounded = opts.limitGiven && !opts.all;
  const w = new ChunkedWriter();
  const totals = new SpoolTotals();
  const J = JSON.stringify;
  const head = {
    schemaVersion: 1,
    command: 'pending list',
    home: ctx.home,
    dir,
    exists,
    order: bounded ? 'recovery' : 'scan',
    limit: bounded ? opts.limit : null,
  } satisfies Omit<PendingListJson, 'entries' | 'totals' | 'ok'>;
  // The head's members, then the entries streamed one by one, then totals and ok (schema/pending-list.schema.json).
  w.write(`${J(head).slice(0, -1)},"entries":[`);
  let first = true;
  const emit = async (e: SpoolEntryWithContent): Promise<void> => {
    w.write(`${first ? '' : ','}\n${J(entryJson(e))}`);
    first = false;
    if (w.mustWait) await w.drain();
  };
  const newest = bounded ? new Newest(opts.limit) : null;
  try {
    for (const e of scan) {
      totals.add(e);
      if (newest !== null) newest.push(e);
      else await emit(e);
      if (w.closed) return EXIT.ok;
    }
  } catch (err) {
    const code = exitCodeOf(err);
    const d = describeError(err);
    w.write(`\n],"ok":false,"exitCode":${code},"error":${J({ code: d.code, message: d.line, path: d.path, hint: d.hint ?? null })}}\n`);
    await w.end();
    stderrLine(`hermes-fs: error: ${termSafe(d.line)}`);
    return code;
  }
  if (newest !== null) for (const e of newest.sorted()) await emit(e);
  w.write(`\n],"totals":${J(totals)},"ok":true}\n`);
  await w.end();
  return EXIT.ok;
}

const euid = typeof process.geteuid === 'function' ? process.geteuid() : -1;

/** The kind column: the gateway's kind, or what is wrong with the file. */
function kindLabel(e: SpoolEntryWithContent): string {
  if (e.problem === 'not-a-regular-file') return e.fileType;
  if (e.problem !== null && e.kind !== 'bad') return e.problem;
  return e.kind;
}

/** The text column: the start of the message, or what the entry is. */
function textOf(e: SpoolEntryWithContent): string {
  switch (e.problem) {
    case 'not-a-regular-file':
      return e.fileType === 'symlink' ? 'symbolic link: never followed' : `${e.fileType}: never opened`;
    case 'foreign':
      return `uid ${e.uid}'s file: that uid recovers it`;
    case 'unreadable':
      return `cannot read: ${e.error ?? 'error'}`;
    case 'unparseable':
      return 'not JSON (see pending show)';
    case 'too-deep':
      return 'nested too deeply to parse (see pending show)';
    case 'not-an-object':
      return 'JSON, not an object';
    case 'invalid-batch':
      return `not a valid batch: ${e.detail ?? 'see pending show'}`;
    case null:
      break;
  }
  if (e.kind === 'partial') return 'partial: incomplete, holds no complete message';
  if (e.kind === 'batch') return `batch of ${plural(e.members ?? 0, 'payload')}`;
  if (e.kind === 'temp') {
    if (e.members !== null) return `batch of ${plural(e.members, 'payload')} under a temp name: would be adopted by recovery`;
    if (e.payloadKind === 'unknown') return 'complete JSON, no payload: left in place';
    return `would be adopted by recovery: ${e.content?.text ?? ''}`;
  }
  if (e.payloadKind === 'agent_history') return plural(e.messages ?? 0, 'message');
  return e.content?.text ?? (e.kind === 'bad' ? 'rejected by state.db (pending show)' : '');
}

function row(e: SpoolEntryWithContent, now: number, c: ReturnType<typeof colorsFor>, withUid: boolean): Cell[] {
  const kind = kindLabel(e);
  const paint =
    e.problem === 'foreign'
      ? c.dim
      : e.problem !== null || e.kind === 'bad' || e.kind === 'partial'
        ? c.red
        : e.kind === 'agent-history' || e.kind === 'temp'
          ? c.yellow
          : undefined;
  const cells: Cell[] = [
    { text: shortId(e) },
    paint === undefined ? { text: kind } : { text: kind, paint },
    { text: formatAge(now - spoolEntryTime(e)) },
    { text: formatBytes(e.size) },
    { text: e.content?.sessionId ?? e.content?.sessionKey ?? '' },
    { text: textOf(e) },
  ];
  if (withUid) cells.push({ text: String(e.uid) });
  return cells;
}

async function listText(ctx: RunContext, dir: string, exists: boolean, opts: ListOptions): Promise<ExitCode> {
  const c = colorsFor(process.stdout);
  const width = outputWidth();
  if (!exists) {
    println(`no spool: ${termSafe(dir)} does not exist (nothing is waiting)`);
    return EXIT.ok;
  }
  const totals = new SpoolTotals();
  const newest = opts.all ? null : new Newest(opts.limit);
  const every: SpoolEntryWithContent[] = [];
  for (const e of openScan(ctx.home, dir)) {
    totals.add(e);
    if (newest !== null) newest.push(e);
    else every.push(e);
  }
  if (totals.files === 0) {
    println(`spool ${termSafe(dir)} is empty`);
    return EXIT.ok;
  }
  const shown = newest === null ? every.sort(compareSpoolEntries) : newest.sorted();
  const withUid = shown.some((e) => e.uid !== euid);
  const now = Date.now();
  const columns: Column[] = [
    { header: 'id', overflow: 'truncate', min: 8 },
    { header: 'kind', overflow: 'truncate', min: 7 },
    { header: 'age', align: 'right' },
    { header: 'size', align: 'right' },
    { header: 'session', overflow: 'truncate', min: 8 },
    { header: 'text', overflow: 'truncate', min: 10 },
  ];
  if (withUid) columns.push({ header: 'uid', align: 'right' });
  const lines: string[] = shown.length > 0 ? renderTable(columns, shown.map((e) => row(e, now, c, withUid)), { maxWidth: width, header: c.bold }) : [];
  if (shown.length < totals.files) {
    const what = shown.length === 0 ? `${plural(totals.files, 'spool file')}; --limit N shows the newest N` : `showing the newest ${count(shown.length)} of ${plural(totals.files, 'spool file')} (oldest first); --all shows every one`;
    for (const l of wrapLine(what, width, '  ')) lines.push(c.dim(l));
  }
  const p = totals.problems;
  const k = totals.kinds;
  const unreadable = p.unreadable + p.unparseable + p['not-an-object'] + p['invalid-batch'];
  // What killed writers and batch stops left is counted only when there is some (a spool holding it is not empty).
  const leftovers = [
    totals.toAdopt > 0 ? `${count(totals.toAdopt)} under temp names (recovery adopts them)` : '',
    k.batch > 0 ? `${plural(k.batch, 'batch file')} (${plural(totals.batchMembers, 'payload')})` : '',
    k.temp - totals.toAdopt > 0 ? plural(k.temp - totals.toAdopt, 'other complete temp file') : '',
    k.partial > 0 ? `${count(k.partial)} partial (incomplete writes)` : '',
    p['too-deep'] > 0 ? `${count(p['too-deep'])} too deep to parse` : '',
  ].filter((x) => x !== '');
  const summary =
    `${plural(totals.files, 'file')} in ${termSafe(dir)}: ${count(totals.toDeliver)} to deliver, ` +
    leftovers.map((x) => `${x}, `).join('') +
    `${plural(k['agent-history'], 'agent-history snapshot')}, ${count(k.bad)} .bad, ` +
    `${count(p.foreign)} of other uids, ${count(unreadable)} unreadable or unparseable, ` +
    `${plural(p['not-a-regular-file'], 'non-regular file')}; ${formatBytes(totals.bytes)}` +
    (totals.oldest === null || totals.newest === null ? '' : `, oldest ${formatAge(now - totals.oldest)}, newest ${formatAge(now - totals.newest)}`);
  lines.push(...wrapLine(summary, width, '  '));
  await writeLines(lines);
  return EXIT.ok;
}
