import * as fs from 'node:fs';
import * as path from 'node:path';
import { hintFor, isErrnoException } from '@hermes/fs-policy';
import { describeValue, positiveIntegerProblem } from './errors.js';
import { parseJsonTolerant } from './json.js';
import { count, type GatewayLogger, loggerFor } from './log.js';
import { classifyPayload, epochProblem, isRecord, orderingKey, PAYLOAD_SCHEMA_VERSION, type PayloadKind } from './payload.js';
import { salvageTemps, type SalvageOptions, type SalvageReport } from './salvage.js';
import { compareNames } from './names.js';
import { RecoveryOrder } from './ordering.js';
import { explain, holdSpool, sys } from './held.js';
import { InvalidUtf8Error, readSpoolText, receiptIdOf, type SpoolText, spoolTextOf } from './read.js';
import { isProfileHome, type SpoolLocation, spoolLocation, type SpoolLocationOptions } from './spool.js';
import type { RecoveredRow, RecoveryBatchEntry, SessionStore } from './store.js';

/** Files committed per store transaction unless {@link RecoverOptions.batchSize} says otherwise. */
export const DEFAULT_RECOVERY_BATCH_SIZE = 2000;
/** A batch is also committed once the payload text it holds reaches this many UTF-16 code units (~8 MiB). */
const BATCH_TEXT_LIMIT = 8 * 1024 * 1024;
/**
 * When the texts of all the files the first pass read fit in this many bytes, they are kept (outside the JS
 * heap) and every file is read once; a larger spool is read again, file by file, as its batches come.
 */
const READ_AHEAD_BYTES = 8 * 1024 * 1024;

/** Why a spool file was left in place. Kept files are re-examined by every pass; nothing is deleted. */
export type KeptReason =
  /** Not valid UTF-8 or not JSON (NaN/Infinity tokens are accepted). */
  | 'unparseable'
  /** Valid JSON, but not an object. */
  | 'not-an-object'
  /** A symlink, directory or device named `*.json`. */
  | 'not-a-regular-file'
  /** Written by a newer version of this package (`schema_version` above the one this code knows). */
  | 'unknown-schema-version'
  /** An object that is none of the four payload shapes. */
  | 'unknown-kind'
  /** A pending/overflow payload without a non-empty `data.text` (e.g. media only). */
  | 'no-text'
  /** A cap-drop payload without `data.session_id` or an object `data.message`. */
  | 'invalid-cap-drop'
  /** No `data.session_id`, and the session key did not resolve (or there is no resolver). */
  | 'unresolved'
  /** The resolver threw; the file waits for the next pass. */
  | 'resolver-error'
  /** The resolved session has no row in the store. */
  | 'unknown-session'
  /** The store failed (locked, full, read-only, …); this and every later file wait for the next pass. */
  | 'store-error'
  /**
   * Committed (its receipt is in the store), but the store could not confirm the commit is in its main
   * database file (a checkpoint kept from completing): kept, so a lost WAL cannot lose it; the next pass
   * removes it without inserting anything.
   */
  | 'not-checkpointed'
  /** Committed (its receipt is in the store), but removing the file was refused: the next pass removes it. */
  | 'not-removed'
  /** Reading or interpreting the file failed unexpectedly (see `errors`). */
  | 'read-error';

export interface RecoveryHooks {
  /**
   * Test seam, called after a batch's rows and receipts are committed and before the files are removed, with
   * the paths of the committed files. A crash test blocks here and kills the process.
   */
  afterCommit?: (paths: readonly string[]) => void;
  /** Test seam, called after committed files were removed (after the checkpoint that made them durable). */
  afterRemove?: (paths: readonly string[]) => void;
}

export interface RecoverOptions extends SpoolLocationOptions {
  /** Where recovered messages go (e.g. `openSessionDb({ home })`). */
  store: SessionStore;
  /**
   * Maps a payload's `session_key` to the session id that receives it, given the payload's `ts` (a session
   * started after the flush cannot be its origin). Defaults to `store.resolveSessionIdForKey` when the store
   * has it. null/undefined keeps the file.
   */
  resolveSessionId?: (sessionKey: string, notAfter: number | undefined) => string | null | undefined;
  logger?: GatewayLogger;
  /**
   * Files committed per store transaction (default {@link DEFAULT_RECOVERY_BATCH_SIZE}, 2,000). A batch is also
   * committed early once the text of its payloads reaches about 8 MiB, so large payloads stay bounded in memory.
   */
  batchSize?: number;
  /**
   * Progress, for an operator's progress bar: called after each batch (committed, or kept because the store
   * failed) and once more at the end, with the number of files dealt with so far and the number of `*.json`
   * files the pass found (`scanned`; known once the first pass has listed the directory, so before the first
   * call). `done` never decreases; the last call is `(total, total)` — `(0, 0)` for an empty or missing spool.
   * Files the first pass already settles (unreadable, unparseable, not regular files, another uid's) count as
   * done from the first call on. Runs synchronously inside the pass; a callback that throws is logged and
   * otherwise ignored.
   */
  onProgress?: (done: number, total: number) => void;
  hooks?: RecoveryHooks;
  /**
   * Salvage complete payloads that killed writers left under temp names before the pass
   * ({@link salvageTemps}; default true). An object passes its options (`minAgeMs`, `now`).
   */
  salvage?: boolean | Pick<SalvageOptions, 'minAgeMs' | 'now'>;
}

