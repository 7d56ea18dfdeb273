/**
 * Issue #23 Build 5: exactly once per message, not per file name. Recovery's receipt is the payload's identity
 * (its writer's process id, pid and seq, or a hash of its bytes), so the same payload under two names is
 * delivered once and the second name is reported as a duplicate — in one pass, across passes, and across a
 * receipt an earlier version committed (sha256 of name and bytes). Real SQLite (session-db), real files.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openSessionDb } from '@hermes/session-db';
import { describe, expect, it } from 'vitest';
import { flushPendingSync, recoverPending } from '../src/index.js';
import { memoryLogger, names, spoolDir, tempDir, writeSpoolFile } from './helpers.js';

const SESSION = { id: 'sess-id', source: 'telegram', sessionKey: 'agent:main:telegram:dm:id', startedAt: 1700000000 };

function setup(): { home: string; db: ReturnType<typeof openSessionDb> } {
  const home = path.join(tempDir(), 'home');
  fs.mkdirSync(home, { recursive: true });
  const db = openSessionDb({ home });
  db.createSession(SESSION);
  return { home, db };
}

function contents(db: ReturnType<typeof openSessionDb>): string[] {
  return (db.exportSession(SESSION.id)?.messages ?? []).map((m) => String(m.content));
}

describe('build 5: recovery delivers a payload once, whatever its names', () => {
  it('build 5: the same payload under two file names → one delivery, one duplicate entry in the report and one log line', () => {
    const { home, db } = setup();
    const flushed = flushPendingSync({ [SESSION.sessionKey]: { text: 'only once', session_id: SESSION.id } }, { home, logger: memoryLogger() });
    expect(flushed.written).toHaveLength(1);
    const first = flushed.written[0]?.path ?? '';
    // A second name of the same bytes, sorted after the first (ts and seq are equal: name order decides).
    const second = path.join(spoolDir(home), 'pending-ffffffffffffffffffffffffffffffff.json');
    fs.copyFileSync(first, second);
    const logger = memoryLogger();
    const report = recoverPending({ home, store: db, logger });
    expect(contents(db)).toEqual(['only once']);
    console.log(
      `build 5: 2 names of 1 payload -> ${String(report.inserted.length)} delivery, ${String(report.duplicates.length)} duplicate, ` +
        `${String(contents(db).length)} row(s) in state.db, ${String(names(spoolDir(home)).length)} file(s) left`,
    );
    expect(report.inserted.map((e) => e.path)).toEqual([first]);
    expect(report.duplicates).toEqual([{ path: second, receiptId: report.inserted[0]?.receiptId, of: first, removed: true }]);
    expect(report.alreadyCommitted).toEqual([]);
    expect(names(spoolDir(home))).toEqual([]);
    expect(logger.lines.filter((l) => l.message.includes('duplicate')).map((l) => [l.level, l.message])).toEqual([
      [
        'warn',
        `pending-message recovery: 1 file(s) held a payload this pass delivered under another name (duplicate, delivered once, removed); the first: ${path.basename(second)} duplicates ${path.basename(first)}`,
      ],
    ]);
    db.close();
  });

  it('build 5: a second name found by a later pass is already committed: removed, nothing inserted', () => {
    const { home, db } = setup();
    const flushed = flushPendingSync({ [SESSION.sessionKey]: { text: 'later', session_id: SESSION.id } }, { home, logger: memoryLogger() });
    const first = flushed.written[0]?.path ?? '';
    const bytes = fs.readFileSync(first);
    const one = recoverPending({ home, store: db, logger: memoryLogger() });
    expect(one.inserted).toHaveLength(1);
    writeSpoolFile(home, 'pending-0123456789abcdef0123456789abcdef.json', bytes);
    const two = recoverPending({ home, store: db, logger: memoryLogger() });
    expect([two.inserted.length, two.duplicates.length, two.alreadyCommitted.map((a) => [path.basename(a.path), a.receiptId, a.removed])]).toEqual([
      0,
      0,
      [['pending-0123456789abcdef0123456789abcdef.json', one.inserted[0]?.receiptId, true]],
    ]);
    expect(contents(db)).toEqual(['later']);
    db.close();
  });

  it('build 5: the identity is the writer (process id, pid, seq), not the bytes: a payload re-serialised differently is the same message', () => {
    const { home, db } = setup();
    const payload = {
      schema_version: 1,
      kind: 'pending',
      ts: 1700000001,
      seq: 7,
      pid: 4242,
      process_id: 'feedfacefeedface',
      session_key: SESSION.sessionKey,
      reason: 'shutdown',
      data: { text: 'same writer, same seq', session_id: SESSION.id },
    };
    writeSpoolFile(home, 'pending-00000000000000000000000000000001.json', JSON.stringify(payload, null, 2));
    writeSpoolFile(home, 'pending-00000000000000000000000000000002.json', JSON.stringify(payload));
    const report = recoverPending({ home, store: db, logger: memoryLogger() });
    expect(contents(db)).toEqual(['same writer, same seq']);
    const id = createHash('sha256').update(`hermes-spool-payload/1\u0000${JSON.stringify(['feedfacefeedface', 4242, 7])}`).digest('hex');
    expect([report.inserted.map((e) => [path.basename(e.path), e.receiptId]), report.duplicates.map((d) => [path.basename(d.path), path.basename(d.of)])]).toEqual([
      [['pending-00000000000000000000000000000001.json', id]],
      [['pending-00000000000000000000000000000002.json', 'pending-00000000000000000000000000000001.json']],
    ]);
    expect(contents(db)).toEqual(['same writer, same seq']);
    db.close();
  });

  it("build 5: a file an earlier version committed (its receipt: sha256 of name and bytes) is only removed", () => {
    const { home, db } = setup();
    const text = JSON.stringify({ kind: 'pending', ts: 1700000002, session_key: SESSION.sessionKey, data: { text: 'old receipt', session_id: SESSION.id } });
    const name = 'pending-0000000000000000000000000000000a.json';
    writeSpoolFile(home, name, text);
    const legacy = createHash('sha256').update(name).update('\u0000').update(text).digest('hex');
    // What a pass of the earlier version committed before it crashed, short of removing the file.
    expect(db.commitRecovered([{ receiptId: legacy, fileName: name, rows: [{ sessionId: SESSION.id, role: 'user', content: 'old receipt', timestamp: 1700000002 }] }]).map((o) => o.status)).toEqual(['inserted']);
    const report = recoverPending({ home, store: db, logger: memoryLogger() });
    expect([report.inserted.length, report.alreadyCommitted.map((a) => [path.basename(a.path), a.removed])]).toEqual([0, [[name, true]]]);
    expect(contents(db)).toEqual(['old receipt']);
    expect(names(spoolDir(home))).toEqual([]);
    db.close();
  });
});
