import {
  atomicWriteJson,
  atomicWriteJsonSync,
  FsPolicyError,
  fsyncDirectory,
  fsyncDirectorySync,
  isErrnoException,
  secureMkdir,
  secureMkdirSync,
  type WriteResult,
} from '@hermes/fs-policy';
import { jsonProblem } from './json.js';
import { type GatewayLogger, loggerFor } from './log.js';
import {
  AGENT_HISTORY_ISSUE,
  AGENT_HISTORY_REASON,
  CAP_DROP_REASON,
  envelope,
  isRecord,
  type PayloadKind,
  type PendingData,
  type PendingValue,
  type SpoolPayload,
} from './payload.js';
import {
  newPayloadPath,
  SPOOL_KIND,
  type SpoolLocation,
  spoolLocation,
  type SpoolLocationOptions,
} from './spool.js';

/** Async flushes: payload writes in flight at once (each fsyncs its own file; the fsyncs overlap). */
export const DEFAULT_CONCURRENCY = 32;

export interface FlushOptions extends SpoolLocationOptions {
  /** `reason` written into pending/overflow payloads (default `shutdown`; adapters use `adapter_shutdown`). */
  reason?: string;
  /** Where failures are logged (default: the gateway logger, stderr). */
  logger?: GatewayLogger;
  /** Async flushes: how many payload writes (and their fsyncs) run at once (default {@link DEFAULT_CONCURRENCY}). */
  concurrency?: number;
  /** The clock, epoch seconds (tests). */
  now?: () => number;
}

/** A payload that is on disk: fsynced, renamed into place, and (when `durable`) its directory fsynced. */
export interface WrittenEntry {
  readonly path: string;
  readonly kind: PayloadKind;
  readonly sessionKey: string | null;
  readonly bytes: number;
  /** The file's permission bits (0o600 by policy). */
  readonly mode: number;
  readonly ts: number;
  readonly seq: number;
}

/**
 * A payload that is NOT on disk, and why: the errno or policy code, the path that failed (often the
 * directory), the uid/gid the process ran as, the fix, and the file it would have been.
 */
export interface FailedEntry {
  readonly code: string;
  readonly path: string;
  readonly step: string;
  readonly message: string;
  readonly uid: number;
  readonly gid: number;
  readonly hint: string;
  /** The whole story in one line (what, where, as whom, the fix), as logged. */
  readonly line: string;
  /** The payload file this entry would have been written to. */
  readonly target: string;
  readonly kind: PayloadKind | null;
  readonly sessionKey: string | null;
}

/** An input that held nothing to write (null/undefined, or no text and no media). */
export interface SkippedEntry {
  readonly kind: PayloadKind;
  readonly sessionKey: string | null;
  readonly reason: 'empty' | 'no-content';
}

/** The result of every flush: nothing is thrown and nothing is hidden. */
export interface FlushReport {
  readonly dir: string;
  readonly written: WrittenEntry[];
  readonly failed: FailedEntry[];
  readonly skipped: SkippedEntry[];
  /** False when the final directory fsync failed (the written files are in place but may not survive a power loss). */
  durable: boolean;
  elapsedMs: number;
}

interface Planned {
  readonly kind: PayloadKind;
  readonly sessionKey: string | null;
  readonly path: string;
  readonly payload: SpoolPayload;
}

interface Plan {
  readonly loc: SpoolLocation;
  readonly planned: Planned[];
  readonly report: FlushReport;
  readonly logger: GatewayLogger;
  readonly started: number;
}

function policyError(err: unknown, path: string): FsPolicyError {
  if (err instanceof FsPolicyError) return err;
  const code = isErrnoException(err) && err.code !== undefined ? err.code : 'EUNEXPECTED';
  return new FsPolicyError({
    code,
    step: 'write',
    path,
    message: `writing ${path} failed: ${err instanceof Error ? err.message : String(err)}`,
    cause: err,
  });
}

function failure(err: FsPolicyError, target: string, kind: PayloadKind | null, sessionKey: string | null): FailedEntry {
  return {
    code: err.code,
    path: err.path,
    step: err.step,
    message: err.message,
    uid: err.uid,
    gid: err.gid,
    hint: err.hint,
    line: err.toLine(),
    target,
    kind,
    sessionKey,
  };
}

