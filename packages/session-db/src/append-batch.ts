/**
 * Many messages in one write transaction (group commit), each with an optional idempotency key — see
 * {@link SessionDb.appendMessages} for the contract.
 */
import { SessionDbError, isRowRejection } from './errors.js';
import { INSERT_MESSAGE_SQL, insertMessage, messageOf, type NormalisedMessage, normaliseMessage } from './messages.js';
import type { BatchConnection } from './recovery-batch.js';
import type { AppendManyInput, AppendOutcome } from './types.js';

export const SELECT_IDEMPOTENCY_SQL = 'SELECT message_id FROM message_idempotency WHERE session_id = ? AND idempotency_key = ?';
export const INSERT_IDEMPOTENCY_SQL =
  'INSERT INTO message_idempotency (session_id, idempotency_key, message_id, created_at) VALUES (?, ?, ?, ?)';

/** The idempotency key of an input: undefined when absent; a key that is no non-empty string is a rejection. */
function keyOf(input: AppendManyInput): string | undefined {
  const key: unknown = input.idempotencyKey;
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || key === '' || key.length > 512) {
    throw new SessionDbError({ code: 'EINVALID_ROW', message: 'idempotencyKey must be a non-empty string of at most 512 characters' });
  }
  return key;
}

/**
 * Appends `inputs` in order inside the caller's transaction and returns one outcome per input. A row that
 * cannot be stored or names a missing session is `rejected` (nothing of it written); a key recorded earlier —
 * in an earlier transaction or earlier in this batch — is `duplicate` with the first message's id. The
 * sessions' `message_count`/`tool_call_count` are bumped once per session at the end. A failure of the
 * database itself throws (the caller's transaction rolls back).
 */
export function appendBatch(conn: BatchConnection, inputs: readonly AppendManyInput[], now: number): AppendOutcome[] {
  const insert = conn.stmt(INSERT_MESSAGE_SQL);
  const selectKey = conn.stmt(SELECT_IDEMPOTENCY_SQL);
  const recordKey = conn.stmt(INSERT_IDEMPOTENCY_SQL);
  const sessions = new Map<string, boolean>();
  const counters = new Map<string, { messages: number; toolCalls: number }>();
  const outcomes = inputs.map((input): AppendOutcome => {
    let m: NormalisedMessage;
    let key: string | undefined;
    try {
      m = normaliseMessage(input, 'strict');
      key = keyOf(input);
    } catch (err) {
      if (!isRowRejection(err)) throw err;
      return { status: 'rejected', code: (err as { code?: string }).code ?? 'EINVALID_ROW', error: messageOf(err) };
    }
    let exists = sessions.get(m.sessionId);
    if (exists === undefined) {
      exists = conn.stmt('SELECT 1 FROM sessions WHERE id = ?').get(m.sessionId) !== undefined;
      sessions.set(m.sessionId, exists);
    }
    if (!exists) return { status: 'rejected', code: 'ESESSION_MISSING', error: `session ${m.sessionId} does not exist` };
    if (key !== undefined) {
      const first = selectKey.get(m.sessionId, key) as { message_id: number } | undefined;
      if (first !== undefined) return { status: 'duplicate', id: first.message_id };
    }
    const id = Number(insertMessage(insert, m).lastInsertRowid);
    if (key !== undefined) recordKey.run(m.sessionId, key, id, now);
    const c = counters.get(m.sessionId);
    if (c === undefined) counters.set(m.sessionId, { messages: 1, toolCalls: m.toolCallCount });
    else {
      c.messages++;
      c.toolCalls += m.toolCallCount;
    }
    return { status: 'inserted', id };
  });
  const bump = conn.stmt(
    'UPDATE sessions SET message_count = COALESCE(message_count, 0) + ?, tool_call_count = COALESCE(tool_call_count, 0) + ? WHERE id = ?',
  );
  for (const [id, c] of counters) bump.run(c.messages, c.toolCalls, id);
  return outcomes;
}
