/**
 * What a temp file of the spool is: the payload name it was written for (fs-policy's temp names, through
 * `parseTempName()`, and the Python reference's `mkstemp` names) and whether its bytes are a complete payload.
 */
import { parseTempName } from '@hermes/fs-policy';
import { isBatchName, looksLikeBatch, parseBatch } from './batch.js';
import { explain } from './held.js';
import { parseJsonTolerant } from './json.js';
import { classifyPayload, isRecord } from './payload.js';
import { spoolTextOf } from './read.js';

/**
 * The Python reference's temp name for `<stem>.json`: `tempfile.mkstemp(prefix=".<stem>_", suffix=".tmp")`,
 * whose random part is 8 characters of `[a-z0-9_]`.
 */
const PYTHON_TEMP = /^\.(.+)_([a-z0-9_]{8})\.tmp$/;

/** The payload name a temp file was written for, or undefined when `name` is no temp name of a payload writer. */
export function tempTarget(name: string): { target: string; pid: number | undefined } | undefined {
  const fsPolicy = parseTempName(name);
  if (fsPolicy !== null) {
    if (fsPolicy.type !== 'tmp') return undefined; // rollback copies are fs-policy's to sweep
    return { target: fsPolicy.target, pid: fsPolicy.pid };
  }
  const py = PYTHON_TEMP.exec(name);
  if (py?.[1] !== undefined) return { target: `${py[1]}.json`, pid: undefined };
  return undefined;
}

/** A plain payload name: no separator, not hidden, `*.json`. */
export function isPayloadName(name: string): boolean {
  return name.endsWith('.json') && name.length > '.json'.length && !name.startsWith('.') && !name.includes('/') && !name.includes('\0');
}

/** A temp larger than this is no payload this package wrote; it is left in place and reported. */
const MAX_PAYLOAD_TEMP_BYTES = 64 * 1024 * 1024;
/** A batch file holds every payload a stop could not write one by one: far larger, still one JS string when read. */
const MAX_BATCH_TEMP_BYTES = 512 * 1024 * 1024;

/** The largest temp (or final file) salvage reads for the target name `target`. */
export function maxTempBytes(target: string): number {
  return isBatchName(target) ? MAX_BATCH_TEMP_BYTES : MAX_PAYLOAD_TEMP_BYTES;
}

/**
 * Why these bytes, written for `target`, are not complete, or undefined when they are: one of the payload shapes
 * for a payload name, a valid batch (batch.ts) for a batch name. A batch written for a payload name, or a
 * payload for a batch name, is no payload of this package's. Without `target`, the content decides.
 */
export function incompleteBecause(bytes: Buffer, target?: string): { partial: string } | { notPayload: string } | undefined {
  if (bytes.length === 0) return { partial: 'empty' };
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return { partial: 'not valid UTF-8 (cut inside a character?)' };
  }
  let payload: unknown;
  try {
    payload = parseJsonTolerant(spoolTextOf(text).text);
  } catch (err) {
    return { partial: `not complete JSON (${messageOf(err)})` };
  }
  if (!isRecord(payload)) return { notPayload: 'complete JSON, but not an object' };
  // Without a target, the content alone says whether a batch is meant.
  const forBatch = target === undefined ? looksLikeBatch(payload) : isBatchName(target);
  if (forBatch || looksLikeBatch(payload)) {
    if (!forBatch) return { notPayload: `a batch file written for ${String(target)}, which is no batch name` };
    const batch = parseBatch(payload);
    return batch.problem === undefined ? undefined : { notPayload: `complete JSON, but not a valid batch (${batch.problem})` };
  }
  if (classifyPayload(payload) === 'unknown') return { notPayload: 'complete JSON, but none of the payload shapes' };
  return undefined;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? explain(err).message : String(err);
}
