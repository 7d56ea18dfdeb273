/** A recovery pass: list, order, decide and commit the spool's files (recoverPending's work). */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { hintFor } from '@hermes/fs-policy';
import { positiveIntegerProblem } from './errors.js';
import { JsonTooDeepError, parseJsonTolerant } from './json.js';
import { type GatewayLogger, loggerFor } from './log.js';
import { decide, type Decision } from './decide.js';
import { orderingKey } from './payload.js';
import { BatchFiles } from './recover-batch.js';
import { Batches } from './recover-commit.js';
import { logRecoverySummary } from './recover-log.js';
import type { KeptReason, RecoverOptions, RecoveryReport } from './recover-types.js';
import { codeOf, egid, euid, messageOf, type Problem } from './recover-util.js';
import { salvageTemps } from './salvage.js';
import { compareNames } from './names.js';
import { RecoveryOrder } from './ordering.js';
import { forEachSpoolEntry, holdSpool, requireHeld } from './held.js';
import type { HeldDirectory } from '@hermes/fs-policy';
import { asksInBulk, lookUpReceipts, RECEIPT_LOOKUP_FILES, RECEIPT_LOOKUP_TEXT, type ReceiptAnswer } from './recover-receipts.js';
import { readSpoolText, type SpoolText } from './read.js';
import { type Chunked, idsToAsk, prepareFile, readFailureOf, unread } from './recover-chunk.js';
import { isProfileHome, type SpoolLocation } from './spool.js';
import { GatewayLockError, lockForPass } from './lock.js';
import { BATCH_TEXT_LIMIT, DEFAULT_RECOVERY_BATCH_SIZE, emptyReport, INTERNED_SESSIONS, Interner, READ_AHEAD_BYTES } from './recover-limits.js';

export { DEFAULT_RECOVERY_BATCH_SIZE, emptyReport } from './recover-limits.js';

/** What {@link Pass} parses a file to when it could not be parsed (the file was kept). */
const UNPARSED: unique symbol = Symbol('unparsed');

/** One recovery pass over a held spool (see {@link recoverPending} in recover.ts). */
export class Pass {
  readonly report: RecoveryReport;
  readonly #logger: GatewayLogger;
  readonly #options: RecoverOptions;
  readonly #loc: SpoolLocation;
  readonly #resolver: ((key: string, notAfter: number | undefined) => string | null | undefined) | undefined;
  readonly #batchSize: number;
  /** The store reads the parsed payload of each entry (SessionStore.wantsPayloads). */
  readonly #wantsPayloads: boolean;
  readonly #storePath: string;
  readonly #batches: Batches;
  /** The batch files of the spool: their members are recovered as files (recover-batch.ts). */
  readonly #batchFiles: BatchFiles;
  /** Errors other than the store's, logged grouped by code at the end. */
  readonly #problems: Problem[] = [];
  /** `<dir>/`, flat: the start of every spool file's path. */
  readonly #prefix: string;
  /** One string per session id in the report, not one per file (a spool's files mostly name a few sessions). */
  readonly #sessions = new Interner(INTERNED_SESSIONS);
  /** The held spool, looked up once per pass (every read goes through its descriptor). */
  #held: HeldDirectory | undefined;
  /** Files dealt with so far (any outcome) and files found, for onProgress. */
  #done = 0;
  #total = 0;
  /** Commits so far: a receipt lookup made before the last one is asked again. */
  #commits = 0;