/** Logs each distinct error once (a directory failure shared by many payloads is one line with a count). */
function logFailures(logger: GatewayLogger, failed: readonly FailedEntry[]): void {
  const groups = new Map<string, { entry: FailedEntry; count: number }>();
  for (const f of failed) {
    const key = `${f.line}\u0000${f.target === f.path ? f.target : ''}`;
    const g = groups.get(key);
    if (g === undefined) groups.set(key, { entry: f, count: 1 });
    else g.count++;
  }
  for (const { entry, count } of groups.values()) {
    logger.error(`${count} pending message(s) NOT written: ${entry.line}`, {
      path: entry.path,
      code: entry.code,
      step: entry.step,
      uid: entry.uid,
      gid: entry.gid,
    });
  }
}

function invalidMessage(path: string, detail: string): FsPolicyError {
  return new FsPolicyError({
    code: 'EINVALID_MESSAGE',
    step: 'serialize',
    path,
    message: `not a pending message (${detail}); nothing was written for it`,
    hint: 'pass a string, or an object with a string `text` (and JSON-serialisable fields).',
  });
}

function serializeError(path: string, problem: string): FsPolicyError {
  return new FsPolicyError({
    code: 'ESERIALIZE',
    step: 'serialize',
    path,
    message: `cannot serialise payload for ${path}: ${problem}`,
  });
}

function startPlan(options: FlushOptions): Plan {
  const started = Date.now();
  const logger = loggerFor(options.logger);
  const loc = spoolLocation(options);
  return {
    loc,
    planned: [],
    logger,
    started,
    report: { dir: loc.dir, written: [], failed: [], skipped: [], durable: true, elapsedMs: 0 },
  };
}

interface Skip {
  readonly skip: 'empty' | 'no-content';
}

/** Adds a payload to the plan after checking it can be written as JSON without loss. */
function add(plan: Plan, kind: PayloadKind, sessionKey: string | null, build: (path: string) => SpoolPayload | Skip): void {
  const target = newPayloadPath(plan.loc.dir);
  try {
    const payload = build(target);
    if ('skip' in payload) {
      plan.report.skipped.push({ kind, sessionKey, reason: payload.skip });
      return;
    }
    const problem = jsonProblem(payload);
    if (problem !== undefined) throw serializeError(target, problem);
    plan.planned.push({ kind, sessionKey, path: target, payload });
  } catch (err) {
    plan.report.failed.push(failure(policyError(err, target), target, kind, sessionKey));
  }
}

type DataResult = { data: PendingData; ts: number | undefined } | Skip;

function pendingData(value: unknown, target: string): DataResult {
  if (value === null || value === undefined) return { skip: 'empty' };
  if (typeof value === 'string') return value === '' ? { skip: 'no-content' } : { data: { text: value }, ts: undefined };
  if (!isRecord(value)) throw invalidMessage(target, `a ${typeof value}`);
  const text = value.text;
  if (text !== undefined && typeof text !== 'string') throw invalidMessage(target, '`text` is not a string');
  const media = value.media_urls;
  const hasMedia = Array.isArray(media) && media.length > 0;
  if ((text === undefined || text === '') && !hasMedia) return { skip: 'no-content' };
  const ts = typeof value.timestamp === 'number' && Number.isFinite(value.timestamp) ? value.timestamp : undefined;
  return { data: { ...value }, ts };
}

function entriesOf<V>(input: ReadonlyMap<string, V> | Readonly<Record<string, V>>): [string, V][] {
  if (input instanceof Map) return [...(input as ReadonlyMap<string, V>).entries()];
  return Object.entries(input as Readonly<Record<string, V>>);
}

export type PendingInput =
  | ReadonlyMap<string, PendingValue | null | undefined>
  | Readonly<Record<string, PendingValue | null | undefined>>;

export type OverflowInput =
  | ReadonlyMap<string, readonly (PendingValue | null | undefined)[] | null | undefined>
  | Readonly<Record<string, readonly (PendingValue | null | undefined)[] | null | undefined>>;

function planPending(plan: Plan, pending: PendingInput, options: FlushOptions, now: number): void {
  const reason = options.reason ?? 'shutdown';
  for (const [sessionKey, value] of entriesOf<unknown>(pending)) {
    add(plan, 'pending', sessionKey, (target) => {
      const result = pendingData(value, target);
      if ('skip' in result) return result;
      return { ...envelope('pending', result.ts ?? now), session_key: sessionKey, reason, data: result.data };
    });
  }
}

