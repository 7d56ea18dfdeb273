import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { hintFor, isErrnoException } from '@hermes/fs-policy';
import { parseJsonTolerant } from './json.js';
import { type GatewayLogger, loggerFor } from './log.js';
import { classifyPayload, isRecord, orderingKey, PAYLOAD_SCHEMA_VERSION, type PayloadKind } from './payload.js';
import { isProfileHome, type SpoolLocation, spoolLocation, type SpoolLocationOptions } from './spool.js';
import type { RecoveredRow, RecoveryBatchEntry, SessionStore } from './store.js';

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
  /** Files committed per store transaction (default 500). */
  batchSize?: number;
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

interface Scanned {
  readonly name: string;
  readonly path: string;
  readonly receiptId: string;
  readonly payload: unknown;
  readonly ts: number;
  readonly seq: number;
}

type Decision =
  | { readonly type: 'keep'; readonly reason: KeptReason; readonly detail: string }
  | { readonly type: 'snapshot'; readonly sessionId: string | null; readonly count: number | null }
  | { readonly type: 'commit'; readonly kind: PayloadKind; readonly sessionId: string; readonly rows: RecoveredRow[] };

interface Queued {
  readonly file: Scanned;
  readonly kind: PayloadKind;
  readonly sessionId: string;
  readonly entry: RecoveryBatchEntry;
}