export interface InsertedEntry {
  readonly path: string;
  readonly receiptId: string;
  readonly kind: PayloadKind;
  readonly sessionId: string;
  readonly rowIds: readonly number[];
  /**
   * The file was removed. False when its removal was refused or had to wait for a checkpoint: the file is
   * then also listed in `kept` (`not-removed`, `not-checkpointed`) and the next pass removes it.
   */
  removed: boolean;
}

export interface RecoveryReport {
  readonly dir: string;
  /** `*.json` files seen. */
  scanned: number;
  /** Files whose rows and receipt were committed by this pass (`removed` says whether the file is gone). */
  readonly inserted: InsertedEntry[];
  /** Files whose receipt was committed by an earlier pass (crash between commit and unlink): removed now, nothing inserted. */
  readonly alreadyCommitted: { readonly path: string; readonly receiptId: string; removed: boolean }[];
  readonly kept: { readonly path: string; readonly reason: KeptReason; readonly detail: string }[];
  /** Files whose rows the store rejected, renamed to `<name>.bad`. */
  readonly bad: { readonly path: string; readonly badPath: string; readonly error: string }[];
  /** Agent-history snapshots, left in place for the operator. */
  readonly snapshots: { readonly path: string; readonly sessionId: string | null; readonly count: number | null }[];
  /** Files another uid owns and this process cannot read (0600 payloads): that uid's recovery picks them up. */
  readonly foreignOwner: { readonly path: string; readonly uid: number }[];
  readonly errors: { readonly path: string; readonly code: string; readonly message: string; readonly hint: string }[];
  /** What the salvage of temp files did before the pass (null when it was turned off). */
  salvage: SalvageReport | null;
}

type Decision =
  | { readonly type: 'keep'; readonly reason: KeptReason; readonly detail: string }
  | { readonly type: 'snapshot'; readonly sessionId: string | null; readonly count: number | null }
  | { readonly type: 'commit'; readonly kind: PayloadKind; readonly sessionId: string; readonly rows: RecoveredRow[] };

interface Queued {
  readonly path: string;
  readonly kind: PayloadKind;
  readonly sessionId: string;
  readonly entry: RecoveryBatchEntry;
}

function euid(): number {
  return typeof process.geteuid === 'function' ? process.geteuid() : -1;
}

function egid(): number {
  return typeof process.getegid === 'function' ? process.getegid() : -1;
}

function codeOf(err: unknown, fallback: string): string {
  if (isErrnoException(err) && err.code !== undefined) return err.code;
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : fallback;
}

/** What was thrown, as words: never throws itself (a resolver or store may throw a value with no string form). */
function messageOf(err: unknown): string {
  if (err instanceof Error) return explain(err).message;
  try {
    return String(err);
  } catch {
    return `${describeValue(err)} that has no string form`;
  }
}

/** A committed file waiting for a checkpoint before it is removed: its report entry. */
interface Awaiting {
  readonly path: string;
  removed: boolean;
}

/** An error to log, grouped by cause at the end of the pass. */
interface Problem {
  readonly path: string;
  readonly code: string;
  readonly message: string;
  readonly hint: string;
}

class Pass {
  readonly report: RecoveryReport;
  readonly #logger: GatewayLogger;
  readonly #options: RecoverOptions;
  readonly #loc: SpoolLocation;
  readonly #resolver: ((key: string, notAfter: number | undefined) => string | null | undefined) | undefined;
  readonly #batchSize: number;
  readonly #storePath: string;
  #queue: Queued[] = [];
  #queueText = 0;
  /** The first failure of the store itself: everything after it is kept. */
  #storeFailure: Problem | undefined;
  /** Committed files whose removal waits for the store's checkpoint. */
  #awaiting: Awaiting[] = [];
  /** Errors other than the store's, logged grouped by code at the end. */
  readonly #problems: Problem[] = [];
  /** Refused unlinks of committed files, logged as one line per code. */
  readonly #unremoved: Problem[] = [];
  /** Files dealt with so far (any outcome) and files found, for onProgress. */
  #done = 0;
  #total = 0;

