import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openSessionDb, SessionDbError, type SessionDb } from '../src/index.js';
import { tempDir, thrown } from './helpers.js';

function fresh(): { db: SessionDb; file: string } {
  const home = tempDir();
  return { db: openSessionDb({ home }), file: path.join(home, 'state.db') };
}

function rawRows(file: string, sql: string): unknown[] {
  const raw = new Database(file, { readonly: true });
  try {
    return raw.prepare(sql).raw().all();
  } finally {
    raw.close();
  }
}

describe('sessions and messages', () => {
  it('appendMessage inserts the row and bumps the session counters, returning the row id', () => {
    const { db, file } = fresh();
    db.createSession({ id: 's1', source: 'telegram', model: 'hermes-3', startedAt: 1700000000 });
    expect(db.appendMessage({ sessionId: 's1', role: 'user', content: 'hi', timestamp: 1700000001 })).toBe(1);
    expect(
      db.appendMessage({
        sessionId: 's1',
        role: 'assistant',
        content: null,
        timestamp: 1700000002,
        toolCalls: [{ id: 'a' }, { id: 'b' }],
        finishReason: 'tool_calls',
      }),
    ).toBe(2);
    expect(rawRows(file, 'SELECT message_count, tool_call_count FROM sessions')).toEqual([[2, 2]]);
    db.close();
  });

  it('refuses a message for a session that does not exist (ESESSION_MISSING) and writes nothing', () => {
    const { db, file } = fresh();
    const err = thrown(() => db.appendMessage({ sessionId: 'ghost', role: 'user', content: 'x' }));
    expect(err).toBeInstanceOf(SessionDbError);
    expect((err as SessionDbError).code).toBe('ESESSION_MISSING');
    expect(rawRows(file, 'SELECT COUNT(*) FROM messages')).toEqual([[0]]);
    db.close();
  });

  it('rejects values a column cannot hold (EINVALID_ROW) before writing anything', () => {
    const { db, file } = fresh();
    db.createSession({ id: 's1', source: 'cli' });
    const bad: unknown[] = [
      { sessionId: 's1', role: '', content: 'x' },
      { sessionId: 's1', role: 'user', content: 42 },
      { sessionId: 's1', role: 'user', content: 'x', toolCalls: 7 },
      { sessionId: 's1', role: 'user', content: 'x', tokenCount: 1.5 },
    ];
    for (const input of bad) {
      const err = thrown(() => db.appendMessage(input as Parameters<SessionDb['appendMessage']>[0]));
      expect((err as SessionDbError).code).toBe('EINVALID_ROW');
    }
    expect(rawRows(file, 'SELECT COUNT(*) FROM messages')).toEqual([[0]]);
    expect(rawRows(file, 'SELECT message_count FROM sessions')).toEqual([[0]]);
    db.close();
  });

  it('stores structured content behind the reference prefix and exports it back as the list it was', () => {
    const { db, file } = fresh();
    db.createSession({ id: 's1', source: 'cli', model: 'm', title: 'Demo', startedAt: 1700000000 });
    db.appendMessage({ sessionId: 's1', role: 'user', content: [{ type: 'text', text: 'look' }], timestamp: 1700000005 });
    db.appendMessage({ sessionId: 's1', role: 'assistant', content: 'plain', timestamp: 1700000003, tokenCount: 7 });
    expect(rawRows(file, 'SELECT content FROM messages ORDER BY id')).toEqual([
      ['\u0000json:[{"type":"text","text":"look"}]'],
      ['plain'],
    ]);
    expect(db.exportSession('s1')).toEqual({
      id: 's1',
      source: 'cli',
      model: 'm',
      title: 'Demo',
      started_at: 1700000000,
      message_count: 2,
      messages: [
        { id: 2, session_id: 's1', role: 'assistant', content: 'plain', timestamp: 1700000003, token_count: 7 },
        { id: 1, session_id: 's1', role: 'user', content: [{ type: 'text', text: 'look' }], timestamp: 1700000005 },
      ],
    });
    expect(db.exportSession('nope')).toBeUndefined();
    db.close();
  });

  it('refuses a timestamp that is not epoch seconds (milliseconds, NaN, a string) with EINVALID_ROW; omitted is now', () => {
    const { db, file } = fresh();
    db.createSession({ id: 's1', source: 'cli' });
    const cases: [unknown, string][] = [
      [1700000000000, 'invalid value for timestamp: 1700000000000 looks like epoch milliseconds; pass seconds (1700000000)'],
      [1700000000000000, 'invalid value for timestamp: 1700000000000000 looks like epoch microseconds; pass seconds (1700000000)'],
      [Number.NaN, 'invalid value for timestamp: expected epoch seconds, got NaN'],
      ['1700000000', 'invalid value for timestamp: expected epoch seconds (a number), got string'],
      [12, 'invalid value for timestamp: 12 is not epoch seconds between 2000-01-01 and 2100-01-01'],
    ];
    for (const [timestamp, message] of cases) {
      const err = thrown(() => db.appendMessage({ sessionId: 's1', role: 'user', content: 'x', timestamp: timestamp as number }));
      expect(err).toBeInstanceOf(SessionDbError);
      expect((err as SessionDbError).code).toBe('EINVALID_ROW');
      expect((err as SessionDbError).message).toBe(message);
    }
    expect((thrown(() => db.createSession({ id: 's2', source: 'cli', startedAt: 1700000000000 })) as SessionDbError).message).toBe(
      'invalid value for started_at: 1700000000000 looks like epoch milliseconds; pass seconds (1700000000)',
    );
    expect((thrown(() => db.endSession('s1', 'idle', 1700000000000)) as SessionDbError).code).toBe('EINVALID_ROW');
    expect(rawRows(file, 'SELECT COUNT(*) FROM messages')).toEqual([[0]]);
    const before = Date.now() / 1000;
    db.appendMessage({ sessionId: 's1', role: 'user', content: 'now' });
    const after = Date.now() / 1000;
    const [[ts]] = rawRows(file, 'SELECT timestamp FROM messages') as [[number]];
    expect(ts).toBeGreaterThanOrEqual(before);
    expect(ts).toBeLessThanOrEqual(after);
    db.close();
  });

  it('recovered rows keep the coerce_epoch rule: an implausible timestamp from a file becomes now', () => {
    const { db, file } = fresh();
    db.createSession({ id: 's1', source: 'cli' });
    const before = Date.now() / 1000;
    db.commitRecovered([{ receiptId: 'r', fileName: 'f', rows: [{ sessionId: 's1', role: 'user', content: 'ms', timestamp: 1700000000000 }] }]);
    const [[ts]] = rawRows(file, 'SELECT timestamp FROM messages') as [[number]];
    expect(ts).toBeGreaterThanOrEqual(before);
    expect(ts).toBeLessThan(1700000000000);
    db.close();
  });

  it('content round-trips exactly for every string, also one that starts with the JSON prefix', () => {
    const { db, file } = fresh();
    db.createSession({ id: 's1', source: 'cli' });
    const strings = [
      'plain',
      '',
      '{"looks": "like json"}',
      '\u0000json:{"a":1}',
      '\u0000json:[{"type":"text","text":"look"}]',
      '\u0001json:[1,2]',
      '\u0000json:',
      '\u0000json:"quoted"',
      '\u0000json:not json at all',
      '\u0000jsonX',
      'a\u0000json:b',
      'a\uD800b',
      '\uDC00',
      'emoji \u{1F600} pair',
    ];
    strings.forEach((content, i) => db.appendMessage({ sessionId: 's1', role: 'user', content, timestamp: 1700000000 + i }));
    db.appendMessage({ sessionId: 's1', role: 'user', content: [{ type: 'text', text: 'structured' }], timestamp: 1700000100 });
    expect(db.exportSession('s1')?.messages.map((m) => m.content)).toEqual([...strings, [{ type: 'text', text: 'structured' }]]);
    // What is stored: ordinary strings as they are; the ambiguous ones (and unpaired surrogates, which UTF-8
    // cannot hold) as a JSON string literal behind the prefix; structure as JSON behind the prefix.
    expect(rawRows(file, 'SELECT content FROM messages ORDER BY id').map((r) => (r as [string])[0])).toEqual([
      'plain',
      '',
      '{"looks": "like json"}',
      '\u0000json:"\\u0000json:{\\"a\\":1}"',
      '\u0000json:"\\u0000json:[{\\"type\\":\\"text\\",\\"text\\":\\"look\\"}]"',
      '\u0000json:"\\u0001json:[1,2]"',
      '\u0000json:"\\u0000json:"',
      '\u0000json:"\\u0000json:\\"quoted\\""',
      '\u0000json:"\\u0000json:not json at all"',
      '\u0000jsonX',
      'a\u0000json:b',
      '\u0000json:"a\\ud800b"',
      '\u0000json:"\\udc00"',
      'emoji \u{1F600} pair',
      '\u0000json:[{"type":"text","text":"structured"}]',
    ]);
    db.close();
  });

  it('checkpoint() copies the WAL into state.db: rows survive the loss of the -wal file', () => {
    const home = tempDir();
    const file = path.join(home, 'state.db');
    const db = openSessionDb({ home });
    db.createSession({ id: 's1', source: 'cli', startedAt: 1700000000 });
    db.commitRecovered([{ receiptId: 'r1', fileName: 'f1', rows: [{ sessionId: 's1', role: 'user', content: 'kept', timestamp: 1700000001 }] }]);
    // Every frame of the WAL is in state.db (fsynced): removing the WAL loses nothing.
    const cp = db.checkpoint();
    expect(cp).toMatchObject({ complete: true, busy: false });
    expect(cp.checkpointed).toBe(cp.walFrames);
    db.commitRecovered([{ receiptId: 'r2', fileName: 'f2', rows: [{ sessionId: 's1', role: 'user', content: 'lost', timestamp: 1700000002 }] }]);
    // Copy the files as a crash with a deleted WAL would leave them.
    const copy = path.join(tempDir(), 'copy');
    fs.mkdirSync(copy);
    fs.copyFileSync(file, path.join(copy, 'state.db'));
    db.close();
    const after = openSessionDb({ home: copy });
    expect(after.exportSession('s1')?.messages.map((m) => m.content)).toEqual(['kept']);
    expect(after.hasReceipt('r1')).toBe(true);
    expect(after.hasReceipt('r2')).toBe(false);
    after.close();
  });

  it('checkpoint() reports an incomplete checkpoint while a reader holds an older snapshot', () => {
    const home = tempDir();
    const db = openSessionDb({ home, busyTimeoutMs: 50 });
    db.createSession({ id: 's1', source: 'cli' });
    const reader = new Database(path.join(home, 'state.db'), { readonly: true });
    reader.exec('BEGIN');
    reader.prepare('SELECT COUNT(*) FROM sessions').get();
    db.commitRecovered([{ receiptId: 'r', fileName: 'f', rows: [{ sessionId: 's1', role: 'user', content: 'x' }] }]);
    // PASSIVE: nothing of the commit could be copied past the reader's snapshot, and nobody waited for it.
    const held = db.checkpoint();
    expect(held).toMatchObject({ complete: false, busy: false });
    expect(held.checkpointed).toBeLessThan(held.walFrames);
    reader.exec('COMMIT');
    reader.close();
    expect(db.checkpoint()).toMatchObject({ complete: true, busy: false });
    db.close();
  });

  it('createSession refuses an existing id; listSessions orders by start, newest first', () => {
    const { db } = fresh();
    db.createSession({ id: 'a', source: 'cli', startedAt: 1700000000 });
    db.createSession({ id: 'b', source: 'telegram', startedAt: 1700000100, sessionKey: 'agent:main:telegram:dm:1' });
    expect((thrown(() => db.createSession({ id: 'a', source: 'cli' })) as SessionDbError).code).toBe('ESESSION_EXISTS');
    expect(db.listSessions().map((s) => s.id)).toEqual(['b', 'a']);
    expect(db.listSessions({ source: 'cli' })).toEqual([
      {
        id: 'a',
        source: 'cli',
        model: null,
        title: null,
        session_key: null,
        started_at: 1700000000,
        ended_at: null,
        end_reason: null,
        message_count: 0,
      },
    ]);
    db.close();
  });

  it('a read-only handle reads but refuses writes (EREADONLY)', () => {
    const home = tempDir();
    const w = openSessionDb({ home });
    w.createSession({ id: 's1', source: 'cli' });
    w.close();
    const r = openSessionDb({ home, readonly: true });
    expect(r.getSession('s1')?.id).toBe('s1');
    expect((thrown(() => r.createSession({ source: 'cli' })) as SessionDbError).code).toBe('EREADONLY');
    r.close();
    r.close();
    expect((thrown(() => r.getSession('s1')) as SessionDbError).code).toBe('ECLOSED');
  });

  it('refuses to resurrect a deleted profile home (EPROFILE_MISSING) and creates nothing', () => {
    const root = tempDir();
    const home = path.join(root, 'profiles', 'gone');
    const err = thrown(() => openSessionDb({ home }));
    expect((err as { code?: unknown }).code).toBe('EPROFILE_MISSING');
    expect(() => rawRows(path.join(home, 'state.db'), 'SELECT 1')).toThrow();
  });
});

