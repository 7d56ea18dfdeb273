import * as fs from 'node:fs';
import * as path from 'node:path';
import { openSessionDb, type SessionDb } from '@hermes/session-db';
import { describe, expect, it } from 'vitest';
import { flushPendingSync, recoverPending, type RecoveryCommitOutcome, type SessionStore } from '../src/index.js';
import { memoryLogger, names, spoolDir, tempDir, writeSpoolFile } from './helpers.js';

const KEY = 'agent:main:telegram:dm:42';

/** Hand-written spool files in the reference's exact shapes (as Python's json.dump(indent=2) writes them). */
const FILES: Record<string, string | Buffer> = {
  // Baseline slot: int ts, legacy non-uuid name (the reference globs *.json).
  'test_session_123.json': `{\n  "session_key": "${KEY}",\n  "reason": "shutdown",\n  "ts": 1700000300,\n  "data": {\n    "text": "int ts",\n    "session_id": "sess-a"\n  }\n}`,
  // Overflow entry: float ts and an arrival-index seq; no session_id → resolved from the key.
  'pending-00000000000000000000000000000001.json': `{"session_key": "${KEY}", "reason": "shutdown", "ts": 1700000100.25, "seq": 0, "data": {"text": "float ts"}}`,
  // Newest slot shape (seq -1) behind a UTF-8 BOM.
  'pending-00000000000000000000000000000002.json': Buffer.concat([
    Buffer.from([0xef, 0xbb, 0xbf]),
    Buffer.from(`{"session_key": "${KEY}", "reason": "adapter_shutdown", "ts": 1700000200, "seq": -1, "data": {"text": "bom"}}`),
  ]),
  // Same ts as the BOM file and no seq (→ -1): the name breaks the tie.
  'pending-00000000000000000000000000000003.json': `{"session_key": "${KEY}", "reason": "shutdown", "ts": 1700000200, "data": {"text": "missing seq", "session_id": "sess-a"}}`,
  // Python writes float('nan') as the bare token NaN: sorts first (ts → 0), stored with "now".
  'pending-00000000000000000000000000000009.json': `{"session_key": "${KEY}", "reason": "shutdown", "ts": NaN, "seq": 3, "data": {"text": "nan ts", "session_id": "sess-a"}}`,
  // Cap-drop: the full transcript message is replayed (role, its own timestamp, tool calls).
  'pending-0000000000000000000000000000000a.json': `{"session_key": "sess-a", "reason": "transcript_cap_drop", "ts": 1700000050, "seq": 7, "data": {"session_id": "sess-a", "message": {"role": "assistant", "content": "cap drop", "timestamp": 1700000040.5, "tool_calls": [{"id": "c1"}]}}}`,
  // Agent-history snapshot: no ts, no session_key, no data — left for the operator.
  'pending-0000000000000000000000000000000b.json': `{"reason": "shutdown-with-unpersisted-agent-history", "issue": "#72680", "session_id": "sess-a", "count": 2, "messages": [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]}`,
  // Corrupt (truncated) JSON.
  'pending-0000000000000000000000000000000c.json': `{"session_key": "${KEY}", "reason": `,
  // Valid JSON, not an object.
  'pending-0000000000000000000000000000000d.json': `["not", "an", "object"]`,
  // No text.
  'pending-0000000000000000000000000000000e.json': `{"session_key": "${KEY}", "reason": "shutdown", "ts": 1700000400, "data": {"session_id": "sess-a"}}`,
  // A cap-drop whose row the store rejects (tool_calls must be a list).
  'pending-0000000000000000000000000000000f.json': `{"session_key": "sess-a", "reason": "transcript_cap_drop", "ts": 1700000060, "seq": 8, "data": {"session_id": "sess-a", "message": {"role": "tool", "content": "x", "tool_calls": 7}}}`,
  // A key no session row carries.
  'pending-00000000000000000000000000000010.json': `{"session_key": "agent:main:telegram:dm:999", "reason": "shutdown", "ts": 1700000500, "data": {"text": "nobody home"}}`,
  // A session id with no row.
  'pending-00000000000000000000000000000011.json': `{"session_key": "${KEY}", "reason": "shutdown", "ts": 1700000600, "data": {"text": "ghost", "session_id": "ghost"}}`,
  // Written by a future version of this package.
  'pending-00000000000000000000000000000012.json': `{"schema_version": 99, "kind": "pending", "session_key": "${KEY}", "reason": "shutdown", "ts": 1700000700, "seq": 1, "data": {"text": "from the future", "session_id": "sess-a"}}`,
  // Not valid UTF-8.
  'pending-00000000000000000000000000000013.json': Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
};

