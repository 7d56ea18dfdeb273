/**
 * What a temp file of the spool is: the payload name it was written for (fs-policy's temp names, through
 * `parseTempName()`, and the Python reference's `mkstemp` names) and whether its bytes are a complete payload.
 */
import { parseTempName } from '@hermes/fs-policy';
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

/** Why these bytes are not a complete payload, or undefined when they are one. */
export function incompleteBecause(bytes: Buffer): { partial: string } | { notPayload: string } | undefined {
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
  if (classifyPayload(payload) === 'unknown') return { notPayload: 'complete JSON, but none of the payload shapes' };
  return undefined;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? explain(err).message : String(err);
}
