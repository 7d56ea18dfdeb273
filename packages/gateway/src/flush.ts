import { FsPolicyError, serializeJson } from '@hermes/fs-policy';
import { describeValue, positiveIntegerProblem } from './errors.js';
import { jsonProblem } from './json.js';
import {
  drainJob,
  failure,
  type FlushReport,
  FlushJob,
  policyError,
  register,
  runJobAsync,
} from './jobs.js';
import { loggerFor, type GatewayLogger } from './log.js';
import {
  AGENT_HISTORY_ISSUE,
  AGENT_HISTORY_REASON,
  CAP_DROP_REASON,
  envelope,
  epochProblem,
  isRecord,
  type PayloadKind,
  type PendingData,
  type PendingValue,
  type SpoolPayload,
} from './payload.js';
import { newPayloadPath, spoolLocation, type SpoolLocationOptions } from './spool.js';

export type { DrainReason, FailedEntry, FlushReport, FlushWarning, SkippedEntry, WrittenEntry } from './jobs.js';

/** Async flushes: payload writes in flight at once (each fsyncs its own file; the fsyncs overlap). */
export const DEFAULT_CONCURRENCY = 32;

export interface FlushOptions extends SpoolLocationOptions {
  /** `reason` written into pending/overflow payloads (default `shutdown`; adapters use `adapter_shutdown`). */
  reason?: string;
  /** Where log lines go (default: @hermes/fs-policy's logger, see `setLogger`). */
  logger?: GatewayLogger;
  /**
   * Async flushes: how many payload writes (and their fsyncs) run at once (default {@link DEFAULT_CONCURRENCY}).
   * Anything but a positive integer (or Infinity) is reported as a warning and the default is used.
   */
  concurrency?: number;
  /** The clock, epoch seconds (tests). A clock that does not return epoch seconds is reported and not used. */
  now?: () => number;
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

function invalidInput(path: string, fn: string, expected: string, value: unknown): FsPolicyError {
  return new FsPolicyError({
    code: 'EINVALID_INPUT',
    step: 'serialize',
    path,
    message: `${fn} takes ${expected}, got ${describeValue(value)}; nothing was written`,
    hint: `pass ${expected}.`,
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

interface Skip {
  readonly skip: 'empty' | 'no-content';
}

interface Planning {
  readonly job: FlushJob;
  readonly now: number;
  readonly reason: string;
}

/** Adds a payload to the job after checking it can be written as JSON without loss, serialised once. */
function add(p: Planning, kind: PayloadKind, sessionKey: string | null, build: (path: string) => SpoolPayload | Skip): void {
  const target = newPayloadPath(p.job.loc.dir);
  try {
    const payload = build(target);
    if ('skip' in payload) {
      p.job.skipped.push({ kind, sessionKey, reason: payload.skip });
      return;
    }
    const problem = jsonProblem(payload);
    if (problem !== undefined) throw serializeError(target, problem);
    p.job.addItem(kind, sessionKey, target, payload.ts, payload.seq, serializeJson(payload, target, { indent: 2 }));
  } catch (err) {
    p.job.planFailed.push(failure(policyError(err, target), target, kind, sessionKey));
  }
}

function refuse(p: Planning, kind: PayloadKind, err: FsPolicyError): void {
  p.job.planFailed.push(failure(err, p.job.loc.dir, kind, null));
}

type DataResult = { data: PendingData; ts: number | undefined } | Skip;

function pendingData(p: Planning, value: unknown, target: string, sessionKey: string): DataResult {
  if (value === null || value === undefined) return { skip: 'empty' };
  if (typeof value === 'string') return value === '' ? { skip: 'no-content' } : { data: { text: value }, ts: undefined };
  if (!isRecord(value)) throw invalidMessage(target, describeValue(value));
  const text = value.text;
  if (text !== undefined && typeof text !== 'string') throw invalidMessage(target, '`text` is not a string');
  const media = value.media_urls;
  const hasMedia = Array.isArray(media) && media.length > 0;
  if ((text === undefined || text === '') && !hasMedia) return { skip: 'no-content' };
  let ts: number | undefined;
  if (value.timestamp !== undefined && value.timestamp !== null) {
    const problem = epochProblem(value.timestamp);
    if (problem === undefined) ts = value.timestamp as number;
    else {
      p.job.warnings.push({
        code: 'ETIMESTAMP',
        message:
          `the timestamp of a message for ${sessionKey} is not epoch seconds (${problem}); the payload's ts is the ` +
          `flush time and data.timestamp keeps the value as given`,
        target,
        sessionKey,
      });
    }
  }
  return { data: { ...value }, ts };
}

/** The `[key, value]` pairs of a Map or a plain object; undefined for anything else. */
function entriesOf(input: unknown): [unknown, unknown][] | undefined {
  if (input instanceof Map) return [...(input as Map<unknown, unknown>).entries()];
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return undefined;
  const proto = Object.getPrototypeOf(input) as unknown;
  if (proto !== Object.prototype && proto !== null) return undefined;
  return Object.entries(input);
}

export type PendingInput =
  | ReadonlyMap<string, PendingValue | null | undefined>
  | Readonly<Record<string, PendingValue | null | undefined>>;

export type OverflowInput =
  | ReadonlyMap<string, readonly (PendingValue | null | undefined)[] | null | undefined>
  | Readonly<Record<string, readonly (PendingValue | null | undefined)[] | null | undefined>>;

function keyProblem(key: unknown): string | undefined {
  if (typeof key !== 'string') return `the session key is ${describeValue(key)}, not a string`;
  return undefined;
}

function planPending(p: Planning, pending: unknown, fn: string): void {
  const entries = entriesOf(pending);
  if (entries === undefined) {
    refuse(p, 'pending', invalidInput(p.job.loc.dir, fn, 'a Map or a plain object of session_key → message', pending));
    return;
  }
  for (const [key, value] of entries) {
    const problem = keyProblem(key);
    const sessionKey = typeof key === 'string' ? key : String(key);
    add(p, 'pending', sessionKey, (target) => {
      if (problem !== undefined) throw invalidMessage(target, problem);
      const result = pendingData(p, value, target, sessionKey);
      if ('skip' in result) return result;
      return { ...envelope('pending', result.ts ?? p.now), session_key: sessionKey, reason: p.reason, data: result.data };
    });
  }
}

function planOverflow(p: Planning, overflow: unknown, fn: string): void {
  const entries = entriesOf(overflow);
  if (entries === undefined) {
    refuse(p, 'overflow', invalidInput(p.job.loc.dir, fn, 'a Map or a plain object of session_key → list of messages', overflow));
    return;
  }
  for (const [key, events] of entries) {
    if (events === null || events === undefined || (Array.isArray(events) && events.length === 0)) continue;
    const sessionKey = typeof key === 'string' ? key : String(key);
    if (!Array.isArray(events)) {
      add(p, 'overflow', sessionKey, (target) => {
        throw invalidMessage(target, `the queue of ${sessionKey} is ${describeValue(events)}, not a list`);
      });
      continue;
    }
    const problem = keyProblem(key) ?? (key === '' ? 'the session key is empty' : undefined);
    (events as unknown[]).forEach((value, index) => {
      add(p, 'overflow', sessionKey, (target) => {
        if (problem !== undefined) throw invalidMessage(target, problem);
        const result = pendingData(p, value, target, sessionKey);
        if ('skip' in result) return result;
        return { ...envelope('overflow', result.ts ?? p.now), session_key: sessionKey, reason: p.reason, index, data: result.data };
      });
    });
  }
}

function planCapDrop(p: Planning, sessionId: unknown, message: unknown): void {
  const key = typeof sessionId === 'string' ? sessionId : null;
  add(p, 'transcript_cap_drop', key, (target) => {
    if (typeof sessionId !== 'string' || sessionId === '') throw invalidMessage(target, 'the session id is empty or not a string');
    if (!isRecord(message)) throw invalidMessage(target, 'a transcript message must be an object');
    const ts = message.timestamp;
    if (ts !== undefined && ts !== null) {
      const problem = epochProblem(ts);
      if (problem !== undefined) {
        p.job.warnings.push({
          code: 'ETIMESTAMP',
          message:
            `the timestamp of a transcript message of session ${sessionId} is not epoch seconds (${problem}); ` +
            `recovery stores the payload's ts (the flush time) for it`,
          target,
          sessionKey: sessionId,
        });
      }
    }
    return {
      ...envelope('transcript_cap_drop', p.now),
      session_key: sessionId,
      reason: CAP_DROP_REASON,
      data: { session_id: sessionId, message },
    };
  });
}

function planAgentHistory(p: Planning, sessionId: unknown, history: unknown): void {
  if (history === null || history === undefined) return;
  if (!Array.isArray(history)) {
    refuse(p, 'agent_history', invalidInput(p.job.loc.dir, 'flushAgentHistory', 'a list of messages (or null)', history));
    return;
  }
  if (history.length === 0) return;
  add(p, 'agent_history', typeof sessionId === 'string' ? sessionId : null, (target) => {
    if (sessionId !== null && typeof sessionId !== 'string') throw invalidMessage(target, 'the session id is not a string or null');
    return {
      ...envelope('agent_history', p.now),
      reason: AGENT_HISTORY_REASON,
      issue: AGENT_HISTORY_ISSUE,
      session_id: sessionId,
      count: history.length,
      messages: [...(history as unknown[])],
    };
  });
}

function nowSeconds(): number {
  return Date.now() / 1000;
}

/** Creates the job of one flush call, with its options checked. */
function startJob(options: FlushOptions, async: boolean): { job: FlushJob; planning: Planning; concurrency: number } {
  const logger = loggerFor(options.logger);
  const job = new FlushJob(spoolLocation(options), logger);
  let concurrency = DEFAULT_CONCURRENCY;
  if (async && options.concurrency !== undefined) {
    const problem = positiveIntegerProblem('concurrency', options.concurrency, true);
    if (problem === undefined) concurrency = options.concurrency;
    else job.warnings.push({ code: 'EINVALID_OPTION', message: `${problem}; used ${String(DEFAULT_CONCURRENCY)}`, target: null, sessionKey: null });
  }
  let now = nowSeconds();
  if (options.now !== undefined) {
    let given: unknown;
    try {
      given = options.now();
    } catch (err) {
      given = err instanceof Error ? `a clock that threw (${err.message})` : 'a clock that threw';
    }
    const problem = typeof given === 'string' ? given : epochProblem(given);
    if (problem === undefined) now = given as number;
    else job.warnings.push({ code: 'EINVALID_OPTION', message: `now() must return epoch seconds: ${problem}; used the system clock`, target: null, sessionKey: null });
  }
  const reason = options.reason ?? 'shutdown';
  return { job, planning: { job, now, reason }, concurrency };
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
  const f = failure(e, dir, null, null);
  const report: FlushReport = { dir, written: [], failed: [f], skipped: [], warnings: [], durable: false, drained: null, elapsedMs: 0 };
  try {
    loggerFor(options.logger).error(`pending message(s) NOT written: ${f.line}`, { path: f.path, code: f.code, step: f.step, uid: f.uid, gid: f.gid });
  } catch {
    /* a throwing logger must not turn a report into an exception */
  }
  return report;
}

function runSync(options: FlushOptions, fill: (p: Planning) => void): FlushReport {
  try {
    const started = startJob(options, false);
    fill(started.planning);
    register(started.job);
    return drainJob(started.job, null);
  } catch (err) {
    return crashReport(err, options);
  }
}

async function runAsync(options: FlushOptions, fill: (p: Planning) => void): Promise<FlushReport> {
  try {
    // Everything up to the first write happens synchronously, inside this call: a `process.exit()` right
    // after it still finds the job registered, with every payload planned, and writes them.
    const started = startJob(options, true);
    fill(started.planning);
    register(started.job);
    return await runJobAsync(started.job, started.concurrency);
  } catch (err) {
    return crashReport(err, options);
  }
}

/**
 * Writes one payload per session slot (`{session_key: message}`; the reference's `flush_pending_to_file`).
 * Each file is fsynced, then the directory once. Never throws: see {@link FlushReport}. A stop event while it
 * runs (second signal, `process.exit()`, budget) writes the rest synchronously — see the stop contract.
 */
export function flushPending(pending: PendingInput, options: FlushOptions = {}): Promise<FlushReport> {
  return runAsync(options, (p) => {
    planPending(p, pending, 'flushPending');
  });
}

/** Synchronous form of {@link flushPending} (a shutdown path that cannot await). */
export function flushPendingSync(pending: PendingInput, options: FlushOptions = {}): FlushReport {
  return runSync(options, (p) => {
    planPending(p, pending, 'flushPendingSync');
  });
}

/** Writes one payload per queued event of each session's FIFO tail (`{session_key: [events]}`), in order. */
export function flushOverflow(overflow: OverflowInput, options: FlushOptions = {}): Promise<FlushReport> {
  return runAsync(options, (p) => {
    planOverflow(p, overflow, 'flushOverflow');
  });
}

/** Synchronous form of {@link flushOverflow}. */
export function flushOverflowSync(overflow: OverflowInput, options: FlushOptions = {}): FlushReport {
  return runSync(options, (p) => {
    planOverflow(p, overflow, 'flushOverflowSync');
  });
}

/** Spools one transcript message the in-memory cap evicted (replayed into the session by recovery). */
export function spoolDroppedTranscriptMessage(
  sessionId: string,
  message: Readonly<Record<string, unknown>>,
  options: FlushOptions = {},
): Promise<FlushReport> {
  return runAsync(options, (p) => {
    planCapDrop(p, sessionId, message);
  });
}

/** Synchronous form of {@link spoolDroppedTranscriptMessage}. */
export function spoolDroppedTranscriptMessageSync(
  sessionId: string,
  message: Readonly<Record<string, unknown>>,
  options: FlushOptions = {},
): FlushReport {
  return runSync(options, (p) => {
    planCapDrop(p, sessionId, message);
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
  return runAsync(options, (p) => {
    planAgentHistory(p, sessionId, history);
  });
}

/** Synchronous form of {@link flushAgentHistory}. */
export function flushAgentHistorySync(
  sessionId: string | null,
  history: readonly unknown[] | null | undefined,
  options: FlushOptions = {},
): FlushReport {
  return runSync(options, (p) => {
    planAgentHistory(p, sessionId, history);
  });
}
