import * as fs from 'node:fs';
import * as path from 'node:path';
import { hintFor, isErrnoException } from '@hermes/fs-policy';
import { describeValue, positiveIntegerProblem } from './errors.js';
import { parseJsonTolerant } from './json.js';
import { count, type GatewayLogger, loggerFor } from './log.js';
import { decide, type Decision } from './decide.js';
import { payloadIdentity } from './identity.js';
import { orderingKey, type PayloadKind } from './payload.js';
import type { InsertedEntry, KeptReason, RecoverOptions, RecoveryReport } from './recover-types.js';
import { salvageTemps } from './salvage.js';
import { compareNames } from './names.js';
import { RecoveryOrder } from './ordering.js';
import { explain, holdSpool, requireHeld, sys } from './held.js';
import { InvalidUtf8Error, readSpoolText, receiptIdOf, type SpoolText, spoolTextOf } from './read.js';
import { isProfileHome, type SpoolLocation, spoolLocation } from './spool.js';
import type { RecoveryBatchEntry, SessionStore } from './store.js';

export type { InsertedEntry, KeptReason, RecoverOptions, RecoveryHooks, RecoveryReport } from './recover-types.js';

/** Files committed per store transaction unless {@link RecoverOptions.batchSize} says otherwise. */
export const DEFAULT_RECOVERY_BATCH_SIZE = 2000;
/** A batch is also committed once the payload text it holds reaches this many UTF-16 code units (~8 MiB). */
const BATCH_TEXT_LIMIT = 8 * 1024 * 1024;
/**
 * When the texts of all the files the first pass read fit in this many bytes, they are kept (outside the JS
 * heap) and every file is read once; a larger spool is read again, file by file, as its batches come.
 */
const READ_AHEAD_BYTES = 8 * 1024 * 1024;

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
  /** The first file of this pass queued for each receipt id (payload identity). */
  readonly #firstOf = new Map<string, string>();
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
      if (r.duplicates.length > 0) {
        const d = r.duplicates[0];
        log.warn(
          `pending-message recovery: ${count(r.duplicates.length)} file(s) held a payload this pass delivered under another name (duplicate, delivered once, removed); ` +
            `the first: ${path.basename(d?.path ?? '')} duplicates ${path.basename(d?.of ?? '')}`,
          { path: d?.path, duplicates: r.duplicates.length },
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
      return readSpoolText(requireHeld(this.#loc.dir), name);
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
    // Exactly once per message, not per file name: the receipt is the payload's identity (identity.ts).
    const receiptId = payloadIdentity(payload, content);
    let decision: Decision;
    let failure: { readonly err: unknown } | undefined;
    try {
      decision = decide(name, payload, this.#resolver);
    } catch (err) {
      failure = { err };
      decision = { type: 'keep', reason: 'read-error', detail: messageOf(err) };
    }
    // A receipt of an earlier version (sha256 of name and bytes) also says "committed": a file a pass of that
    // version committed but could not remove is only removed.
    let committed: boolean;
    try {
      committed = this.#options.store.hasReceipt(receiptIdOf(name, content));
    } catch (err) {
      this.#done++;
      this.#storeFailed(err);
      this.keep(p, 'store-error', 'the session store failed earlier in this pass');
      return;
    }
    if (decision.type === 'commit' && !committed) {
      // The store checks the receipt atomically with the commit (a committed receipt → `duplicate`).
      if (!this.#firstOf.has(receiptId)) this.#firstOf.set(receiptId, p);
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
    if (!committed) {
      try {
        committed = this.#options.store.hasReceipt(receiptId);
      } catch (err) {
        this.#storeFailed(err);
        this.keep(p, 'store-error', 'the session store failed earlier in this pass');
        return;
      }
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
    if (decision.type === 'commit') return; // not reached: an uncommitted payload to commit was queued above
    if (decision.type === 'keep') {
      this.keep(p, decision.reason, decision.detail);
      return;
    }
    this.report.snapshots.push({ path: p, sessionId: decision.sessionId, count: decision.count });
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
          const first = this.#firstOf.get(o.receiptId);
          // Another name of a payload this pass committed: delivered once, this name reported and removed.
          if (first !== undefined && first !== p) {
            const dup = { path: p, receiptId: o.receiptId, of: first, removed: false };
            this.report.duplicates.push(dup);
            this.#awaiting.push(dup);
          } else {
            const entry = { path: p, receiptId: o.receiptId, removed: false };
            this.report.alreadyCommitted.push(entry);
            this.#awaiting.push(entry);
          }
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
 * 4. a file's rows and its receipt — the payload's identity (its writer's process id, pid and seq, or a hash
 *    of its bytes; see identity.ts) — are committed in one transaction, and only then (after the batch's
 *    commit) is the file removed; a file whose receipt already exists is just removed, so two names of one
 *    payload are delivered once (the second is reported in `duplicates`).
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
  return { dir, scanned: 0, inserted: [], alreadyCommitted: [], duplicates: [], kept: [], bad: [], snapshots: [], foreignOwner: [], errors: [], salvage: null };
}
