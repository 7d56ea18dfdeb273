/** How recovery decides what one payload becomes (see {@link decide}). */
import { describeValue } from './errors.js';
import { explain } from './held.js';
import { classifyPayload, epochProblem, isRecord, PAYLOAD_SCHEMA_VERSION, type PayloadKind } from './payload.js';
import type { KeptReason } from './recover-types.js';
import type { RecoveredRow } from './store.js';

/** Maps a session key (and the payload's ts) to a session id; null/undefined keeps the file. */
export type Resolver = (sessionKey: string, notAfter: number | undefined) => string | null | undefined;

export type Decision =
  | { readonly type: 'keep'; readonly reason: KeptReason; readonly detail: string }
  | { readonly type: 'snapshot'; readonly sessionId: string | null; readonly count: number | null }
  | { readonly type: 'commit'; readonly kind: PayloadKind; readonly sessionId: string; readonly rows: RecoveredRow[] };


/**
 * What recovery does with one parsed payload: commit its rows (to the session it resolves to), keep it (with
 * the reason), or leave it as an agent-history snapshot. Never throws for a payload's shape; a resolver that
 * throws is a `resolver-error` keep.
 */
export function decide(name: string, p: unknown, resolver: Resolver | undefined): Decision {
  if (!isRecord(p)) {
    return { type: 'keep', reason: 'not-an-object', detail: `${name} holds ${Array.isArray(p) ? 'an array' : typeof p}` };
  }
  const version = p.schema_version;
  if (
    version !== undefined &&
    !(typeof version === 'number' && Number.isInteger(version) && version >= 1 && version <= PAYLOAD_SCHEMA_VERSION)
  ) {
    return {
      type: 'keep',
      reason: 'unknown-schema-version',
      detail: `schema_version ${JSON.stringify(version)} is not one this version reads (<= ${PAYLOAD_SCHEMA_VERSION})`,
    };
  }
  const kind = classifyPayload(p);
  const notAfter = typeof p.ts === 'number' && Number.isFinite(p.ts) ? p.ts : undefined;
  switch (kind) {
    case 'agent_history':
      return {
        type: 'snapshot',
        sessionId: typeof p.session_id === 'string' ? p.session_id : null,
        count: typeof p.count === 'number' ? p.count : Array.isArray(p.messages) ? p.messages.length : null,
      };
    case 'transcript_cap_drop': {
      const data = p.data;
      if (!isRecord(data) || typeof data.session_id !== 'string' || data.session_id === '' || !isRecord(data.message)) {
        return { type: 'keep', reason: 'invalid-cap-drop', detail: 'needs data.session_id and an object data.message' };
      }
      const m = data.message;
      const row: RecoveredRow = {
        sessionId: data.session_id,
        role: m.role ?? 'unknown',
        content: m.content === undefined || m.content === null || m.content === '' ? '' : m.content,
        // The message's own time when it is epoch seconds, else the payload's (the reference used `or`).
        timestamp: epochProblem(m.timestamp) === undefined ? m.timestamp : p.ts,
        toolCallId: m.tool_call_id,
        toolCalls: m.tool_calls,
        toolName: m.tool_name,
        tokenCount: m.token_count,
        finishReason: m.finish_reason,
        platformMessageId: m.platform_message_id,
      };
      return { type: 'commit', kind, sessionId: data.session_id, rows: [row] };
    }
    case 'pending':
    case 'overflow': {
      const data = isRecord(p.data) ? p.data : undefined;
      const text = data?.text;
      if (typeof text !== 'string' || text === '') {
        return { type: 'keep', reason: 'no-text', detail: 'data.text is missing or empty' };
      }
      const resolved = sessionFor(p, data, resolver);
      if ('reason' in resolved) return { type: 'keep', ...resolved };
      return {
        type: 'commit',
        kind,
        sessionId: resolved.sessionId,
        rows: [{ sessionId: resolved.sessionId, role: 'user', content: text, timestamp: notAfter }],
      };
    }
    case 'unknown':
      return { type: 'keep', reason: 'unknown-kind', detail: 'not a pending, overflow, cap-drop or agent-history payload' };
  }
}

function sessionFor(
p: Readonly<Record<string, unknown>>,
data: Readonly<Record<string, unknown>> | undefined,
resolver: Resolver | undefined,
): { sessionId: string } | { reason: KeptReason; detail: string } {
  const direct = data?.session_id;
  if (typeof direct === 'string' && direct !== '') return { sessionId: direct };
  const key = p.session_key;
  if (typeof key !== 'string' || key === '') {
    return { reason: 'unresolved', detail: 'no data.session_id and no session_key' };
  }
  if (resolver === undefined) {
    return { reason: 'unresolved', detail: `no data.session_id and no resolver for session_key ${key}` };
  }
  const notAfter = typeof p.ts === 'number' && Number.isFinite(p.ts) ? p.ts : undefined;
  let id: string | null | undefined;
  try {
    id = resolver(key, notAfter);
  } catch (err) {
    return { reason: 'resolver-error', detail: `resolving ${key} failed: ${messageOf(err)}` };
  }
  if (typeof id !== 'string' || id === '') {
    return { reason: 'unresolved', detail: `session_key ${key} resolves to no session` };
  }
  return { sessionId: id };
}


/** What a resolver threw, as words (never throws itself). */
function messageOf(err: unknown): string {
  if (err instanceof Error) return explain(err).message;
  try {
    return String(err);
  } catch {
    return `${describeValue(err)} that has no string form`;
  }
}
