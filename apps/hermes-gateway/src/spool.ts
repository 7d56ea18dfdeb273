/**
 * The fallback while state.db is unavailable: messages go to the shutdown spool through @hermes/gateway's
 * flushes (each payload fsynced, then its directory), and are acknowledged only once the report says so.
 */
import { flushOverflow, spoolDroppedTranscriptMessage, type FlushReport } from '@hermes/gateway';
import type { HermesEnvironment } from '@hermes/fs-policy';
import { SPOOL_MARKER } from './ids.js';

/** A message waiting to be made durable. */
export interface Job {
  readonly sessionKey: string;
  readonly sessionId: string;
  readonly role: 'user' | 'assistant';
  readonly content: string;
  readonly timestamp: number;
  readonly idempotencyKey: string | undefined;
  readonly enqueuedAt: number;
  resolve(outcome: JobOutcome): void;
  reject(err: Error): void;
}

/** How a job became durable. */
export type JobOutcome =
  | { readonly status: 'committed'; readonly id: number | null; readonly duplicate: boolean }
  | { readonly status: 'spooled'; readonly file: string };

/** Thrown to a job the spool could not take: its message is NOT durable and was not acknowledged. */
export class NotDurableError extends Error {
  readonly code: string;
  readonly hint: string;
  constructor(code: string, message: string, hint: string) {
    super(message);
    this.name = 'NotDurableError';
    this.code = code;
    this.hint = hint;
  }
}

/** The event a user message is spooled as (`data` of an overflow payload; recovery reads text and session_id). */
function eventOf(job: Job): Record<string, unknown> {
  return {
    text: job.content,
    timestamp: job.timestamp,
    session_id: job.sessionId,
    via: SPOOL_MARKER,
    ...(job.idempotencyKey === undefined ? {} : { idempotency_key: job.idempotencyKey }),
  };
}

/**
 * Hands `jobs` to the spool's flushes — synchronously, before the first `await`, as the shutdown hook requires
 * — and returns the flushes' promises. User messages are overflow payloads (in order per session); assistant
 * replies are transcript messages of their session.
 */
export function startSpool(jobs: readonly Job[], home: string, env: HermesEnvironment | undefined, reason: string): Promise<FlushReport>[] {
  const users = new Map<string, Record<string, unknown>[]>();
  const flushes: Promise<FlushReport>[] = [];
  const opts = { home, reason, ...(env === undefined ? {} : { env }) };
  for (const job of jobs) {
    if (job.role === 'user') {
      const list = users.get(job.sessionKey) ?? [];
      list.push(eventOf(job));
      users.set(job.sessionKey, list);
    }
  }
  if (users.size > 0) flushes.push(flushOverflow(users, opts));
  for (const job of jobs) {
    if (job.role === 'assistant') {
      flushes.push(spoolDroppedTranscriptMessage(job.sessionId, { role: 'assistant', content: job.content, timestamp: job.timestamp }, opts));
    }
  }
  return flushes;
}

/**
 * Settles every job from the flushes' reports: a job is acknowledged `spooled` only when its payload is written
 * and the report is durable; otherwise it is rejected with the report's first failure (errno, path, fix).
 */
export function settleSpooled(jobs: readonly Job[], reports: readonly FlushReport[]): { written: number; failed: number } {
  const written = reports.flatMap((r) => (r.durable ? r.written : []));
  const failure = reports.flatMap((r) => r.failed)[0];
  const notDurable = reports.find((r) => !r.durable && r.written.length > 0);
  const bySession = new Map<string, string[]>();
  for (const w of [...written].sort((a, b) => a.seq - b.seq)) {
    const list = bySession.get(w.sessionKey ?? '') ?? [];
    list.push(w.path);
    bySession.set(w.sessionKey ?? '', list);
  }
  const complete = failure === undefined && notDurable === undefined;
  let ok = 0;
  for (const job of jobs) {
    // Overflow payloads carry the session key; a transcript message carries the session id in its place.
    const list = bySession.get(job.role === 'user' ? job.sessionKey : job.sessionId);
    const file = complete ? list?.shift() : undefined;
    if (file !== undefined) {
      ok++;
      job.resolve({ status: 'spooled', file });
      continue;
    }
    job.reject(
      failure !== undefined
        ? new NotDurableError(failure.code, `the message could not be spooled: ${failure.line}`, failure.hint)
        : new NotDurableError('ENOTDURABLE', 'the spool flush did not prove its payloads durable (directory fsync)', 'retry the request; check the disk holding the home'),
    );
  }
  return { written: ok, failed: jobs.length - ok };
}
