import * as fs from 'node:fs';
import * as path from 'node:path';
import { hintFor, isErrnoException } from '@hermes/fs-policy';
import { parseJsonTolerant } from './json.js';
import { type GatewayLogger, loggerFor } from './log.js';
import { classifyPayload, isRecord, orderingKey, PAYLOAD_SCHEMA_VERSION, type PayloadKind } from './payload.js';
import { compareNames } from './names.js';
import { RecoveryOrder } from './ordering.js';
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
  /** Reading or interpreting the file failed unexpectedly (see `errors`). */
  | 'read-error';

export interface RecoveryHooks {
  /**
   * Test seam, called after a batch's rows and receipts are committed and before the files are removed, with
   * the paths of the committed files. A crash test blocks here and kills the process.
   */
  afterCommit?: (paths: readonly string[]) => void;
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
}

export interface InsertedEntry {
  readonly path: string;
  readonly receiptId: string;
  readonly kind: PayloadKind;
  readonly sessionId: string;
  readonly rowIds: readonly number[];
}

export interface RecoveryReport {
  readonly dir: string;
  /** `*.json` files seen. */
  scanned: number;
  /** Files whose rows and receipt were committed by this pass (and which were then removed). */
  readonly inserted: InsertedEntry[];
  /** Files whose receipt was committed by an earlier pass (crash between commit and unlink): removed now, nothing inserted. */
  readonly alreadyCommitted: { readonly path: string; readonly receiptId: string; readonly removed: boolean }[];
  readonly kept: { readonly path: string; readonly reason: KeptReason; readonly detail: string }[];
  /** Files whose rows the store rejected, renamed to `<name>.bad`. */
  readonly bad: { readonly path: string; readonly badPath: string; readonly error: string }[];
  /** Agent-history snapshots, left in place for the operator. */
  readonly snapshots: { readonly path: string; readonly sessionId: string | null; readonly count: number | null }[];
  /** Files another uid owns and this process cannot read (0600 payloads): that uid's recovery picks them up. */
  readonly foreignOwner: { readonly path: string; readonly uid: number }[];
  readonly errors: { readonly path: string; readonly code: string; readonly message: string; readonly hint: string }[];
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

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

class Pass {
  readonly report: RecoveryReport;
  readonly #logger: GatewayLogger;
  readonly #options: RecoverOptions;
  readonly #loc: SpoolLocation;
  readonly #resolver: ((key: string, notAfter: number | undefined) => string | null | undefined) | undefined;
  readonly #batchSize: number;
  #queue: Queued[] = [];
  #queueText = 0;
  #storeDown = false;
  /** Files dealt with so far (any outcome) and files found, for onProgress. */
  #done = 0;
  #total = 0;

  constructor(options: RecoverOptions, loc: SpoolLocation) {
    this.#options = options;
    this.#loc = loc;
    this.#logger = loggerFor(options.logger);
    const batchSize = options.batchSize ?? DEFAULT_RECOVERY_BATCH_SIZE;
    this.#batchSize = Number.isFinite(batchSize) ? Math.max(1, Math.floor(batchSize)) : DEFAULT_RECOVERY_BATCH_SIZE;
    const store = options.store;
    this.#resolver =
      options.resolveSessionId ??
      (typeof store.resolveSessionIdForKey === 'function'
        ? (key, notAfter) => store.resolveSessionIdForKey?.(key, notAfter)
        : undefined);
    this.report = emptyReport(loc.dir);
  }

  error(p: string, code: string, message: string): void {
    const hint = hintFor(code, p, euid(), egid());
    this.report.errors.push({ path: p, code, message, hint });
    this.#logger.error(`pending-message recovery: ${message}`, { path: p, code, uid: euid(), hint });
  }

  keep(p: string, reason: KeptReason, detail: string): void {
    this.report.kept.push({ path: p, reason, detail });
    this.#logger.warn(`pending message kept (${reason}): ${detail}`, { path: p });
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
    this.#list();
    // The pass is over, whatever it could do: the last call is (total, total).
    this.#done = this.#total;
    this.#progress();
    return this.report;
  }