  constructor(options: RecoverOptions, loc: SpoolLocation) {
    this.#options = options;
    this.#loc = loc;
    this.#logger = loggerFor(options.logger);
    this.report = emptyReport(loc.dir);
    let batchSize = DEFAULT_RECOVERY_BATCH_SIZE;
    if (options.batchSize !== undefined) {
      const problem = positiveIntegerProblem('batchSize', options.batchSize);
      if (problem === undefined) batchSize = options.batchSize;
      else this.error(loc.dir, 'EINVALID_OPTION', `${problem}; used ${String(DEFAULT_RECOVERY_BATCH_SIZE)}`, 'pass a positive integer batchSize, or omit it.');
    }
    this.#batchSize = batchSize;
    const store = options.store;
    const storePath = (store as { path?: unknown }).path;
    this.#storePath = typeof storePath === 'string' && storePath !== '' ? storePath : 'the session store';
    this.#resolver =
      options.resolveSessionId ??
      (typeof store.resolveSessionIdForKey === 'function'
        ? (key, notAfter) => store.resolveSessionIdForKey?.(key, notAfter)
        : undefined);
  }

  /** Records an error (logged, grouped by code, at the end of the pass). */
  error(p: string, code: string, message: string, hint?: string): void {
    const problem = { path: p, code, message, hint: hint ?? hintFor(code, p, euid(), egid()) };
    this.report.errors.push(problem);
    this.#problems.push(problem);
  }

  keep(p: string, reason: KeptReason, detail: string): void {
    this.report.kept.push({ path: p, reason, detail });
  }

  #progress(): void {
    const onProgress = this.#options.onProgress;
    if (onProgress === undefined) return;
    try {
      onProgress(this.#done, this.#total);
    } catch (err) {
      this.#logger.warn(`pending-message recovery: the progress callback threw: ${messageOf(err)}`, { path: this.#loc.dir });
    }
  }

