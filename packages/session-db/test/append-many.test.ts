/**
 * appendMessages: many messages in one transaction, idempotency keys unique per session (also within one call
 * and across recovered spool files), row rejections isolated, a database failure rolling the group back.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openSessionDb, SessionDbError } from '../src/index.js';
import { tempDir, thrown } from './helpers.js';

function count(file: string, sql: string): number {
  const raw = new Database(file, { readonly: true });
  try {
    return (raw.prepare(sql).get() as { n: number }).n;
  } finally {
    raw.close();
  }
}

describe('appendMessages', () => {
  it('one transaction for the group: ids in order, duplicates by key, rejections isolated, counters bumped', () => {
    const db = openSessionDb({ home: tempDir() });
    db.createSession({ id: 's1', source: 'gateway', startedAt: 1700000000 });
    db.createSession({ id: 's2', source: 'gateway', startedAt: 1700000000 });
    const out = db.appendMessages([
      { sessionId: 's1', role: 'user', content: 'a', timestamp: 1700000001, idempotencyKey: 'k1' },
      { sessionId: 's2', role: 'user', content: 'b', timestamp: 1700000001, idempotencyKey: 'k1' },
      { sessionId: 's1', role: 'user', content: 'a again', timestamp: 1700000002, idempotencyKey: 'k1' },
      { sessionId: 's1', role: 'user', content: 'ms', timestamp: 1700000000000 },
      { sessionId: 'nope', role: 'user', content: 'c' },
      { sessionId: 's1', role: 'assistant', content: 'reply', timestamp: 1700000003 },
    ]);
    const first = out[0]?.status === 'inserted' ? out[0].id : -1;
    console.log(`append-many: outcomes ${out.map((o) => o.status).join(',')}`);
    expect(out.map((o) => o.status)).toEqual(['inserted', 'inserted', 'duplicate', 'rejected', 'rejected', 'inserted']);
    expect(out[2]).toEqual({ status: 'duplicate', id: first });
    expect(out[3]).toMatchObject({ status: 'rejected', code: 'EINVALID_ROW' });
    expect(out[4]).toMatchObject({ status: 'rejected', code: 'ESESSION_MISSING' });
    expect(db.messageIdForIdempotencyKey('s1', 'k1')).toBe(first);
    expect(db.messageIdForIdempotencyKey('s1', 'k2')).toBeUndefined();
    // A retry in a later transaction: the first id again, no row.
    expect(db.appendMessages([{ sessionId: 's1', role: 'user', content: 'a', idempotencyKey: 'k1' }])).toEqual([{ status: 'duplicate', id: first }]);
    expect(db.exportSession('s1')?.messages.map((m) => m.content)).toEqual(['a', 'reply']);
    expect(db.getSession('s1')?.message_count).toBe(2);
    expect(count(db.path, 'SELECT COUNT(*) AS n FROM message_idempotency')).toBe(2);
    db.close();
  });

  it('a recovered file carrying a key already stored inserts nothing; a new key is recorded with its row', () => {
    const db = openSessionDb({ home: tempDir() });
    db.createSession({ id: 's1', source: 'gateway', startedAt: 1700000000 });
    db.appendMessages([{ sessionId: 's1', role: 'user', content: 'direct', timestamp: 1700000001, idempotencyKey: 'k1' }]);
    const row = { sessionId: 's1', role: 'user', content: 'spooled', timestamp: 1700000002 };
    const out = db.commitRecovered([
      { receiptId: 'r1', fileName: 'a.json', rows: [row], idempotency: { sessionId: 's1', key: 'k1' } },
      { receiptId: 'r2', fileName: 'b.json', rows: [row], idempotency: { sessionId: 's1', key: 'k2' } },
    ]);
    expect(out.map((o) => o.status)).toEqual(['duplicate', 'inserted']);
    const id = out[1]?.status === 'inserted' ? out[1].rowIds[0] : -1;
    expect(db.messageIdForIdempotencyKey('s1', 'k2')).toBe(id);
    expect(db.hasReceipt('r1')).toBe(true);
    expect(db.appendMessages([{ sessionId: 's1', role: 'user', content: 'retry', idempotencyKey: 'k2' }])).toEqual([{ status: 'duplicate', id }]);
    expect(db.exportSession('s1')?.messages.map((m) => m.content)).toEqual(['direct', 'spooled']);
    db.close();
  });

  it('a failure of the database rolls the whole group back and throws with the SQLite code', () => {
    const home = tempDir();
    const db = openSessionDb({ home });
    db.createSession({ id: 's1', source: 'gateway', startedAt: 1700000000 });
    const other = new Database(db.path);
    other.exec('BEGIN IMMEDIATE');
    const busy = openSessionDb({ home, busyTimeoutMs: 50 });
    const err = thrown(() => busy.appendMessages([{ sessionId: 's1', role: 'user', content: 'x', idempotencyKey: 'k' }]));
    other.exec('ROLLBACK');
    other.close();
    expect(err).toBeInstanceOf(SessionDbError);
    expect((err as SessionDbError).code).toBe('SQLITE_BUSY');
    expect(db.exportSession('s1')?.messages).toEqual([]);
    expect(db.messageIdForIdempotencyKey('s1', 'k')).toBeUndefined();
    busy.close();
    db.close();
  });
});
