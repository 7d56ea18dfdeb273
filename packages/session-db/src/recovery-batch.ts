/**
 * One batch of recovered spool files, written inside the caller's `BEGIN IMMEDIATE` transaction (see
 * {@link SessionDb.commitRecovered} for the contract and the speed notes).
 */
import type Database from 'better-sqlite3';
import { isRowRejection } from './errors.js';
import { INSERT_MESSAGE_SQL, insertMessage, messageOf, type NormalisedMessage, normaliseMessage } from './messages.js';
import type { RecoveryEntry, RecoveryOutcome } from './types.js';

const SELECT_KEY_SQL = 'SELECT message_id FROM message_idempotency WHERE session_id = ? AND idempotency_key = ?';
const RECORD_KEY_SQL = 'INSERT INTO message_idempotency (session_id, idempotency_key, message_id, created_at) VALUES (?, ?, ?, ?)';

/** What a batch needs of its connection: cached prepared statements and savepoint transactions. */
export interface BatchConnection {
  stmt(sql: string): Database.Statement;
  transaction<F extends (...args: never[]) => unknown>(fn: F): Database.Transaction<F>;
}

/** Thrown inside a fast-path batch when an entry failed after its first write: replay with savepoints. */
export class ReplayWithSavepoints extends Error {
  constructor(cause: unknown) {
    super('replay the recovery batch with one savepoint per entry', { cause });
  }
}

/**
 * Commits the entries in order and returns one outcome per entry. `savepoints: false` is the fast path (no
 * savepoint; an entry that fails after its first write throws {@link ReplayWithSavepoints}); `true` isolates
 * every entry in a savepoint. A failure of the database itself throws.
 */
export function commitBatch(conn: BatchConnection, entries: readonly RecoveryEntry[], insertedAt: number, savepoints: boolean): RecoveryOutcome[] {
  const selectReceipt = conn.stmt('SELECT 1 FROM recovery_receipts WHERE receipt_id = ?');
  const claimReceipt = conn.stmt(
    'INSERT INTO recovery_receipts (receipt_id, file_name, inserted_at, rows) VALUES (?, ?, ?, ?) ' +
      'ON CONFLICT (receipt_id) DO NOTHING',
  );
  const insertStatement = conn.stmt(INSERT_MESSAGE_SQL);
  const sessions = new Map<string, boolean>();
  const counters = new Map<string, { messages: number; toolCalls: number }>();
  const exists = (id: string): boolean => {
    let known = sessions.get(id);
    if (known === undefined) {
      known = conn.stmt('SELECT 1 FROM sessions WHERE id = ?').get(id) !== undefined;
      sessions.set(id, known);
    }
    return known;
  };
  const duplicateOr = (entry: RecoveryEntry, outcome: RecoveryOutcome): RecoveryOutcome =>
    selectReceipt.get(entry.receiptId) === undefined ? outcome : { receiptId: entry.receiptId, status: 'duplicate' };

  const one = (entry: RecoveryEntry): RecoveryOutcome => {
    let rows: NormalisedMessage[];
    try {
      rows = entry.rows.map((r) => normaliseMessage(r, 'coerce'));
    } catch (err) {
      if (!isRowRejection(err)) throw err;
      return duplicateOr(entry, { receiptId: entry.receiptId, status: 'rejected', error: messageOf(err) });
    }
    for (const r of rows) {
      if (!exists(r.sessionId)) {
        return duplicateOr(entry, { receiptId: entry.receiptId, status: 'unknown-session', sessionId: r.sessionId });
      }
    }
    // Claiming the receipt is the entry's first write: a failure here leaves nothing of the entry behind.
    if (claimReceipt.run(entry.receiptId, entry.fileName, insertedAt, rows.length).changes === 0) {
      return { receiptId: entry.receiptId, status: 'duplicate' };
    }
    // The message was stored directly under its idempotency key before: the receipt settles the file, no row.
    const idem = entry.idempotency;
    if (idem !== undefined && conn.stmt(SELECT_KEY_SQL).get(idem.sessionId, idem.key) !== undefined) {
      return { receiptId: entry.receiptId, status: 'duplicate' };
    }
    const rowIds = rows.map((m) => {
      try {
        return Number(insertMessage(insertStatement, m).lastInsertRowid);
      } catch (err) {
        // The receipt is already written: only a savepoint can take this entry back on its own.
        if (!savepoints && isRowRejection(err)) throw new ReplayWithSavepoints(err);
        throw err;
      }
    });
    const firstId = rowIds[0];
    if (idem !== undefined && firstId !== undefined) conn.stmt(RECORD_KEY_SQL).run(idem.sessionId, idem.key, firstId, insertedAt);
    for (const m of rows) {
      const c = counters.get(m.sessionId);
      if (c === undefined) counters.set(m.sessionId, { messages: 1, toolCalls: m.toolCallCount });
      else {
        c.messages++;
        c.toolCalls += m.toolCallCount;
      }
    }
    return { receiptId: entry.receiptId, status: 'inserted', rowIds };
  };
  const isolated = savepoints ? conn.transaction(one) : one;

  const outcomes = entries.map((entry): RecoveryOutcome => {
    try {
      return isolated(entry);
    } catch (err) {
      if (err instanceof ReplayWithSavepoints || !isRowRejection(err)) throw err;
      return { receiptId: entry.receiptId, status: 'rejected', error: messageOf(err) };
    }
  });
  const bump = conn.stmt(
    'UPDATE sessions SET message_count = COALESCE(message_count, 0) + ?, ' +
      'tool_call_count = COALESCE(tool_call_count, 0) + ? WHERE id = ?',
  );
  for (const [id, c] of counters) bump.run(c.messages, c.toolCalls, id);
  return outcomes;
}