  #path(name: string): string {
    return `${this.#loc.dir}${path.sep}${name}`;
  }

  run(): RecoveryReport {
    // Every call on a spool entry goes through the held directory (sys()): a group member who swaps
    // pending_messages/ for a link cannot make recovery read, rename or remove files elsewhere.
    let release: (() => void) | undefined;
    try {
      release = holdSpool(this.#loc.dir, this.#loc.env);
    } catch (err) {
      this.error(this.#loc.dir, codeOf(err, 'EUNKNOWN'), `cannot use ${this.#loc.dir}: ${messageOf(err)}`);
      return this.#finish();
    }
    if (release === undefined) {
      // No spool directory: nothing to recover. Nothing is done by path either — a link a group member puts
      // in its place a moment later would lead every call elsewhere.
      const home = this.#loc.home;
      if (isProfileHome(home) && !fs.existsSync(home)) this.error(home, 'EPROFILE_MISSING', `named profile home does not exist: ${home}`);
      return this.#finish();
    }
    try {
      return this.#runHeld();
    } finally {
      release();
    }
  }

  #runHeld(): RecoveryReport {
    const salvage = this.#options.salvage ?? true;
    if (salvage !== false) {
      const r = salvageTemps({
        home: this.#loc.home,
        env: this.#loc.env,
        logger: this.#logger,
        ...(typeof salvage === 'object' ? salvage : {}),
      });
      this.report.salvage = r;
      for (const e of r.errors) this.report.errors.push(e);
    }
    this.#list();
    this.#settleRemovals(true);
    return this.#finish();
  }

  #finish(): RecoveryReport {
    // The pass is over, whatever it could do: the last call is (total, total).
    this.#done = this.#total;
    this.#progress();
    this.#logSummary();
    return this.report;
  }

  #list(): void {
    const { dir } = this.#loc;
    // First pass, in directory order, streamed: read each `*.json` file and keep only its name and ordering
    // key (and, while a budget lasts, its text) in compact form. Files that cannot be replayed whatever their
    // order are settled here.
    const order = new RecoveryOrder(READ_AHEAD_BYTES);
    let handle: fs.Dir;
    try {
      handle = fs.opendirSync(sys(dir), { bufferSize: 256 });
    } catch (err) {
      if (codeOf(err, '') !== 'ENOENT') this.error(dir, codeOf(err, 'EUNKNOWN'), `cannot list ${dir}: ${messageOf(err)}`);
      return;
    }
    try {
      for (;;) {
        let entry: fs.Dirent | null;
        try {
          entry = handle.readSync();
        } catch (err) {
          // Nothing is committed from a listing that broke off: the next pass sees the whole directory.
          this.error(dir, codeOf(err, 'EUNKNOWN'), `cannot list ${dir}: ${messageOf(err)}`);
          return;
        }
        if (entry === null) break;
        if (entry.name.endsWith('.json')) this.#scan(entry, order);
      }
    } finally {
      handle.closeSync();
    }
    // What the first pass settled is reported in name order.
    const r = this.report;
    for (const list of [r.kept, r.foreignOwner, r.errors]) list.sort((x, y) => compareNames(x.path, y.path));

    // Second pass, in recovery order (ts, seq, name), batch by batch: each file is parsed again (and read
    // again unless its text was kept), decided, and committed with its batch; nothing of a committed batch
    // stays in memory but its report entries.
    for (const i of order.order()) {
      const name = order.name(i);
      const text = order.text(i);
      this.#process(name, this.#path(name), text === undefined ? undefined : spoolTextOf(text));
      if (this.#queue.length >= this.#batchSize || this.#queueText >= BATCH_TEXT_LIMIT) this.#commit();
    }
    this.#commit();
  }

  /** One line per cause, the cause first: never a line per file. */
  #logSummary(): void {
    const r = this.report;
    const log = this.#logger;
    const dir = this.#loc.dir;
    try {
      const storeKept = r.kept.filter((k) => k.reason === 'store-error').length;
      const f = this.#storeFailure;
      if (f !== undefined) {
        log.error(
          `pending-message recovery: kept ${count(storeKept)} file(s): ${f.code} at ${f.path} (uid ${String(euid())}): ${f.message} — fix: ${f.hint}`,
          { path: f.path, code: f.code, uid: euid(), kept: storeKept },
        );
      }
      const byReason = new Map<KeptReason, { n: number; first: { path: string; detail: string } }>();
      for (const k of r.kept) {
        // Counted by the store failure's line and the not-removed lines; a file a working store gave no verdict
        // for has a line of its own.
        if ((k.reason === 'store-error' && f !== undefined) || k.reason === 'not-removed') continue;
        const g = byReason.get(k.reason);
        if (g === undefined) byReason.set(k.reason, { n: 1, first: k });
        else g.n++;
      }
      for (const [reason, g] of byReason) {
        const note = reason === 'not-checkpointed' ? ' (committed; the next pass removes them without inserting them again)' : '';
        log.warn(`pending-message recovery: kept ${count(g.n)} file(s) (${reason})${note}; the first, ${path.basename(g.first.path)}: ${g.first.detail}`, {
          path: g.first.path,
          reason,
          kept: g.n,
        });
      }
      for (const g of groupByCode(this.#unremoved)) {
        log.error(
          `pending-message recovery: kept ${count(g.n)} recovered file(s) (not-removed): ${g.code} at ${g.where} (uid ${String(euid())}) — ` +
            `fix: ${g.first.hint} Their receipts are committed: the next pass removes them without inserting them again.`,
          { path: g.where, code: g.code, uid: euid(), kept: g.n },
        );
      }
      for (const g of groupByCode(this.#problems)) {
        log.error(
          `pending-message recovery: ${count(g.n)} error(s): ${g.code} at ${g.where} (uid ${String(euid())}): ${g.first.message} — fix: ${g.first.hint}`,
          { path: g.where, code: g.code, uid: euid(), count: g.n },
        );
      }
      if (r.bad.length > 0) {
        log.warn(`pending-message recovery: ${count(r.bad.length)} file(s) rejected by the session store, renamed .bad; the first: ${r.bad[0]?.error ?? ''}`, {
          path: r.bad[0]?.badPath,
        });
      }
      if (r.snapshots.length > 0) {
        log.warn(`pending-message recovery: ${count(r.snapshots.length)} agent-history snapshot(s) left for the operator (never replayed automatically)`, {
          path: dir,
        });
      }
      if (r.foreignOwner.length > 0) {
        const uids = [...new Set(r.foreignOwner.map((x) => x.uid))].join(', ');
        log.info(`pending-message recovery: ${count(r.foreignOwner.length)} payload(s) of uid ${uids} left for that uid's own recovery`, { path: dir });
      }
      const adopted = r.salvage?.adopted.length ?? 0;
      const line =
        `pending-message recovery: ${count(r.inserted.length)} inserted${adopted > 0 ? ` (${count(adopted)} adopted from temp files)` : ''}, ` +
        `${count(r.alreadyCommitted.length)} already committed, ${count(r.kept.length)} kept, ${count(r.bad.length)} bad, ` +
        `${count(r.snapshots.length)} snapshot(s), ${count(r.foreignOwner.length)} foreign, ${count(r.errors.length)} error(s)`;
      const unusual =
        adopted > 0 || (r.salvage?.partial.length ?? 0) > 0 || r.kept.length > 0 || r.bad.length > 0 || r.errors.length > 0;
      if (unusual) log.warn(line, { path: dir });
      else log.info(line, { path: dir });
    } catch {
      // a throwing logger changes nothing about the pass
    }
  }

  /** First-pass work on one `*.json` directory entry. */
  #scan(entry: fs.Dirent, order: RecoveryOrder): void {
    const name = entry.name;
    const p = this.#path(name);
    this.report.scanned++;
    this.#total++;
    if (!entry.isFile()) {
      this.keep(p, 'not-a-regular-file', `${name} is not a regular file`);
      this.#done++;
      return;
    }
    const content = this.#read(name, p);
    if (content === undefined) {
      this.#done++;
      return;
    }
    let payload: unknown;
    try {
      payload = parseJsonTolerant(content.text);
    } catch (err) {
      this.keep(p, 'unparseable', `${name}: ${messageOf(err)}`);
      this.#done++;
      return;
    }
    const { ts, seq } = orderingKey(payload);
    order.add(name, ts, seq, content.bytes === undefined ? content.source : undefined);
  }

  /**
   * Reads a file (`O_NOFOLLOW`); undefined when it is settled instead: vanished (a concurrent pass recovered
   * it), a symbolic link, another uid's, invalid UTF-8 or unreadable.
   */
  #read(name: string, p: string): SpoolText | undefined {
    try {
      return readSpoolText(p);
    } catch (err) {
      if (err instanceof InvalidUtf8Error) {
        this.keep(p, 'unparseable', `${name}: ${messageOf(err)}`);
        return undefined;
      }
      const code = codeOf(err, 'EUNKNOWN');
      if (code === 'ENOENT') return undefined; // recovered by a concurrent pass meanwhile
      if (code === 'ELOOP') {
        this.keep(p, 'not-a-regular-file', `${name} is a symbolic link`);
        return undefined;
      }
      if (code === 'EACCES' || code === 'EPERM') {
        const owner = ownerOf(p);
        if (owner !== undefined && owner !== euid()) {
          this.report.foreignOwner.push({ path: p, uid: owner });
          return undefined;
        }
      }
      this.error(p, code, `cannot read ${p}: ${messageOf(err)}`);
      return undefined;
    }
  }

  #process(name: string, p: string, kept: SpoolText | undefined): void {
    if (this.#storeFailure !== undefined) {
      this.keep(p, 'store-error', 'the session store failed earlier in this pass');
      this.#done++;
      return;
    }
    const content = kept ?? this.#read(name, p);
    if (content === undefined) {
      this.#done++;
      return;
    }
    let payload: unknown;
    try {
      payload = parseJsonTolerant(content.text);
    } catch (err) {
      this.keep(p, 'unparseable', `${name}: ${messageOf(err)}`); // changed since the first pass
      this.#done++;
      return;
    }
    const receiptId = receiptIdOf(name, content);
    let decision: Decision;
    let failure: { readonly err: unknown } | undefined;
    try {
      decision = this.#decide(name, payload);
    } catch (err) {
      failure = { err };
      decision = { type: 'keep', reason: 'read-error', detail: messageOf(err) };
    }
    if (decision.type === 'commit') {
      // The store checks the receipt atomically with the commit (a committed receipt → `duplicate`).
      this.#queue.push({
        path: p,
        kind: decision.kind,
        sessionId: decision.sessionId,
        entry: { receiptId, fileName: name, rows: decision.rows },
      });
      this.#queueText += content.text.length;
      return;
    }
    this.#done++;
    // A file that will not be committed now may still have been committed by an earlier pass (which crashed
    // before removing it): then it is only removed.
    let committed: boolean;
    try {
      committed = this.#options.store.hasReceipt(receiptId);
    } catch (err) {
      this.#storeFailed(err);
      this.keep(p, 'store-error', 'the session store failed earlier in this pass');
      return;
    }
    if (committed) {
      const entry = { path: p, receiptId, removed: false };
      this.report.alreadyCommitted.push(entry);
      this.#awaiting.push(entry);
      return;
    }
    if (failure !== undefined) {
      this.error(p, codeOf(failure.err, 'EUNKNOWN'), `cannot interpret ${p}: ${messageOf(failure.err)}`);
    }
    if (decision.type === 'keep') {
      this.keep(p, decision.reason, decision.detail);
      return;
    }
    this.report.snapshots.push({ path: p, sessionId: decision.sessionId, count: decision.count });
  }

  #decide(name: string, p: unknown): Decision {
    if (!isRecord(p)) {
      return { type: 'keep', reason: 'not-an-object', detail: `${name} holds ${Array.isArray(p) ? 'an array' : typeof p}` };
    }
    const version = p.schema_version;
    if (
      version !== undefined &&
      !(typeof version === 'number' && Number.isInteger(version) && version >= 1 && version <= PAYLOAD_SCHEMA_VERSION)
    ) {
      return {
        type: 'keep',
        reason: 'unknown-schema-version',
        detail: `schema_version ${JSON.stringify(version)} is not one this version reads (<= ${PAYLOAD_SCHEMA_VERSION})`,
      };
    }
    const kind = classifyPayload(p);
    const notAfter = typeof p.ts === 'number' && Number.isFinite(p.ts) ? p.ts : undefined;
    switch (kind) {
      case 'agent_history':
        return {
          type: 'snapshot',
          sessionId: typeof p.session_id === 'string' ? p.session_id : null,
          count: typeof p.count === 'number' ? p.count : Array.isArray(p.messages) ? p.messages.length : null,
        };
      case 'transcript_cap_drop': {
        const data = p.data;
        if (!isRecord(data) || typeof data.session_id !== 'string' || data.session_id === '' || !isRecord(data.message)) {
          return { type: 'keep', reason: 'invalid-cap-drop', detail: 'needs data.session_id and an object data.message' };
        }
        const m = data.message;
        const row: RecoveredRow = {
          sessionId: data.session_id,
          role: m.role ?? 'unknown',
          content: m.content === undefined || m.content === null || m.content === '' ? '' : m.content,
          // The message's own time when it is epoch seconds, else the payload's (the reference used `or`).
          timestamp: epochProblem(m.timestamp) === undefined ? m.timestamp : p.ts,
          toolCallId: m.tool_call_id,
          toolCalls: m.tool_calls,
          toolName: m.tool_name,
          tokenCount: m.token_count,
          finishReason: m.finish_reason,
          platformMessageId: m.platform_message_id,
        };
        return { type: 'commit', kind, sessionId: data.session_id, rows: [row] };
      }
      case 'pending':
      case 'overflow': {
        const data = isRecord(p.data) ? p.data : undefined;
        const text = data?.text;
        if (typeof text !== 'string' || text === '') {
          return { type: 'keep', reason: 'no-text', detail: 'data.text is missing or empty' };
        }
        const resolved = this.#sessionFor(p, data);
        if ('reason' in resolved) return { type: 'keep', ...resolved };
        return {
          type: 'commit',
          kind,
          sessionId: resolved.sessionId,
          rows: [{ sessionId: resolved.sessionId, role: 'user', content: text, timestamp: notAfter }],
        };
      }
      case 'unknown':
        return { type: 'keep', reason: 'unknown-kind', detail: 'not a pending, overflow, cap-drop or agent-history payload' };
    }
  }

  #sessionFor(
    p: Readonly<Record<string, unknown>>,
    data: Readonly<Record<string, unknown>> | undefined,
  ): { sessionId: string } | { reason: KeptReason; detail: string } {
    const direct = data?.session_id;
    if (typeof direct === 'string' && direct !== '') return { sessionId: direct };
    const key = p.session_key;
    if (typeof key !== 'string' || key === '') {
      return { reason: 'unresolved', detail: 'no data.session_id and no session_key' };
    }
    if (this.#resolver === undefined) {
      return { reason: 'unresolved', detail: `no data.session_id and no resolver for session_key ${key}` };
    }
    const notAfter = typeof p.ts === 'number' && Number.isFinite(p.ts) ? p.ts : undefined;
    let id: string | null | undefined;
    try {
      id = this.#resolver(key, notAfter);
    } catch (err) {
      return { reason: 'resolver-error', detail: `resolving ${key} failed: ${messageOf(err)}` };
    }
    if (typeof id !== 'string' || id === '') {
      return { reason: 'unresolved', detail: `session_key ${key} resolves to no session` };
    }
    return { sessionId: id };
  }

  #storeFailed(err: unknown): void {
    if (this.#storeFailure !== undefined) return;
    const code = codeOf(err, 'ESTORE');
    const own = err as { path?: unknown; hint?: unknown } | null;
    const where = typeof own?.path === 'string' && own.path !== '' ? own.path : this.#storePath;
    const hint = typeof own?.hint === 'string' && own.hint !== '' ? own.hint : hintFor(code, where, euid(), egid());
    const failure = { path: where, code, message: messageOf(err), hint };
    this.#storeFailure = failure;
    this.report.errors.push(failure);
  }

  #commit(): void {
    const queue = this.#queue;
    this.#queue = [];
    this.#queueText = 0;
    if (queue.length === 0) return;
    this.#done += queue.length;
    if (this.#storeFailure !== undefined) {
      for (const q of queue) this.keep(q.path, 'store-error', 'the session store failed earlier in this pass');
      this.#progress();
      return;
    }
    let outcomes: ReturnType<SessionStore['commitRecovered']>;
    try {
      outcomes = this.#options.store.commitRecovered(queue.map((q) => q.entry));
    } catch (err) {
      this.#storeFailed(err);
      for (const q of queue) this.keep(q.path, 'store-error', messageOf(err));
      this.#progress();
      return;
    }
    const afterCommit = this.#options.hooks?.afterCommit;
    if (afterCommit !== undefined) {
      const committed = queue
        .filter((_q, i) => outcomes[i]?.status === 'inserted' || outcomes[i]?.status === 'duplicate')
        .map((q) => q.path);
      if (committed.length > 0) afterCommit(committed);
    }
    for (let i = 0; i < queue.length; i++) {
      const q = queue[i];
      if (q === undefined) continue;
      const o = outcomes[i];
      const p = q.path;
      if (o?.receiptId !== q.entry.receiptId) {
        this.keep(p, 'store-error', 'the store returned no outcome for this file');
        continue;
      }
      switch (o.status) {
        case 'inserted': {
          const entry: InsertedEntry = { path: p, receiptId: o.receiptId, kind: q.kind, sessionId: q.sessionId, rowIds: o.rowIds, removed: false };
          this.report.inserted.push(entry);
          this.#awaiting.push(entry);
          break;
        }
        case 'duplicate': {
          const entry = { path: p, receiptId: o.receiptId, removed: false };
          this.report.alreadyCommitted.push(entry);
          this.#awaiting.push(entry);
          break;
        }
        case 'unknown-session':
          this.keep(p, 'unknown-session', `session ${o.sessionId} does not exist in the store`);
          break;
        case 'rejected':
          this.#quarantine(p, o.error);
          break;
      }
    }
    this.#settleRemovals(false);
    this.#progress();
  }

  /**
   * Removes the committed files once the store confirms its commits are in its main database file, not only
   * in its write-ahead log (`checkpoint()`): a WAL that is deleted or lost afterwards cannot take a recovered
   * message with it, since its file is still here. A checkpoint another connection keeps from completing
   * leaves the files for the next batch's checkpoint; at the end of the pass (`final`) they are kept.
   */
  #settleRemovals(final: boolean): void {
    const awaiting = this.#awaiting;
    if (awaiting.length === 0) return;
    const store = this.#options.store;
    let complete = true;
    let detail = '';
    if (typeof store.checkpoint === 'function' && this.#storeFailure === undefined) {
      try {
        const cp = store.checkpoint();
        complete = cp.complete;
        if (!complete) detail = `the checkpoint of ${this.#storePath} did not complete${cp.busy === true ? ' (another connection held it off)' : ''}`;
      } catch (err) {
        this.#storeFailed(err);
      }
    }
    if (this.#storeFailure !== undefined) {
      complete = false;
      detail = `committed, but the store failed before the commit could be checkpointed (${this.#storeFailure.code})`;
    }
    if (!complete) {
      if (!final && this.#storeFailure === undefined) return; // the next batch's checkpoint may complete
      this.#awaiting = [];
      for (const a of awaiting) this.keep(a.path, 'not-checkpointed', detail);
      return;
    }
    this.#awaiting = [];
    const removed: string[] = [];
    for (const a of awaiting) {
      if (this.#remove(a.path)) {
        a.removed = true;
        removed.push(a.path);
      }
    }
    const afterRemove = this.#options.hooks?.afterRemove;
    if (afterRemove !== undefined && removed.length > 0) afterRemove(removed);
  }

  /**
   * Removes a file whose receipt is committed and checkpointed. A refusal keeps the file (`not-removed`); the
   * next pass removes it without inserting it again.
   */
  #remove(p: string): boolean {
    try {
      fs.unlinkSync(sys(p));
      return true;
    } catch (err) {
      const code = codeOf(err, 'EUNKNOWN');
      if (code === 'ENOENT') return true;
      const message = `recovered (receipt committed) but not removed: ${messageOf(err)}`;
      this.keep(p, 'not-removed', message);
      const problem = { path: p, code, message, hint: hintFor(code, this.#loc.dir, euid(), egid()) };
      this.report.errors.push(problem);
      this.#unremoved.push(problem);
      return false;
    }
  }

  /** Renames a file whose rows the store rejected to `<name>.bad` (never over an existing file). */
  #quarantine(p: string, reason: string): void {
    let badPath = `${p}.bad`;
    if (fs.existsSync(sys(badPath))) badPath = `${p}.${Date.now().toString(36)}.bad`;
    try {
      fs.renameSync(sys(p), sys(badPath));
    } catch (err) {
      this.error(p, codeOf(err, 'EUNKNOWN'), `rejected by the store (${reason}) and could not be renamed .bad: ${messageOf(err)}`);
      return;
    }
    this.report.bad.push({ path: p, badPath, error: reason });
  }
}