describe('resolveSessionIdForKey (the reference resolver over durable rows)', () => {
  const KEY = 'agent:main:telegram:dm:42';

  it('resolves an open session of that key and platform, and refuses one started after the flush', () => {
    const { db } = fresh();
    db.createSession({ id: 'open', source: 'telegram', sessionKey: KEY, startedAt: 1700000000.7 });
    expect(db.resolveSessionIdForKey(KEY, 1700000000)).toBe('open'); // same whole second still counts
    expect(db.resolveSessionIdForKey(KEY, 1699999999.9)).toBeNull();
    expect(db.resolveSessionIdForKey(KEY)).toBe('open');
    expect(db.resolveSessionIdForKey('agent:main:discord:dm:42', 1800000000)).toBeNull();
    expect(db.resolveSessionIdForKey('not-an-agent-key', 1800000000)).toBeNull();
    expect(db.resolveSessionIdForKey('', 1800000000)).toBeNull();
    db.close();
  });

  it('accepts recoverable end reasons, refuses deliberate boundaries, and honours the reset fence', () => {
    const { db } = fresh();
    db.createSession({ id: 'closed-by-accident', source: 'telegram', sessionKey: KEY, startedAt: 1700000000 });
    db.endSession('closed-by-accident', 'agent_close', 1700000050);
    expect(db.resolveSessionIdForKey(KEY, 1800000000)).toBe('closed-by-accident');

    db.createSession({ id: 'new-chat', source: 'telegram', sessionKey: KEY, startedAt: 1700000100 });
    db.endSession('new-chat', 'new_session', 1700000150);
    // new-chat ended deliberately; the accidental one is still the candidate (no reset boundary after it).
    expect(db.resolveSessionIdForKey(KEY, 1800000000)).toBe('closed-by-accident');

    db.createSession({ id: 'reset', source: 'telegram', sessionKey: KEY, startedAt: 1700000200 });
    db.endSession('reset', 'session_reset', 1700000300);
    // A reset that ended after the candidate's last activity fences it off.
    expect(db.resolveSessionIdForKey(KEY, 1800000000)).toBeNull();
    db.close();
  });

  it('prefers a session with messages, then the most recent activity', () => {
    const { db } = fresh();
    db.createSession({ id: 'older-with-messages', source: 'telegram', sessionKey: KEY, startedAt: 1700000000 });
    db.appendMessage({ sessionId: 'older-with-messages', role: 'user', content: 'x', timestamp: 1700000001 });
    db.createSession({ id: 'newer-empty', source: 'telegram', sessionKey: KEY, startedAt: 1700000500 });
    expect(db.resolveSessionIdForKey(KEY, 1800000000)).toBe('older-with-messages');
    db.createSession({ id: 'newest-with-messages', source: 'telegram', sessionKey: KEY, startedAt: 1700000900 });
    db.appendMessage({ sessionId: 'newest-with-messages', role: 'user', content: 'y', timestamp: 1700000901 });
    expect(db.resolveSessionIdForKey(KEY, 1800000000)).toBe('newest-with-messages');
    db.close();
  });
});