  #list(): void {
    const { home, dir } = this.#loc;
    if (!fs.existsSync(home)) {
      if (isProfileHome(home)) this.error(home, 'EPROFILE_MISSING', `named profile home does not exist: ${home}`);
      return;
    }
    // First pass, in directory order, streamed: read each `*.json` file and keep only its name and ordering
    // key (and, while a budget lasts, its text) in compact form. Files that cannot be replayed whatever their
    // order are settled here.
    const order = new RecoveryOrder(READ_AHEAD_BYTES);
    let handle: fs.Dir;
    try {
      handle = fs.opendirSync(dir, { bufferSize: 256 });
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
    this.#logger.info(
      `pending-message recovery: ${r.inserted.length} inserted, ${r.alreadyCommitted.length} already committed, ` +
        `${r.kept.length} kept, ${r.bad.length} bad, ${r.snapshots.length} snapshot(s), ${r.foreignOwner.length} foreign, ` +
        `${r.errors.length} error(s)`,
      { path: dir },
    );
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
          this.#logger.info(`pending message belongs to uid ${owner}; left for that uid's own recovery`, {
            path: p,
            uid: owner,
          });
          return undefined;
        }
      }
      this.error(p, code, `cannot read ${p}: ${messageOf(err)}`);
      return undefined;
    }
  }

  #process(name: string, p: string, kept: SpoolText | undefined): void {
    if (this.#storeDown) {
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
      this.report.alreadyCommitted.push({ path: p, receiptId, removed: this.#remove(p) });
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
    this.#logger.warn('agent-history snapshot left for the operator (not replayed automatically)', {
      path: p,
      session_id: decision.sessionId ?? undefined,
      count: decision.count ?? undefined,
    });
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
          timestamp: truthy(m.timestamp) ? m.timestamp : p.ts,
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
    this.#storeDown = true;
    this.error(this.#loc.dir, codeOf(err, 'ESTORE'), `the session store failed; files are kept for the next pass: ${messageOf(err)}`);
  }

  #commit(): void {
    const queue = this.#queue;
    this.#queue = [];
    this.#queueText = 0;
    if (queue.length === 0) return;
    this.#done += queue.length;
    if (this.#storeDown) {
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
    // Only now, with the batch's receipts durable, are its files removed (in recovery order).
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
        case 'inserted':
          this.report.inserted.push({ path: p, receiptId: o.receiptId, kind: q.kind, sessionId: q.sessionId, rowIds: o.rowIds });
          this.#remove(p);
          break;
        case 'duplicate':
          this.report.alreadyCommitted.push({ path: p, receiptId: o.receiptId, removed: this.#remove(p) });
          break;
        case 'unknown-session':
          this.keep(p, 'unknown-session', `session ${o.sessionId} does not exist in the store`);
          break;
        case 'rejected':
          this.#quarantine(p, o.error);
          break;
      }
    }
    this.#progress();
  }

  /** Removes a file whose receipt is committed. A failure is reported; the next pass removes it (no duplicate). */
  #remove(p: string): boolean {
    try {
      fs.unlinkSync(p);
      return true;
    } catch (err) {
      const code = codeOf(err, 'EUNKNOWN');
      if (code === 'ENOENT') return true;
      this.error(
        p,
        code,
        `recovered (receipt committed) but not removed: ${messageOf(err)}; the next pass removes it without inserting it again`,
      );
      return false;
    }
  }

  /** Renames a file whose rows the store rejected to `<name>.bad` (never over an existing file). */
  #quarantine(p: string, reason: string): void {
    let badPath = `${p}.bad`;
    if (fs.existsSync(badPath)) badPath = `${p}.${Date.now().toString(36)}.bad`;
    try {
      fs.renameSync(p, badPath);
    } catch (err) {
      this.error(p, codeOf(err, 'EUNKNOWN'), `rejected by the store (${reason}) and could not be renamed .bad: ${messageOf(err)}`);
      return;
    }
    this.report.bad.push({ path: p, badPath, error: reason });
    this.#logger.warn(`pending message rejected by the session store, renamed .bad: ${reason}`, { path: p, badPath });
  }
}

function truthy(value: unknown): boolean {
  return value !== undefined && value !== null && value !== 0 && value !== '' && value !== false && !Number.isNaN(value);
}

function ownerOf(p: string): number | undefined {
  try {
    return fs.lstatSync(p).uid;
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
  let loc: SpoolLocation;
  try {
    loc = spoolLocation(options);
  } catch (err) {
    const p = options.home ?? '';
    const code = codeOf(err, 'EUNKNOWN');
    const report = emptyReport(p);
    report.errors.push({ path: p, code, message: messageOf(err), hint: hintFor(code, p, euid(), egid()) });
    try {
      options.onProgress?.(0, 0);
    } catch {
      // a progress bar's failure changes nothing
    }
    return report;
  }
  return new Pass(options, loc).run();
}

function emptyReport(dir: string): RecoveryReport {
  return { dir, scanned: 0, inserted: [], alreadyCommitted: [], kept: [], bad: [], snapshots: [], foreignOwner: [], errors: [] };
}
