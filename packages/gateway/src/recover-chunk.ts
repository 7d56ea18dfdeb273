/**
 * The files of a recovery pass's second pass, read and parsed a chunk at a time ahead of their settlement, so
 * that the store is asked about their receipts once per chunk (recover-pass.ts). Nothing here reports: the pass
 * settles each file, in recovery order, from what is recorded here.
 */
import type { HeldDirectory } from '@hermes/fs-policy';
import { payloadIdentity } from './identity.js';
import { parseJsonTolerant } from './json.js';
import type { RecoveryOrder } from './ordering.js';
import { InvalidUtf8Error, readSpoolText, receiptIdOf, type SpoolText, spoolTextOf } from './read.js';
import type { KeptReason } from './recover-types.js';
import { codeOf, euid, messageOf, ownerOf } from './recover-util.js';

/** A file of a chunk, read and parsed (or not) ahead of its settlement. */
export interface Chunked {
  readonly name: string;
  /** Its report path. */
  readonly p: string;
  /** Its path as a batch member, or undefined for a file of its own. */
  readonly member: string | undefined;
  /** The text the first pass kept, if any. */
  readonly text: string | undefined;
  readonly content: SpoolText | undefined;
  readonly readFailure: { readonly err: unknown } | undefined;
  readonly parseFailure: { readonly err: unknown } | undefined;
  /** The payload, its identity (the receipt it is committed with) and the receipt an earlier version gave it. */
  readonly parsed: { readonly payload: unknown; readonly receiptId: string; readonly legacyId: string } | undefined;
}

/** One shape for every file of a chunk (what is not known is undefined). */
function chunked(name: string, p: string, member: string | undefined, text: string | undefined, rest: Partial<Chunked> = {}): Chunked {
  const { content, readFailure, parseFailure, parsed } = rest;
  return { name, p, member, text, content, readFailure, parseFailure, parsed };
}

/** File `i` of `order`, not read (the store failed: it is kept unread). */
export function unread(order: RecoveryOrder, i: number, p: string, member: string | undefined): Chunked {
  return chunked(order.name(i), p, member, order.text(i));
}

/**
 * File `i` of `order` read again through the held spool (unless the first pass kept its text) and parsed — it
 * may have changed since the first pass — with its receipt ids. A failure is recorded, never thrown.
 */
export function prepareFile(held: HeldDirectory, order: RecoveryOrder, i: number, p: string, member: string | undefined): Chunked {
  const name = order.name(i);
  const text = order.text(i);
  let content: SpoolText;
  if (text !== undefined) content = spoolTextOf(text);
  else {
    try {
      content = readSpoolText(held, name);
    } catch (err) {
      return chunked(name, p, member, text, { readFailure: { err } });
    }
  }
  try {
    const payload = parseJsonTolerant(content.text);
    // Exactly once per message, not per file name: the receipt is the payload's identity (identity.ts).
    const parsed = { payload, receiptId: payloadIdentity(payload, content), legacyId: receiptIdOf(name, content) };
    return chunked(name, p, member, text, { content, parsed });
  } catch (err) {
    return chunked(name, p, member, text, { content, parseFailure: { err } });
  }
}

/**
 * The receipt ids to ask the store about for `chunk[from..]`: every parsed file's earlier-version receipt, and
 * its identity too when the store answers in bulk (otherwise that is asked only for a file not committed now).
 */
export function idsToAsk(chunk: readonly Chunked[], from: number, bulk: boolean): string[] {
  const ids: string[] = [];
  for (let k = from; k < chunk.length; k++) {
    const parsed = chunk[k]?.parsed;
    if (parsed === undefined) continue;
    ids.push(parsed.legacyId);
    if (bulk) ids.push(parsed.receiptId);
  }
  return ids;
}

/** How a file that could not be read is settled. */
export type ReadFailure =
  | { readonly type: 'keep'; readonly reason: KeptReason; readonly detail: string }
  /** Removed meanwhile (a concurrent pass recovered it): nothing to report. */
  | { readonly type: 'gone' }
  | { readonly type: 'foreign'; readonly uid: number }
  | { readonly type: 'error'; readonly code: string; readonly message: string };

/** What a read failure of file `name` (report path `p`) means: kept, vanished, another uid's, or an error. */
export function readFailureOf(name: string, p: string, err: unknown): ReadFailure {
  if (err instanceof InvalidUtf8Error) return { type: 'keep', reason: 'unparseable', detail: `${name}: ${messageOf(err)}` };
  const code = codeOf(err, 'EUNKNOWN');
  if (code === 'ENOENT') return { type: 'gone' };
  if (code === 'ELOOP') return { type: 'keep', reason: 'not-a-regular-file', detail: `${name} is a symbolic link` };
  if (code === 'EACCES' || code === 'EPERM') {
    const owner = ownerOf(p);
    if (owner !== undefined && owner !== euid()) return { type: 'foreign', uid: owner };
  }
  return { type: 'error', code, message: `cannot read ${p}: ${messageOf(err)}` };
}