describe('recovery receipts (exactly once)', () => {
  it('commits rows and receipt together; a second commit of the same receipt inserts nothing', () => {
    const { db, file } = fresh();
    db.createSession({ id: 's1', source: 'cli' });
    const entry = {
      receiptId: 'r-1',
      fileName: 'pending-a.json',
      rows: [{ sessionId: 's1', role: 'user', content: 'once', timestamp: 1700000000 }],
    };
    expect(db.hasReceipt('r-1')).toBe(false);
    expect(db.commitRecovered([entry])).toEqual([{ receiptId: 'r-1', status: 'inserted', rowIds: [1] }]);
    expect(db.hasReceipt('r-1')).toBe(true);
    expect(db.commitRecovered([entry])).toEqual([{ receiptId: 'r-1', status: 'duplicate' }]);
    expect(rawRows(file, 'SELECT content FROM messages')).toEqual([['once']]);
    expect(rawRows(file, 'SELECT receipt_id, file_name, rows FROM recovery_receipts')).toEqual([
      ['r-1', 'pending-a.json', 1],
    ]);
    expect(rawRows(file, 'SELECT message_count FROM sessions')).toEqual([[1]]);
    db.close();
  });

  it('isolates entries: a rejected or unknown-session entry is rolled back, the others commit', () => {
    const { db, file } = fresh();
    db.createSession({ id: 's1', source: 'cli' });
    const outcomes = db.commitRecovered([
      { receiptId: 'ok-1', fileName: 'a.json', rows: [{ sessionId: 's1', role: 'user', content: 'first' }] },
      {
        receiptId: 'bad',
        fileName: 'b.json',
        rows: [
          { sessionId: 's1', role: 'user', content: 'would be inserted before the bad row' },
          { sessionId: 's1', role: 'assistant', content: 'x', toolCalls: 7 },
        ],
      },
      { receiptId: 'ghost', fileName: 'c.json', rows: [{ sessionId: 'nope', role: 'user', content: 'x' }] },
      { receiptId: 'ok-2', fileName: 'd.json', rows: [{ sessionId: 's1', role: 'user', content: 'second' }] },
    ]);
    expect(outcomes).toEqual([
      { receiptId: 'ok-1', status: 'inserted', rowIds: [1] },
      {
        receiptId: 'bad',
        status: 'rejected',
        error: 'invalid value for tool_calls: expected a list, a JSON string or null, got number',
      },
      { receiptId: 'ghost', status: 'unknown-session', sessionId: 'nope' },
      { receiptId: 'ok-2', status: 'inserted', rowIds: [2] },
    ]);
    expect(rawRows(file, 'SELECT content FROM messages ORDER BY id')).toEqual([['first'], ['second']]);
    expect(rawRows(file, 'SELECT receipt_id FROM recovery_receipts ORDER BY receipt_id')).toEqual([['ok-1'], ['ok-2']]);
    expect(rawRows(file, 'SELECT message_count FROM sessions')).toEqual([[2]]);
    db.close();
  });

  it('isolates an entry the database itself rejects after its first write (replayed with savepoints)', () => {
    const { db, file } = fresh();
    db.createSession({ id: 's1', source: 'cli' });
    // A constraint only the database knows (as a reference schema's trigger could be): no validation sees it.
    const raw = new Database(file);
    raw.exec(
      "CREATE TRIGGER no_boom BEFORE INSERT ON messages WHEN NEW.content = 'boom' BEGIN SELECT RAISE(ABORT, 'boom refused'); END",
    );
    raw.close();
    const outcomes = db.commitRecovered([
      { receiptId: 'a', fileName: 'a.json', rows: [{ sessionId: 's1', role: 'user', content: 'first' }] },
      {
        receiptId: 'b',
        fileName: 'b.json',
        rows: [
          { sessionId: 's1', role: 'user', content: 'inserted, then taken back' },
          { sessionId: 's1', role: 'user', content: 'boom', toolCalls: [{ id: 'c' }] },
        ],
      },
      { receiptId: 'a', fileName: 'a.json', rows: [{ sessionId: 's1', role: 'user', content: 'same receipt again' }] },
      { receiptId: 'c', fileName: 'c.json', rows: [{ sessionId: 's1', role: 'assistant', content: 'last', toolCalls: [{ id: 'x' }] }] },
    ]);
    expect(outcomes).toEqual([
      { receiptId: 'a', status: 'inserted', rowIds: [1] },
      { receiptId: 'b', status: 'rejected', error: 'boom refused' },
      { receiptId: 'a', status: 'duplicate' },
      { receiptId: 'c', status: 'inserted', rowIds: [2] },
    ]);
    expect(rawRows(file, 'SELECT id, content FROM messages ORDER BY id')).toEqual([
      [1, 'first'],
      [2, 'last'],
    ]);
    expect(rawRows(file, 'SELECT receipt_id, rows FROM recovery_receipts ORDER BY receipt_id')).toEqual([
      ['a', 1],
      ['c', 1],
    ]);
    expect(rawRows(file, 'SELECT message_count, tool_call_count FROM sessions')).toEqual([[2, 1]]);
    db.close();
  });

  it('counts every row of a batch once per session, and claims a receipt only with its rows', () => {
    const { db, file } = fresh();
    db.createSession({ id: 's1', source: 'cli' });
    db.createSession({ id: 's2', source: 'cli' });
    const entries = Array.from({ length: 50 }, (_, i) => ({
      receiptId: `r${i}`,
      fileName: `f${i}.json`,
      rows: i % 10 === 9 ? [] : [{ sessionId: i % 2 === 0 ? 's1' : 's2', role: 'user', content: `m${i}` }],
    }));
    const outcomes = db.commitRecovered(entries);
    expect(outcomes.every((o) => o.status === 'inserted')).toBe(true);
    expect(rawRows(file, 'SELECT id, message_count FROM sessions ORDER BY id')).toEqual([
      ['s1', 25],
      ['s2', 20],
    ]);
    expect(rawRows(file, 'SELECT COUNT(*), SUM(rows) FROM recovery_receipts')).toEqual([[50, 45]]);
    db.close();
  });

  it('rolls back the whole batch and throws when the database itself fails', () => {
    const home = tempDir();
    const db = openSessionDb({ home });
    db.createSession({ id: 's1', source: 'cli' });
    // Another connection holds the write lock: the batch cannot begin.
    const blocker = new Database(path.join(home, 'state.db'), { timeout: 0 });
    blocker.exec('BEGIN IMMEDIATE');
    const locked = openSessionDb({ home, busyTimeoutMs: 50 });
    const err = thrown(() =>
      locked.commitRecovered([{ receiptId: 'r', fileName: 'f', rows: [{ sessionId: 's1', role: 'user', content: 'x' }] }]),
    );
    expect(err).toBeInstanceOf(SessionDbError);
    expect((err as SessionDbError).code).toBe('SQLITE_BUSY');
    expect((err as SessionDbError).path).toBe(path.join(home, 'state.db'));
    expect((err as SessionDbError).toLine()).toMatch(
      new RegExp(`^SQLITE_BUSY at ${path.join(home, 'state.db').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(uid \\d+\\): committing 1 recovered spool file\\(s\\) to .* — fix: another process held the write lock`),
    );
    blocker.exec('ROLLBACK');
    blocker.close();
    expect(locked.hasReceipt('r')).toBe(false);
    locked.close();
    db.close();
  });
});