/** Problems grouped by code: count, the common path, the first of them. */
function groupByCode(problems: readonly Problem[]): { code: string; n: number; where: string; first: Problem }[] {
  const groups = new Map<string, { code: string; n: number; paths: Set<string>; first: Problem }>();
  for (const p of problems) {
    const g = groups.get(p.code);
    if (g === undefined) groups.set(p.code, { code: p.code, n: 1, paths: new Set([p.path]), first: p });
    else {
      g.n++;
      g.paths.add(p.path);
    }
  }
  return [...groups.values()].map((g) => ({ code: g.code, n: g.n, where: g.paths.size === 1 ? g.first.path : path.dirname(g.first.path), first: g.first }));
}

function ownerOf(p: string): number | undefined {
  try {
    return fs.lstatSync(sys(p)).uid;
  } catch {
    return undefined;
  }
}

/**
 * Replays the shutdown spool of a home into a session store, exactly once:
 * 1. a first pass reads every `*.json` in `pending_messages/` (`O_NOFOLLOW`; UTF-8, BOM tolerated; Python's
 *    NaN/Infinity accepted) and keeps only its name and ordering key — and its text while all texts fit 8 MiB;
 * 2. files are replayed in `(ts, seq, name)` order, batch by batch, each parsed again (and read again unless
 *    its text was kept) when its batch comes, so memory does not grow with the payloads of the whole spool;
 * 3. each file is decided on its own (a corrupt file never aborts the pass): inserted, kept (with a reason),
 *    left as an agent-history snapshot, or — when the store rejects its row — renamed `.bad`;
 * 4. a file's rows and its receipt (sha256 of name and bytes) are committed in one transaction, and only then
 *    (after the batch's commit) is the file removed; a file whose receipt already exists is just removed.
 * Files another uid owns (unreadable 0600 payloads) are left in place and reported as that uid's.
 * Never throws for file or store problems: everything lands in the report.
 */