function planOverflow(plan: Plan, overflow: OverflowInput, options: FlushOptions, now: number): void {
  const reason = options.reason ?? 'shutdown';
  for (const [sessionKey, events] of entriesOf<unknown>(overflow)) {
    if (sessionKey === '' || !Array.isArray(events) || events.length === 0) continue;
    (events as unknown[]).forEach((value, index) => {
      add(plan, 'overflow', sessionKey, (target) => {
        const result = pendingData(value, target);
        if ('skip' in result) return result;
        return {
          ...envelope('overflow', result.ts ?? now),
          session_key: sessionKey,
          reason,
          index,
          data: result.data,
        };
      });
    });
  }
}

function planCapDrop(plan: Plan, sessionId: string, message: unknown, now: number): void {
  add(plan, 'transcript_cap_drop', sessionId, (target) => {
    if (typeof sessionId !== 'string' || sessionId === '') throw invalidMessage(target, 'the session id is empty');
    if (!isRecord(message)) throw invalidMessage(target, 'a transcript message must be an object');
    return {
      ...envelope('transcript_cap_drop', now),
      session_key: sessionId,
      reason: CAP_DROP_REASON,
      data: { session_id: sessionId, message },
    };
  });
}

function planAgentHistory(plan: Plan, sessionId: string | null, history: readonly unknown[], now: number): void {
  add(plan, 'agent_history', sessionId, () => ({
    ...envelope('agent_history', now),
    reason: AGENT_HISTORY_REASON,
    issue: AGENT_HISTORY_ISSUE,
    session_id: sessionId,
    count: history.length,
    messages: [...history],
  }));
}

function written(p: Planned, r: WriteResult): WrittenEntry {
  return { path: r.path, kind: p.kind, sessionKey: p.sessionKey, bytes: r.bytes, mode: r.mode, ts: p.payload.ts, seq: p.payload.seq };
}

function failAll(plan: Plan, err: unknown): void {
  const e = policyError(err, plan.loc.dir);
  for (const p of plan.planned) plan.report.failed.push(failure(e, p.path, p.kind, p.sessionKey));
}

function finish(plan: Plan): FlushReport {
  const { report, logger } = plan;
  report.elapsedMs = Date.now() - plan.started;
  // A throwing logger must not turn a report into an exception (or lose what was written).
  try {
    if (report.failed.length > 0) logFailures(logger, report.failed);
    if (report.written.length > 0) {
      logger.info(`flushed ${report.written.length} pending message(s)`, { path: report.dir, durable: report.durable });
    }
  } catch {
    /* the report still tells the whole story */
  }
  return report;
}

const WRITE_OPTIONS = { kind: SPOOL_KIND, durable: 'file', createParents: false, indent: 2 } as const;

function executeSync(plan: Plan): FlushReport {
  const { loc, report } = plan;
  if (plan.planned.length === 0) return finish(plan);
  try {
    secureMkdirSync(loc.dir, SPOOL_KIND, { env: loc.env });
  } catch (err) {
    failAll(plan, err);
    return finish(plan);
  }
  for (const p of plan.planned) {
    try {
      report.written.push(written(p, atomicWriteJsonSync(p.path, p.payload, { ...WRITE_OPTIONS, env: loc.env })));
    } catch (err) {
      report.failed.push(failure(policyError(err, p.path), p.path, p.kind, p.sessionKey));
    }
  }
  if (report.written.length > 0) {
    try {
      fsyncDirectorySync(loc.dir);
    } catch (err) {
      report.durable = false;
      report.failed.push(failure(policyError(err, loc.dir), loc.dir, null, null));
    }
  }
  return finish(plan);
}

async function executeAsync(plan: Plan, concurrency: number): Promise<FlushReport> {
  const { loc, report } = plan;
  if (plan.planned.length === 0) return finish(plan);
  try {
    await secureMkdir(loc.dir, SPOOL_KIND, { env: loc.env });
  } catch (err) {
    failAll(plan, err);
    return finish(plan);
  }
  // Bounded concurrency: each write fsyncs its own file; the fsyncs overlap in the libuv pool.
  const results: (WrittenEntry | FailedEntry)[] = new Array<WrittenEntry | FailedEntry>(plan.planned.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      const p = plan.planned[i];
      if (p === undefined) return;
      try {
        results[i] = written(p, await atomicWriteJson(p.path, p.payload, { ...WRITE_OPTIONS, env: loc.env }));
      } catch (err) {
        results[i] = failure(policyError(err, p.path), p.path, p.kind, p.sessionKey);
      }
    }
  };
  const workers = Math.max(1, Math.min(concurrency, plan.planned.length));
  await Promise.all(Array.from({ length: workers }, () => worker()));
  for (const r of results) {
    if ('code' in r) report.failed.push(r);
    else report.written.push(r);
  }
  if (report.written.length > 0) {
    try {
      await fsyncDirectory(loc.dir);
    } catch (err) {
      report.durable = false;
      report.failed.push(failure(policyError(err, loc.dir), loc.dir, null, null));
    }
  }
  return finish(plan);
}

