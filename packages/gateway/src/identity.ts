/**
 * The identity of a spool payload, which recovery's exactly-once is about: the same message under two file
 * names (a salvaged copy, a name a group member linked or renamed) is one delivery. A payload this package
 * wrote carries its writer's random `process_id`, its `pid` and its per-process `seq`, unique per payload and
 * the same in every copy of it; the identity is a hash of those. A payload without them (the Python
 * reference's) is identified by a hash of its exact bytes, its name left out.
 */
import { createHash, hash } from 'node:crypto';
import { isRecord } from './payload.js';
import type { SpoolText } from './read.js';

/**
 * The receipt id recovery commits with a payload's rows (lowercase hex sha256): of the writer's
 * `process_id`, `pid` and `seq` when the payload carries all three, else of its exact bytes.
 */
export function payloadIdentity(payload: unknown, content: SpoolText): string {
  if (isRecord(payload)) {
    const { process_id: processId, pid, seq } = payload;
    if (typeof processId === 'string' && processId !== '' && Number.isSafeInteger(pid) && Number.isSafeInteger(seq)) {
      return hash('sha256', `hermes-spool-payload/1\u0000${JSON.stringify([processId, pid, seq])}`, 'hex');
    }
  }
  if (content.bytes === undefined) return hash('sha256', `hermes-spool-bytes/1\u0000${content.source}`, 'hex');
  return createHash('sha256').update('hermes-spool-bytes/1\u0000').update(content.bytes).digest('hex');
}