export function recoverPending(options: RecoverOptions): RecoveryReport {
  const refused = (p: string, code: string, message: string, hint: string): RecoveryReport => {
    const report = emptyReport(p);
    report.errors.push({ path: p, code, message, hint });
    try {
      loggerFor((options as Partial<RecoverOptions> | null)?.logger).error(`pending-message recovery: ${code} at ${p}: ${message} — fix: ${hint}`, { path: p, code });
      options.onProgress?.(0, 0);
    } catch {
      // a logger's or progress bar's failure changes nothing
    }
    return report;
  };
  const store: unknown = (options as Partial<RecoverOptions> | null)?.store;
  const usable = (s: unknown): s is SessionStore =>
    s !== null &&
    typeof s === 'object' &&
    typeof (s as Partial<SessionStore>).commitRecovered === 'function' &&
    typeof (s as Partial<SessionStore>).hasReceipt === 'function';
  if (!usable(store)) {
    return refused(
      options.home ?? '',
      'EINVALID_OPTION',
      `recoverPending needs a store with hasReceipt() and commitRecovered(), got ${describeValue(store)}; nothing was read or changed`,
      'pass `store: openSessionDb({ home })` (or another SessionStore).',
    );
  }
  let loc: SpoolLocation;
  try {
    loc = spoolLocation(options);
  } catch (err) {
    const p = options.home ?? '';
    const code = codeOf(err, 'EUNKNOWN');
    return refused(p, code, messageOf(err), hintFor(code, p, euid(), egid()));
  }
  return new Pass(options, loc).run();
}

function emptyReport(dir: string): RecoveryReport {
  return { dir, scanned: 0, inserted: [], alreadyCommitted: [], kept: [], bad: [], snapshots: [], foreignOwner: [], errors: [], salvage: null };
}