/** The last line of defence of "never throws": anything unexpected becomes one failed entry. */
function crashReport(err: unknown, options: FlushOptions): FlushReport {
  let dir: string;
  try {
    dir = spoolLocation(options).dir;
  } catch {
    dir = options.home ?? '';
  }
  const e = policyError(err, dir);
  const report: FlushReport = { dir, written: [], failed: [failure(e, dir, null, null)], skipped: [], durable: false, elapsedMs: 0 };
  try {
    logFailures(loggerFor(options.logger), report.failed);
  } catch {
    /* a throwing logger must not turn a report into an exception */
  }
  return report;
}

function runSync(options: FlushOptions, fill: (plan: Plan, now: number) => void): FlushReport {
  try {
    const plan = startPlan(options);
    fill(plan, (options.now ?? nowSeconds)());
    return executeSync(plan);
  } catch (err) {
    return crashReport(err, options);
  }
}

async function runAsync(options: FlushOptions, fill: (plan: Plan, now: number) => void): Promise<FlushReport> {
  try {
    const plan = startPlan(options);
    fill(plan, (options.now ?? nowSeconds)());
    return await executeAsync(plan, options.concurrency ?? DEFAULT_CONCURRENCY);
  } catch (err) {
    return crashReport(err, options);
  }
}

function nowSeconds(): number {
  return Date.now() / 1000;
}

/**
 * Writes one payload per session slot (`{session_key: message}`; the reference's `flush_pending_to_file`).
 * Each file is fsynced, then the directory once. Never throws: see {@link FlushReport}.
 */
export function flushPending(pending: PendingInput, options: FlushOptions = {}): Promise<FlushReport> {
  return runAsync(options, (plan, now) => {
    planPending(plan, pending, options, now);
  });
}

/** Synchronous form of {@link flushPending} (a shutdown path that cannot await). */
export function flushPendingSync(pending: PendingInput, options: FlushOptions = {}): FlushReport {
  return runSync(options, (plan, now) => {
    planPending(plan, pending, options, now);
  });
}

/** Writes one payload per queued event of each session's FIFO tail (`{session_key: [events]}`), in order. */
export function flushOverflow(overflow: OverflowInput, options: FlushOptions = {}): Promise<FlushReport> {
  return runAsync(options, (plan, now) => {
    planOverflow(plan, overflow, options, now);
  });
}

/** Synchronous form of {@link flushOverflow}. */
export function flushOverflowSync(overflow: OverflowInput, options: FlushOptions = {}): FlushReport {
  return runSync(options, (plan, now) => {
    planOverflow(plan, overflow, options, now);
  });
}

/** Spools one transcript message the in-memory cap evicted (replayed into the session by recovery). */
export function spoolDroppedTranscriptMessage(
  sessionId: string,
  message: Readonly<Record<string, unknown>>,
  options: FlushOptions = {},
): Promise<FlushReport> {
  return runAsync(options, (plan, now) => {
    planCapDrop(plan, sessionId, message, now);
  });
}

/** Synchronous form of {@link spoolDroppedTranscriptMessage}. */
export function spoolDroppedTranscriptMessageSync(
  sessionId: string,
  message: Readonly<Record<string, unknown>>,
  options: FlushOptions = {},
): FlushReport {
  return runSync(options, (plan, now) => {
    planCapDrop(plan, sessionId, message, now);
  });
}

/**
 * Preserves an agent's unpersisted history as one snapshot payload for the operator (never replayed
 * automatically). An empty history writes nothing.
 */
export function flushAgentHistory(
  sessionId: string | null,
  history: readonly unknown[] | null | undefined,
  options: FlushOptions = {},
): Promise<FlushReport> {
  return runAsync(options, (plan, now) => {
    if (history !== null && history !== undefined && history.length > 0) planAgentHistory(plan, sessionId, history, now);
  });
}

/** Synchronous form of {@link flushAgentHistory}. */
export function flushAgentHistorySync(
  sessionId: string | null,
  history: readonly unknown[] | null | undefined,
  options: FlushOptions = {},
): FlushReport {
  return runSync(options, (plan, now) => {
    if (history !== null && history !== undefined && history.length > 0) planAgentHistory(plan, sessionId, history, now);
  });
}
