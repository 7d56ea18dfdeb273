/**
 * The summary line of a stop — the last line the shutdown hook logs: how many messages are on disk, the failures
 * grouped by cause, and what happened to the rest (written as files, as a batch file, or failed with its errno).
 * It says only what is true: "the rest was written" never stands beside failures of that rest.
 */
import type { RemainderOutcome } from './batch-write.js';
import type { DrainReason, FailedEntry } from './job-types.js';
import { failureGroups, type FlushJob } from './jobs.js';
import { count } from './log.js';

/** What `flush()` did: returned (or resolved) a result, threw, or has not settled yet. */
export interface Settled {
  readonly settled: boolean;
  readonly result?: unknown;
  readonly error?: unknown;
}

interface FlushSummary {
  written: unknown[];
  failed: unknown[];
}

function isFlushSummary(value: unknown): value is FlushSummary {
  if (value === null || typeof value !== 'object') return false;
  const v = value as Partial<Record<'written' | 'failed', unknown>>;
  return Array.isArray(v.written) && Array.isArray(v.failed);
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** `2 ENOSPC at /h/pending_messages, 1 EACCES at /h/pending_messages/pending-….json` (one group: no count). */
function groupsText(failed: readonly FailedEntry[]): string {
  const groups = failureGroups(failed);
  if (groups.length === 1 && groups[0] !== undefined) return `${groups[0].code} at ${groups[0].where}`;
  return groups.map((g) => `${count(g.count)} ${g.code} at ${g.where}`).join(', ');
}

function batchText(rest: RemainderOutcome): string {
  const [only] = rest.batches;
  return rest.batches.length === 1 && only !== undefined ? `one batch file ${only}` : `${count(rest.batches.length)} batch files (${rest.batches.join(', ')})`;
}

/**
 * What became of the rest of a stop: `plain` when all of it was written as files of its own (the wording of
 * each path), else the batch file it went into, or the failures (written beside them only what was written).
 */
export function restText(rest: RemainderOutcome, plain: string): string {
  const failed = rest.failed.length;
  const asFiles = rest.written - rest.inBatch;
  if (failed === 0 && rest.inBatch === 0) return plain;
  if (failed === 0) {
    const split = asFiles > 0 ? `: ${count(asFiles)} as files, ${count(rest.inBatch)} as ${batchText(rest)}` : ` as ${batchText(rest)}`;
    return `the rest (${count(rest.items)}) was written${split}`;
  }
  const wrote: string[] = [];
  if (asFiles > 0) wrote.push(`${count(asFiles)} written as files`);
  if (rest.inBatch > 0) wrote.push(`${count(rest.inBatch)} written as ${batchText(rest)}`);
  return `the rest: ${wrote.map((w) => `${w}, `).join('')}${count(failed)} failed (${groupsText(rest.failed)})`;
}

export interface SummaryInput {
  readonly jobs: readonly FlushJob[];
  /** What made the rest go the synchronous way (null: the flush settled by itself). */
  readonly drained: DrainReason | null;
  /** What ended the stop (null: the flush settled). */
  readonly reason: DrainReason | null;
  readonly signal: NodeJS.Signals | null;
  readonly budgetMs: number;
  readonly extraSignals: number;
  readonly extraNames: readonly string[];
  readonly settled: Settled;
  readonly rest: RemainderOutcome;
}

export interface Summary {
  readonly messages: number | null;
  readonly written: number | null;
  readonly failed: number | null;
  readonly complete: boolean;
  readonly line: string;
}

function whyText(s: SummaryInput): string {
  const more =
    s.extraSignals > 0
      ? `; ${s.extraSignals === 1 ? 'a second signal' : `${count(s.extraSignals)} more signals`} (${[...new Set(s.extraNames)].join(', ')}) during the flush did not abort it`
      : '';
  if (s.drained === 'exit') {
    return s.signal !== null
      ? `${more}; the process exited during the flush: ${restText(s.rest, 'the rest was written before the exit completed')}`
      : `${more}; the process exited: ${restText(s.rest, 'flushed before the exit completed')}`;
  }
  if (s.drained === 'budget') {
    if (s.rest.items === 0) return `${more}; the writes in flight settled within the ${count(s.budgetMs)} ms budget`;
    return `${more}; one file per message did not fit the ${count(s.budgetMs)} ms budget: ${restText(s.rest, 'the rest was written synchronously')}`;
  }
  if (s.drained === 'shutdown') {
    const plain = 'was written synchronously';
    const rest = restText(s.rest, plain);
    return `${more}; a flush still running when the hook finished${rest === plain ? ` ${plain}` : `: ${rest}`}`;
  }
  return more;
}

/** The counts and the summary line of a stop (see docs/stop-contract.md, "Lines an operator sees"). */
export function summarize(s: SummaryInput): Summary {
  const why = whyText(s);
  const { settled } = s;
  const threw = settled.error === undefined ? '' : `; the flush threw: ${messageOf(settled.error)}`;
  if (s.jobs.length > 0) {
    let messages = 0;
    let written = 0;
    const failedMessages: FailedEntry[] = [];
    const dirFailures: FailedEntry[] = [];
    for (const job of s.jobs) {
      messages += job.messages();
      written += job.writtenCount();
      for (const f of job.failures()) (f === job.dirFailure ? dirFailures : failedMessages).push(f);
    }
    const failed = messages - written;
    const dir = dirFailures[0];
    const notDurable = dir === undefined ? '' : `; the directory fsync failed (${dir.code} at ${dir.path}): not durable`;
    const failedText = failed > 0 ? `, ${count(failed)} failed (${failedMessages.length > 0 ? groupsText(failedMessages) : 'not written'})` : '';
    return {
      messages,
      written,
      failed,
      complete: failed === 0 && dir === undefined && settled.error === undefined,
      line: `pending flush: ${count(written)} of ${count(messages)} written${failedText}${notDurable}${why}${threw}`,
    };
  }
  if (settled.settled && settled.error === undefined && isFlushSummary(settled.result)) {
    const written = settled.result.written.length;
    const failed = settled.result.failed.length;
    return {
      messages: written + failed,
      written,
      failed,
      complete: failed === 0,
      line: `pending flush: ${count(written)} of ${count(written + failed)} written${failed > 0 ? `, ${count(failed)} failed` : ''}${why}`,
    };
  }
  if (settled.settled && settled.error === undefined) {
    return { messages: null, written: null, failed: null, complete: true, line: `pending flush: done (the flush reported no counts)${why}` };
  }
  if (settled.settled) {
    return { messages: null, written: null, failed: null, complete: false, line: `pending flush: the flush threw: ${messageOf(settled.error)}${why}` };
  }
  return {
    messages: null,
    written: null,
    failed: null,
    complete: false,
    line:
      s.reason === 'budget'
        ? `pending flush: did not settle within ${count(s.budgetMs)} ms, and it used none of this package's flush functions, so nothing could be written synchronously`
        : `pending flush: did not settle before the ${s.reason === 'exit' ? 'process exited' : 'stop'}; it used none of this package's flush functions, so nothing could be written synchronously`,
  };
}