  constructor(options: RecoverOptions, loc: SpoolLocation) {
    this.#options = options;
    this.#loc = loc;
    this.#prefix = `${loc.dir}${path.sep}`;
    this.#logger = loggerFor(options.logger);
    this.report = emptyReport(loc.dir);
    let batchSize = DEFAULT_RECOVERY_BATCH_SIZE;
    if (options.batchSize !== undefined) {
      const problem = positiveIntegerProblem('batchSize', options.batchSize);
      if (problem === undefined) batchSize = options.batchSize;
      else this.error(loc.dir, 'EINVALID_OPTION', `${problem}; used ${String(DEFAULT_RECOVERY_BATCH_SIZE)}`, 'pass a positive integer batchSize, or omit it.');
    }
    this.#batchSize = batchSize;
    this.#wantsPayloads = options.store.wantsPayloads === true;
    const store = options.store;
    const storePath = (store as { path?: unknown }).path;
    this.#storePath = typeof storePath === 'string' && storePath !== '' ? storePath : 'the session store';
    const sink = {
      keep: (p: string, reason: KeptReason, detail: string) => {
        this.keep(p, reason, detail);
      },
      error: (p: string, code: string, message: string, hint?: string) => {
        this.error(p, code, message, hint);
      },
    };
    this.#batches = new Batches(this.report, options, this.#storePath, loc.dir, {
      ...sink,
      progress: () => {
        this.#progress();
      },
      done: (n) => {
        this.#done += n;
      },
      rejectedMember: (p, reason) => {
        this.#batchFiles.rejected(p, reason);
      },
    });
    this.#batchFiles = new BatchFiles(loc.dir, loc.env, this.report, sink);
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
    if (this.#batchFiles.keep(p, reason, detail)) return; // a batch member: written out, or its batch kept
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
    return this.#prefix + name; // one string per file in the report: `<dir>/` is shared by all of them
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
    // One live writer set per home: the pass holds the gateway lock (re-entrant in the gateway that holds it),
    // so it never interleaves with another process's flushes. Refused: nothing is read, inserted or removed.
    const lock = lockForPass(this.#loc, this.#options, this.#logger);
    if (lock instanceof GatewayLockError) {
      release();
      this.error(lock.path, lock.code, lock.message, lock.hint);
      return this.#finish();
    }
    try {
      this.#held = requireHeld(this.#loc.dir);
      this.#batches.held = this.#held;
      return this.#runHeld();
    } finally {
      lock.release();
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
    this.#batches.settleRemovals(true);
    this.#batchFiles.finish(this.#batches.storeFailure !== undefined);
    return this.#finish();
  }

  #finish(): RecoveryReport {
    // The pass is over, whatever it could do: the last call is (total, total).
    this.#done = this.#total;
    this.#progress();
    logRecoverySummary({
      report: this.report,
      logger: this.#logger,
      dir: this.#loc.dir,
      storeFailure: this.#batches.storeFailure,
      unremoved: this.#batches.unremoved,
      problems: this.#problems,
    });
    return this.report;
  }

  #list(): void {
    const { dir } = this.#loc;
    // First pass, in directory order, streamed: read each `*.json` file and keep only its name and ordering
    // key (and, while a budget lasts, its text) in compact form. Files that cannot be replayed whatever their
    // order are settled here.
    const order = new RecoveryOrder(READ_AHEAD_BYTES);
    const broken = forEachSpoolEntry(dir, (entry) => {
      if (entry.name.endsWith('.json')) this.#scan(entry, order);
    });
    if (broken !== undefined) {
      // Nothing is committed from a listing that broke off: the next pass sees the whole directory.
      if (!broken.opening || codeOf(broken.err, '') !== 'ENOENT') this.error(dir, codeOf(broken.err, 'EUNKNOWN'), `cannot list ${dir}: ${messageOf(broken.err)}`);
      return;
    }
    // What the first pass settled is reported in name order.
    const r = this.report;
    for (const list of [r.kept, r.foreignOwner, r.errors]) list.sort((x, y) => compareNames(x.path, y.path));

    // Second pass, in recovery order (ts, seq, name), batch by batch: each file is parsed again (and read
    // again unless its text was kept), decided, and committed with its batch; nothing of a committed batch
    // stays in memory but its report entries.
    let chunk: Chunked[] = [];
    let chunkText = 0;
    for (const i of order.order()) {
      // A batch member is recovered as the file `name` holding its text would be, under its own report path.
      const member = this.#batchFiles.pathOf(order, i);
      const p = member ?? this.#path(order.name(i));
      const file = this.#batches.storeFailure === undefined ? prepareFile(this.#held ?? requireHeld(this.#loc.dir), order, i, p, member) : unread(order, i, p, member);
      chunk.push(file);
      chunkText += file.content?.text.length ?? 0;
      if (chunk.length >= RECEIPT_LOOKUP_FILES || chunkText >= RECEIPT_LOOKUP_TEXT) {
        this.#settleChunk(chunk);
        chunk = [];
        chunkText = 0;
      }
    }
    this.#settleChunk(chunk);
    this.#commit();
  }

  /**
   * Settles a chunk's files in order: one receipt lookup for the chunk (asked again for the rest of it after a
   * commit: a receipt this pass committed meanwhile must be seen), then each file decided, queued or reported.
   */
  #settleChunk(chunk: readonly Chunked[]): void {
    const store = this.#options.store;
    const bulk = asksInBulk(store);
    let answer: ReceiptAnswer | undefined;
    let commits = this.#commits;
    for (const [j, file] of chunk.entries()) {
      if (answer === undefined || commits !== this.#commits) {
        answer = this.#batches.storeFailure === undefined ? lookUpReceipts(store, idsToAsk(chunk, j, bulk)) : { committed: new Set() };
        commits = this.#commits;
      }
      if (file.member !== undefined && file.text !== undefined) this.#batchFiles.stage(file.member, file.text);
      const before = this.#batches.queued.files;
      this.#settle(file, answer, bulk);
      const queued = this.#batches.queued;
      if (file.member !== undefined && queued.files === before) this.#batchFiles.unstage(file.member);
      if (queued.files >= this.#batchSize || queued.text >= BATCH_TEXT_LIMIT) this.#commit();
    }
  }

  #commit(): void {
    this.#commits++;
    this.#batches.commit();
    this.#batchFiles.committed();
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
    const payload = this.#parse(name, p, content);
    if (payload === UNPARSED) return;
    const batch = this.#batchFiles.scan(name, payload, order);
    if (batch !== undefined) {
      // Its members are dealt with one by one; the batch file itself is settled with the last of them.
      this.#total += batch.members;
      this.#done++;
      return;
    }
    const { ts, seq } = orderingKey(payload);
    order.add(name, ts, seq, content.bytes === undefined ? content.source : undefined);
  }

  /** Parses a file's text; {@link UNPARSED} when it is settled instead: kept as `too-deep` or `unparseable`. */
  #parse(name: string, p: string, content: SpoolText): unknown {
    try {
      return parseJsonTolerant(content.text);
    } catch (err) {
      this.#unparsed(name, p, err);
      return UNPARSED;
    }
  }

  #unparsed(name: string, p: string, err: unknown): void {
    this.keep(p, err instanceof JsonTooDeepError ? 'too-deep' : 'unparseable', `${name}: ${messageOf(err)}`);
    this.#done++;
  }

  /**
   * Reads a file (`O_NOFOLLOW`); undefined when it is settled instead: vanished (a concurrent pass recovered
   * it), a symbolic link, another uid's, invalid UTF-8 or unreadable.
   */
  #read(name: string, p: string): SpoolText | undefined {
    try {
      return readSpoolText(this.#held ?? requireHeld(this.#loc.dir), name);
    } catch (err) {
      this.#unreadable(name, p, err);
      return undefined;
    }
  }

  /** Settles a file that could not be read (see {@link #read}). */
  #unreadable(name: string, p: string, err: unknown): void {
    const f = readFailureOf(name, p, err);
    if (f.type === 'keep') this.keep(p, f.reason, f.detail);
    else if (f.type === 'foreign') this.report.foreignOwner.push({ path: p, uid: f.uid });
    else if (f.type === 'error') this.error(p, f.code, f.message);
  }

  /** Settles one file of a chunk: queued for the next commit, or reported (kept, committed earlier, …). */
  #settle(file: Chunked, answer: ReceiptAnswer, bulk: boolean): void {
    const { name, p, parsed } = file;
    if (this.#batches.storeFailure !== undefined) {
      this.keep(p, 'store-error', 'the session store failed earlier in this pass');
      this.#done++;
      return;
    }
    if (file.readFailure !== undefined) this.#unreadable(name, p, file.readFailure.err);
    if (file.parseFailure !== undefined) {
      this.#unparsed(name, p, file.parseFailure.err);
      return;
    }
    if (parsed === undefined || file.content === undefined) {
      this.#done++;
      return;
    }
    const { payload, receiptId } = parsed;
    let decision: Decision;
    let failure: { readonly err: unknown } | undefined;
    try {
      decision = decide(name, payload, this.#resolver);
    } catch (err) {
      failure = { err };
      decision = { type: 'keep', reason: 'read-error', detail: messageOf(err) };
    }
    if ('failure' in answer) {
      this.#done++;
      this.#batches.storeFailed(answer.failure);
      this.keep(p, 'store-error', 'the session store failed earlier in this pass');
      return;
    }
    // A receipt of an earlier version (sha256 of name and bytes) also says "committed": a file a pass of that
    // version committed but could not remove is only removed.
    let committed = answer.committed.has(parsed.legacyId);
    if (decision.type === 'commit' && !committed) {
      // The store checks the receipt atomically with the commit (a committed receipt → `duplicate`).
      this.#batches.enqueue({ path: p, kind: decision.kind, sessionId: this.#sessions.intern(decision.sessionId), entry: this.#wantsPayloads ? { receiptId, fileName: name, rows: decision.rows, payload } : { receiptId, fileName: name, rows: decision.rows } }, file.content.text.length);
      return;
    }
    this.#done++;
    // A file that will not be committed now may still have been committed by an earlier pass (which crashed
    // before removing it): then it is only removed.
    if (!committed) {
      const own = bulk ? answer : lookUpReceipts(this.#options.store, [receiptId]);
      if ('failure' in own) {
        this.#batches.storeFailed(own.failure);
        this.keep(p, 'store-error', 'the session store failed earlier in this pass');
        return;
      }
      committed = own.committed.has(receiptId);
    }
    if (committed) {
      this.#batches.awaitRemoval(p, receiptId);
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
    if (this.#batchFiles.snapshot(p, decision.sessionId, decision.count)) return; // a batch member: written out
    this.report.snapshots.push({ path: p, sessionId: decision.sessionId, count: decision.count });
  }
}
