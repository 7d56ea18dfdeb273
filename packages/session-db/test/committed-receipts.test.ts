/**
 * committedReceipts(ids): the ids whose recovery receipts are committed, in one statement — the same answers as
 * hasReceipt id by id, whatever the ids hold, and a failure of the database thrown, never an empty answer.
 */
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openSessionDb, SessionDbError } from '../src/index.js';
import { tempDir, thrown } from './helpers.js';

const ROW = { sessionId: 's1', role: 'user', content: 'x' } as const;

describe('committedReceipts', () => {
  it('answers a list as hasReceipt answers each id: committed ids only, duplicates and odd strings included', () => {
    const home = tempDir();
    const db = openSessionDb({ home });
    db.createSession({ id: 's1', source: 'telegram', startedAt: 1700000000 });
    const odd = ['r"1', "r'2", 'r\\3', 'é\u0000x', ''];
    const committed = ['a'.repeat(64), ...odd];
    db.commitRecovered(committed.map((receiptId, i) => ({ receiptId, fileName: `f${String(i)}.json`, rows: [ROW] })));
    const many = Array.from({ length: 5000 }, (_, i) => i.toString(16).padStart(64, '0'));
    const asked = [...many, ...committed, 'a'.repeat(64), 'b'.repeat(64)];
    const got = db.committedReceipts(asked);
    const oneByOne = asked.filter((id) => db.hasReceipt(id));
    console.log(`committed-receipts: asked ${String(asked.length)}, committed ${String(got.size)}, hasReceipt agrees on ${String(oneByOne.length)}`);
    expect(got).toBeInstanceOf(Set);
    expect([...got].sort()).toEqual([...committed].sort());
    expect(new Set(oneByOne)).toEqual(got);
    expect(db.committedReceipts([])).toEqual(new Set());
    expect(db.committedReceipts(['b'.repeat(64)])).toEqual(new Set());
    db.close();
  });

  it('a read-only handle on a database never migrated has no receipts: an empty answer, as hasReceipt says false', () => {
    const home = tempDir();
    const raw = new Database(path.join(home, 'state.db'));
    raw.exec('CREATE TABLE sessions (id TEXT PRIMARY KEY)');
    raw.close();
    const db = openSessionDb({ home, readonly: true });
    const got = db.committedReceipts(['x', 'y']);
    console.log(`committed-receipts: read-only unmigrated -> ${String(got.size)} committed, hasReceipt ${String(db.hasReceipt('x'))}`);
    expect(got).toEqual(new Set());
    expect(db.hasReceipt('x')).toBe(false);
    db.close();
  });

  it('a closed handle throws ECLOSED naming the file', () => {
    const home = tempDir();
    const db = openSessionDb({ home });
    db.close();
    const err = thrown(() => db.committedReceipts(['x']));
    console.log(`committed-receipts: closed -> ${(err as SessionDbError).code}`);
    expect(err).toBeInstanceOf(SessionDbError);
    expect((err as SessionDbError).code).toBe('ECLOSED');
    expect((err as SessionDbError).path).toBe(path.join(home, 'state.db'));
  });
});