const NOFOLLOW = (fs.constants as Partial<typeof fs.constants>).O_NOFOLLOW ?? 0;

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
  #storeDown = false;

  constructor(options: RecoverOptions, loc: SpoolLocation) {
    this.#options = options;
    this.#loc = loc;
    this.#logger = loggerFor(options.logger);
    this.#batchSize = Math.max(1, options.batchSize ?? 500);
    const store = options.store;
    this.#resolver =
      options.resolveSessionId ??
      (typeof store.resolveSessionIdForKey === 'function'
        ? (key, notAfter) => store.resolveSessionIdForKey?.(key, notAfter)
        : undefined);
    this.report = {
      dir: loc.dir,
      scanned: 0,
      inserted: [],
      alreadyCommitted: [],
      kept: [],
      bad: [],
      snapshots: [],
      foreignOwner: [],
      errors: [],
    };
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

  run(): RecoveryReport {
    const { home, dir } = this.#loc;
    if (!fs.existsSync(home)) {
      if (isProfileHome(home)) this.error(home, 'EPROFILE_MISSING', `named profile home does not exist: ${home}`);
      return this.report;
    }
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch (err) {
      if (codeOf(err, '') !== 'ENOENT') this.error(dir, codeOf(err, 'EUNKNOWN'), `cannot list ${dir}: ${messageOf(err)}`);
      return this.report;
    }
    const files = entries.filter((e) => e.name.endsWith('.json')).sort((a, b) => compareNames(a.name, b.name));
    this.report.scanned = files.length;
    const scanned: Scanned[] = [];
    for (const entry of files) {
      const p = path.join(dir, entry.name);
      if (!entry.isFile()) {
        this.keep(p, 'not-a-regular-file', `${entry.name} is not a regular file`);
        continue;
      }
      const s = this.#scan(entry.name, p);
      if (s !== undefined) scanned.push(s);
    }
    // Chronological replay: (ts, seq, name); see orderingKey for missing/NaN values.
    scanned.sort((a, b) => a.ts - b.ts || a.seq - b.seq || compareNames(a.name, b.name));
    for (const s of scanned) this.#process(s);
    this.#commit();
    const r = this.report;
    this.#logger.info(
      `pending-message recovery: ${r.inserted.length} inserted, ${r.alreadyCommitted.length} already committed, ` +
        `${r.kept.length} kept, ${r.bad.length} bad, ${r.snapshots.length} snapshot(s), ${r.foreignOwner.length} foreign, ` +
        `${r.errors.length} error(s)`,
      { path: dir },
    );
    return r;
  }

  /** Reads a file exactly once; undefined when it is handled (foreign, vanished, unreadable, unparseable). */
  #scan(name: string, p: string): Scanned | undefined {
    let raw: Buffer;
    try {
      const fd = fs.openSync(p, fs.constants.O_RDONLY | NOFOLLOW);
      try {
        raw = fs.readFileSync(fd);
      } finally {
        fs.closeSync(fd);
      }
    } catch (err) {
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
    const receiptId = createHash('sha256').update(name).update('\u0000').update(raw).digest('hex');
    let payload: unknown;
    try {
      // TextDecoder drops a UTF-8 BOM (Python's utf-8-sig) and, with `fatal`, refuses invalid UTF-8.
      const text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
      payload = parseJsonTolerant(text);
    } catch (err) {
      this.keep(p, 'unparseable', `${name}: ${messageOf(err)}`);
      return undefined;
    }
    const { ts, seq } = orderingKey(payload);
    return { name, path: p, receiptId, payload, ts, seq };
  }

  #process(s: Scanned): void {
    const store = this.#options.store;
    if (this.#storeDown) {
      this.keep(s.path, 'store-error', 'the session store failed earlier in this pass');
      return;
    }
    let committed: boolean;
    try {
      committed = store.hasReceipt(s.receiptId);
    } catch (err) {
      this.#storeFailed(err);
      this.keep(s.path, 'store-error', 'the session store failed earlier in this pass');
      return;
    }
    if (committed) {
      this.report.alreadyCommitted.push({ path: s.path, receiptId: s.receiptId, removed: this.#remove(s.path) });
      return;
    }
    let decision: Decision;
    try {
      decision = this.#decide(s);
    } catch (err) {
      this.error(s.path, codeOf(err, 'EUNKNOWN'), `cannot interpret ${s.path}: ${messageOf(err)}`);
      this.keep(s.path, 'read-error', messageOf(err));
      return;
    }
    switch (decision.type) {
      case 'keep':
        this.keep(s.path, decision.reason, decision.detail);
        return;
      case 'snapshot':
        this.report.snapshots.push({ path: s.path, sessionId: decision.sessionId, count: decision.count });
        this.#logger.warn('agent-history snapshot left for the operator (not replayed automatically)', {
          path: s.path,
          session_id: decision.sessionId ?? undefined,
          count: decision.count ?? undefined,
        });
        return;
      case 'commit':
        this.#queue.push({
          file: s,
          kind: decision.kind,
          sessionId: decision.sessionId,
          entry: { receiptId: s.receiptId, fileName: s.name, rows: decision.rows },
        });
        if (this.#queue.length >= this.#batchSize) this.#commit();
    }
  }

  #decide(s: Scanned): Decision {
    const p = s.payload;
    if (!isRecord(p)) {
      return { type: 'keep', reason: 'not-an-object', detail: `${s.name} holds ${Array.isArray(p) ? 'an array' : typeof p}` };
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
    if (queue.length === 0) return;
    if (this.#storeDown) {
      for (const q of queue) this.keep(q.file.path, 'store-error', 'the session store failed earlier in this pass');
      return;
    }
    let outcomes: ReturnType<SessionStore['commitRecovered']>;
    try {
      outcomes = this.#options.store.commitRecovered(queue.map((q) => q.entry));
    } catch (err) {
      this.#storeFailed(err);
      for (const q of queue) this.keep(q.file.path, 'store-error', messageOf(err));
      return;
    }
    const committed = queue
      .filter((_q, i) => outcomes[i]?.status === 'inserted' || outcomes[i]?.status === 'duplicate')
      .map((q) => q.file.path);
    if (committed.length > 0) this.#options.hooks?.afterCommit?.(committed);
    queue.forEach((q, i) => {
      const o = outcomes[i];
      const p = q.file.path;
      if (o?.receiptId !== q.entry.receiptId) {
        this.keep(p, 'store-error', 'the store returned no outcome for this file');
        return;
      }
      switch (o.status) {
        case 'inserted':
          this.report.inserted.push({ path: p, receiptId: o.receiptId, kind: q.kind, sessionId: q.sessionId, rowIds: o.rowIds });
          this.#remove(p);
          return;
        case 'duplicate':
          this.report.alreadyCommitted.push({ path: p, receiptId: o.receiptId, removed: this.#remove(p) });
          return;
        case 'unknown-session':
          this.keep(p, 'unknown-session', `session ${o.sessionId} does not exist in the store`);
          return;
        case 'rejected':
          this.#quarantine(p, o.error);
          return;
      }
    });
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

function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
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
 * 1. every `*.json` in `pending_messages/` is read once (UTF-8, BOM tolerated; Python's NaN/Infinity accepted);
 * 2. files are ordered by `(ts, seq, name)`;
 * 3. each file is decided on its own (a corrupt file never aborts the pass): inserted, kept (with a reason),
 *    left as an agent-history snapshot, or — when the store rejects its row — renamed `.bad`;
 * 4. a file's rows and its receipt (sha256 of name and bytes) are committed in one transaction, and only then
 *    is the file removed; a file whose receipt already exists is just removed.
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
    return {
      dir: p,
      scanned: 0,
      inserted: [],
      alreadyCommitted: [],
      kept: [],
      bad: [],
      snapshots: [],
      foreignOwner: [],
      errors: [{ path: p, code, message: messageOf(err), hint: hintFor(code, p, euid(), egid()) }],
    };
  }
  return new Pass(options, loc).run();
}