function setup(): { home: string; db: SessionDb } {
  const home = path.join(tempDir(), 'home');
  for (const [name, content] of Object.entries(FILES)) writeSpoolFile(home, name, content);
  const db = openSessionDb({ home });
  db.createSession({ id: 'sess-a', source: 'telegram', sessionKey: KEY, startedAt: 1700000000 });
  return { home, db };
}

const base = (home: string, name: string): string => path.join(spoolDir(home), name);

describe('recoverPending: hand-written files in the reference shapes', () => {
  it('gives every file the right outcome and replays in (ts, seq, name) order', () => {
    const { home, db } = setup();
    const before = Date.now() / 1000;
    const report = recoverPending({ home, store: db, logger: memoryLogger() });
    const after = Date.now() / 1000;

    expect(report.scanned).toBe(15);
    expect(report.inserted.map((i) => [path.basename(i.path), i.kind, i.sessionId])).toEqual([
      // seq 3 without a kind: a legacy overflow entry.
      ['pending-00000000000000000000000000000009.json', 'overflow', 'sess-a'],
      ['pending-0000000000000000000000000000000a.json', 'transcript_cap_drop', 'sess-a'],
      ['pending-00000000000000000000000000000001.json', 'overflow', 'sess-a'],
      ['pending-00000000000000000000000000000002.json', 'pending', 'sess-a'],
      ['pending-00000000000000000000000000000003.json', 'pending', 'sess-a'],
      ['test_session_123.json', 'pending', 'sess-a'],
    ]);
    expect(report.kept.map((k) => [path.basename(k.path), k.reason])).toEqual([
      ['pending-0000000000000000000000000000000c.json', 'unparseable'],
      ['pending-00000000000000000000000000000013.json', 'unparseable'],
      ['pending-0000000000000000000000000000000d.json', 'not-an-object'],
      ['pending-0000000000000000000000000000000e.json', 'no-text'],
      ['pending-00000000000000000000000000000010.json', 'unresolved'],
      ['pending-00000000000000000000000000000012.json', 'unknown-schema-version'],
      // unknown-session is the store's verdict, given when the batch is committed.
      ['pending-00000000000000000000000000000011.json', 'unknown-session'],
    ]);
    expect(report.bad).toEqual([
      {
        path: base(home, 'pending-0000000000000000000000000000000f.json'),
        badPath: base(home, 'pending-0000000000000000000000000000000f.json.bad'),
        error: 'invalid value for tool_calls: expected a list, a JSON string or null, got number',
      },
    ]);
    expect(report.snapshots).toEqual([
      { path: base(home, 'pending-0000000000000000000000000000000b.json'), sessionId: 'sess-a', count: 2 },
    ]);
    expect(report.alreadyCommitted).toEqual([]);
    expect(report.foreignOwner).toEqual([]);
    expect(report.errors).toEqual([]);

    const messages = db.exportSession('sess-a')?.messages ?? [];
    // exportSession orders by timestamp; the insertion order is the row id order.
    const byId = [...messages].sort((a, b) => a.id - b.id);
    expect(byId.map((m) => [m.role, m.content])).toEqual([
      ['user', 'nan ts'],
      ['assistant', 'cap drop'],
      ['user', 'float ts'],
      ['user', 'bom'],
      ['user', 'missing seq'],
      ['user', 'int ts'],
    ]);
    expect(byId.slice(1).map((m) => m.timestamp)).toEqual([1700000040.5, 1700000100.25, 1700000200, 1700000200, 1700000300]);
    const nanRow = byId[0];
    expect(nanRow?.timestamp).toBeGreaterThanOrEqual(before);
    expect(nanRow?.timestamp).toBeLessThanOrEqual(after);
    expect(byId[1]?.tool_calls).toEqual([{ id: 'c1' }]);
    expect(db.getSession('sess-a')).toMatchObject({ message_count: 6, tool_call_count: 1 });

    // What is left: kept files, the snapshot and the .bad file. Inserted files are gone.
    expect(names(spoolDir(home))).toEqual([
      'pending-0000000000000000000000000000000b.json',
      'pending-0000000000000000000000000000000c.json',
      'pending-0000000000000000000000000000000d.json',
      'pending-0000000000000000000000000000000e.json',
      'pending-0000000000000000000000000000000f.json.bad',
      'pending-00000000000000000000000000000010.json',
      'pending-00000000000000000000000000000011.json',
      'pending-00000000000000000000000000000012.json',
      'pending-00000000000000000000000000000013.json',
    ]);

    // A second pass changes nothing: no duplicates, the same files kept.
    const again = recoverPending({ home, store: db, logger: memoryLogger() });
    expect(again.inserted).toEqual([]);
    expect(again.kept).toHaveLength(7);
    expect(again.snapshots).toHaveLength(1);
    expect(db.getSession('sess-a')?.message_count).toBe(6);
    db.close();
  });

  it('does not adopt a session that started after the flush (resolver not_after)', () => {
    const home = path.join(tempDir(), 'home');
    writeSpoolFile(home, 'pending-00000000000000000000000000000001.json', `{"session_key": "${KEY}", "reason": "shutdown", "ts": 1700000000, "data": {"text": "early"}}`);
    const db = openSessionDb({ home });
    db.createSession({ id: 'later', source: 'telegram', sessionKey: KEY, startedAt: 1700000100 });
    const report = recoverPending({ home, store: db, logger: memoryLogger() });
    expect(report.kept.map((k) => k.reason)).toEqual(['unresolved']);
    db.close();
  });

  it('uses a caller resolver, keeps files whose resolver throws', () => {
    const home = path.join(tempDir(), 'home');
    writeSpoolFile(home, 'pending-00000000000000000000000000000001.json', `{"session_key": "custom:1", "reason": "shutdown", "ts": 1700000000, "data": {"text": "a"}}`);
    writeSpoolFile(home, 'pending-00000000000000000000000000000002.json', `{"session_key": "custom:2", "reason": "shutdown", "ts": 1700000001, "data": {"text": "b"}}`);
    const db = openSessionDb({ home });
    db.createSession({ id: 'mine', source: 'cli' });
    const seen: [string, number | undefined][] = [];
    const report = recoverPending({
      home,
      store: db,
      logger: memoryLogger(),
      resolveSessionId: (key, notAfter) => {
        seen.push([key, notAfter]);
        if (key === 'custom:2') throw new Error('routing map unavailable');
        return 'mine';
      },
    });
    expect(seen).toEqual([
      ['custom:1', 1700000000],
      ['custom:2', 1700000001],
    ]);
    expect(report.inserted.map((i) => i.sessionId)).toEqual(['mine']);
    expect(report.kept.map((k) => [k.reason, k.detail])).toEqual([
      ['resolver-error', 'resolving custom:2 failed: routing map unavailable'],
    ]);
    db.close();
  });

  it('keeps every file when the store fails, and reports it', () => {
    const home = path.join(tempDir(), 'home');
    flushPendingSync({ a: { text: 'one', session_id: 's' }, b: { text: 'two', session_id: 's' } }, { home });
    const failing: SessionStore = {
      hasReceipt: () => false,
      commitRecovered(): RecoveryCommitOutcome[] {
        throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
      },
    };
    const report = recoverPending({ home, store: failing, logger: memoryLogger() });
    expect(report.inserted).toEqual([]);
    expect(report.kept.map((k) => k.reason)).toEqual(['store-error', 'store-error']);
    expect(report.errors.map((e) => e.code)).toEqual(['SQLITE_BUSY']);
    expect(names(spoolDir(home))).toHaveLength(2);
  });

  it('a missing spool directory is an empty pass and creates nothing', () => {
    const home = path.join(tempDir(), 'home');
    fs.mkdirSync(home);
    const db = openSessionDb({ home });
    const report = recoverPending({ home, store: db });
    expect(report).toMatchObject({ scanned: 0, inserted: [], kept: [], errors: [] });
    expect(names(home).filter((n) => n === 'pending_messages')).toEqual([]);
    db.close();
  });

  it('a deleted profile home is reported (EPROFILE_MISSING), not thrown', () => {
    const root = tempDir();
    const home = path.join(root, 'profiles', 'gone');
    const store = openSessionDb({ path: path.join(root, 'elsewhere.db'), home: root });
    const report = recoverPending({ home, store, logger: memoryLogger() });
    expect(report.errors.map((e) => [e.code, e.path])).toEqual([['EPROFILE_MISSING', home]]);
    expect(fs.existsSync(home)).toBe(false);
    store.close();
  });

  it('records receipts keyed by name and bytes, so a same-named file with new content is not skipped', () => {
    const home = path.join(tempDir(), 'home');
    const db = openSessionDb({ home });
    db.createSession({ id: 's', source: 'cli' });
    const name = 'pending-00000000000000000000000000000001.json';
    writeSpoolFile(home, name, '{"session_key": "k", "ts": 1700000000, "data": {"text": "first", "session_id": "s"}}');
    const first = recoverPending({ home, store: db }).inserted;
    writeSpoolFile(home, name, '{"session_key": "k", "ts": 1700000001, "data": {"text": "second", "session_id": "s"}}');
    const second = recoverPending({ home, store: db }).inserted;
    expect(first).toHaveLength(1);
    expect(second).toHaveLength(1);
    expect(first[0]?.receiptId).not.toBe(second[0]?.receiptId);
    expect(db.hasReceipt(first[0]?.receiptId ?? '')).toBe(true);
    expect(db.hasReceipt(second[0]?.receiptId ?? '')).toBe(true);
    expect(db.exportSession('s')?.messages.map((m) => m.content)).toEqual(['first', 'second']);
    db.close();
  });
});
