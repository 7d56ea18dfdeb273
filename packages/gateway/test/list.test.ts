import * as fs from 'node:fs';
import * as path from 'node:path';
import { openSessionDb } from '@hermes/session-db';
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import {
  compareSpoolEntries,
  flushAgentHistorySync,
  flushOverflowSync,
  listSpool,
  readSpoolFile,
  recoverPending,
  scanSpool,
  spoolEntryTime,
  spoolFileId,
} from '../src/index.js';
import { memoryLogger, spoolDir, tempDir, writeSpoolFile } from './helpers.js';

const SECRET = 'the secret message text';
const KEY = 'agent:main:telegram:dm:424242';
const SESSION = 'sess-very-private';

function hexName(n: number): string {
  return `pending-${n.toString(16).padStart(32, '0')}.json`;
}

describe('listSpool', () => {
  it('lists every spool file in recovery order, with metadata only', () => {
    const root = tempDir();
    const home = path.join(root, 'home');
    const firstText = JSON.stringify({ kind: 'pending', session_key: KEY, reason: 'shutdown', ts: 1700000300, seq: 2, data: { text: SECRET } });
    const firstFile = writeSpoolFile(home, hexName(1), firstText);
    // Literal metadata the listing must report: mode 0640, mtime 2024-01-02T00:00:00Z.
    fs.chmodSync(firstFile, 0o640);
    fs.utimesSync(firstFile, new Date(Date.UTC(2024, 0, 2)), new Date(Date.UTC(2024, 0, 2)));
    writeSpoolFile(home, hexName(2), JSON.stringify({ session_key: KEY, reason: 'adapter_shutdown', ts: 1700000100, seq: 0, data: { text: SECRET, session_id: SESSION } }));
    writeSpoolFile(home, hexName(3), JSON.stringify({ session_key: SESSION, reason: 'transcript_cap_drop', ts: 1700000200, seq: 1, data: { session_id: SESSION, message: { role: 'assistant', content: SECRET } } }));
    writeSpoolFile(home, hexName(4), JSON.stringify({ reason: 'shutdown-with-unpersisted-agent-history', issue: '#72680', session_id: SESSION, count: 3, ts: 1700000050, messages: [{ role: 'user', content: SECRET }] }));
    writeSpoolFile(home, hexName(5), '{ broken');
    writeSpoolFile(home, hexName(6), '[1, 2]');
    writeSpoolFile(home, `${hexName(7)}.bad`, JSON.stringify({ kind: 'transcript_cap_drop', reason: 'transcript_cap_drop', session_key: SESSION, ts: 1700000150, seq: 9, data: { session_id: SESSION, message: { role: 'tool', content: SECRET, tool_calls: 7 } } }));
    writeSpoolFile(home, 'legacy_session.json', JSON.stringify({ session_key: KEY, reason: 'shutdown', ts: 1700000100, data: { text: SECRET } }));
    writeSpoolFile(home, '.pending-00000000000000000000000000000009.json.4194305.abcdefabcdef.tmp', '{"par');
    writeSpoolFile(home, 'README.txt', SECRET);
    fs.symlinkSync(path.join(root, 'elsewhere.json'), path.join(spoolDir(home), hexName(8)));
    const old = new Date(Date.UTC(2024, 0, 1));
    fs.utimesSync(path.join(spoolDir(home), `${hexName(7)}.bad`), old, old);

    const entries = listSpool({ home });
    expect(entries.map((e) => [e.name, e.kind, e.ts, e.seq])).toEqual([
      // ts unknown sorts first (as 0), then (ts, seq, name); the temp a writer left cut short is listed too.
      ['.pending-00000000000000000000000000000009.json.4194305.abcdefabcdef.tmp', 'partial', null, null],
      [hexName(5), 'unknown', null, null],
      [hexName(6), 'unknown', null, null],
      [hexName(8), 'unknown', null, null],
      [hexName(4), 'agent-history', 1700000050, null],
      // seq -1 (missing) before seq 0 at the same ts.
      ['legacy_session.json', 'pending', 1700000100, null],
      [hexName(2), 'overflow', 1700000100, 0],
      [`${hexName(7)}.bad`, 'bad', 1700000150, 9],
      [hexName(3), 'cap-drop', 1700000200, 1],
      [hexName(1), 'pending', 1700000300, 2],
    ]);
    const byName = new Map(entries.map((e) => [e.name, e]));
    expect(byName.get(hexName(1))).toEqual({
      id: '00000000000000000000000000000001',
      name: hexName(1),
      path: path.join(spoolDir(home), hexName(1)),
      kind: 'pending',
      payloadKind: 'pending',
      ts: 1700000300,
      seq: 2,
      reason: 'shutdown',
      size: Buffer.byteLength(firstText),
      mtime: Date.UTC(2024, 0, 2),
      uid: process.geteuid?.(),
      mode: 0o640,
      fileType: 'file',
      hasSessionKey: true,
      hasSessionId: false,
      messages: null,
      members: null,
      target: null,
      problem: null,
      error: null,
      detail: null,
    });
    expect(byName.get(hexName(2))).toMatchObject({ hasSessionKey: true, hasSessionId: true, reason: 'adapter_shutdown' });
    expect(byName.get(hexName(4))).toMatchObject({ kind: 'agent-history', payloadKind: 'agent_history', messages: 3, hasSessionKey: false, hasSessionId: true });
    expect(byName.get(`${hexName(7)}.bad`)).toMatchObject({ id: '00000000000000000000000000000007', kind: 'bad', payloadKind: 'transcript_cap_drop', mtime: old.getTime() });
    expect(byName.get(hexName(5))).toMatchObject({ problem: 'unparseable', payloadKind: null });
    expect(byName.get('.pending-00000000000000000000000000000009.json.4194305.abcdefabcdef.tmp')).toMatchObject({
      kind: 'partial',
      problem: null,
      target: hexName(9),
      detail: 'incomplete: not complete JSON (unterminated string at position 5)',
    });
    expect(byName.get(hexName(6))).toMatchObject({ problem: 'not-an-object' });
    expect(byName.get(hexName(8))).toMatchObject({ problem: 'not-a-regular-file', fileType: 'symlink' });
    expect(byName.get('legacy_session.json')?.id).toBe('legacy_session');

    // Never the text, the session key or the session id.
    const json = JSON.stringify(entries);
    for (const secret of [SECRET, KEY, SESSION]) expect(json).not.toContain(secret);

    expect(listSpool({ home, includeBad: false }).map((e) => e.kind)).not.toContain('bad');
    expect(listSpool(home)).toEqual(entries);
  });

  it('an absent spool lists as []; an unlistable one throws its errno', () => {
    const home = path.join(tempDir(), 'home');
    expect(listSpool({ home })).toEqual([]);
    fs.mkdirSync(home);
    fs.writeFileSync(spoolDir(home), 'not a directory');
    expect(() => listSpool({ home })).toThrow(expect.objectContaining({ code: 'ENOTDIR' }) as Error);
  });

  it('lists in the order recovery replays', () => {
    const home = path.join(tempDir(), 'home');
    flushOverflowSync({ [KEY]: [{ text: 'one', session_id: 'sx', timestamp: 1700000002 }, { text: 'two', session_id: 'sx', timestamp: 1700000001 }] }, { home });
    flushAgentHistorySync('sx', [{ role: 'user', content: 'x' }], { home });
    const listed = listSpool({ home }).filter((e) => e.kind !== 'agent-history').map((e) => e.path);
    const db = openSessionDb({ home });
    db.createSession({ id: 'sx', source: 'cli', startedAt: 1700000000 });
    const report = recoverPending({ home, store: db, logger: memoryLogger() });
    expect(report.inserted.map((e) => e.path)).toEqual(listed);
    db.close();
  });
});

describe('scanSpool', () => {
  it('streams the same entries as listSpool, in directory order, with content only when asked', () => {
    const home = path.join(tempDir(), 'home');
    writeSpoolFile(home, hexName(1), JSON.stringify({ kind: 'pending', session_key: KEY, reason: 'shutdown', ts: 1700000300, seq: 2, data: { text: SECRET } }));
    writeSpoolFile(home, hexName(2), JSON.stringify({ session_key: SESSION, reason: 'transcript_cap_drop', ts: 1700000200, seq: 1, data: { session_id: SESSION, message: { role: 'assistant', content: 'dropped text' } } }));
    writeSpoolFile(home, hexName(3), JSON.stringify({ reason: 'shutdown-with-unpersisted-agent-history', issue: '#72680', session_id: SESSION, count: 1, messages: [{ role: 'user', content: SECRET }] }));
    writeSpoolFile(home, hexName(4), JSON.stringify({ session_key: KEY, reason: 'shutdown', ts: 1700000100, data: { text: `${'a'.repeat(199)}\u{1F600}tail` } }));

    const plain = [...scanSpool({ home })];
    expect([...plain].sort(compareSpoolEntries)).toEqual(listSpool({ home }));
    expect(plain.map((e) => e.name).sort()).toEqual([hexName(1), hexName(2), hexName(3), hexName(4)]);
    expect(JSON.stringify(plain)).not.toContain(SECRET);
    expect(plain.every((e) => !('content' in e))).toBe(true);

    const withContent = new Map([...scanSpool({ home, content: true })].map((e) => [e.name, e.content]));
    expect(withContent.get(hexName(1))).toEqual({ sessionKey: KEY, sessionId: null, text: SECRET, textLength: SECRET.length });
    expect(withContent.get(hexName(2))).toEqual({ sessionKey: SESSION, sessionId: SESSION, text: 'dropped text', textLength: 12 });
    expect(withContent.get(hexName(3))).toEqual({ sessionKey: null, sessionId: SESSION, text: null, textLength: null });
    // 200 code units at most, never half of a surrogate pair: the emoji starts at unit 199 and is dropped whole.
    expect(withContent.get(hexName(4))).toEqual({ sessionKey: KEY, sessionId: null, text: 'a'.repeat(199), textLength: 199 + 2 + 4 });
  });

  it('looks only at the names the filter accepts', () => {
    const home = path.join(tempDir(), 'home');
    for (let i = 1; i <= 5; i++) writeSpoolFile(home, hexName(i), JSON.stringify({ session_key: KEY, ts: 1700000000 + i, data: { text: 'x' } }));
    const seen: string[] = [];
    const entries = [...scanSpool({ home, filter: (name) => (seen.push(name), name === hexName(3)) })];
    expect(entries.map((e) => e.name)).toEqual([hexName(3)]);
    expect(seen.sort()).toEqual([1, 2, 3, 4, 5].map(hexName));
  });

  it('lists a FIFO, a directory and a symlink named like payloads without opening or following them', () => {
    const root = tempDir();
    const home = path.join(root, 'home');
    writeSpoolFile(home, hexName(1), JSON.stringify({ session_key: KEY, ts: 1700000001, data: { text: 'real' } }));
    execFileSync('mkfifo', [path.join(spoolDir(home), hexName(2))]);
    fs.mkdirSync(path.join(spoolDir(home), hexName(3)));
    fs.writeFileSync(path.join(root, 'target.json'), JSON.stringify({ session_key: KEY, data: { text: SECRET } }));
    fs.symlinkSync(path.join(root, 'target.json'), path.join(spoolDir(home), hexName(4)));
    // A FIFO opened for reading without O_NONBLOCK would hang this test (no writer ever comes).
    const entries = listSpool({ home });
    expect(entries.map((e) => [e.name, e.kind, e.problem, e.fileType])).toEqual([
      [hexName(2), 'unknown', 'not-a-regular-file', 'fifo'],
      [hexName(3), 'unknown', 'not-a-regular-file', 'directory'],
      [hexName(4), 'unknown', 'not-a-regular-file', 'symlink'],
      [hexName(1), 'pending', null, 'file'],
    ]);
    expect(JSON.stringify([...scanSpool({ home, content: true })])).not.toContain(SECRET);
    expect(readSpoolFile(path.join(spoolDir(home), hexName(2)))?.entry).toMatchObject({ problem: 'not-a-regular-file', fileType: 'fifo' });
    expect(readSpoolFile(path.join(spoolDir(home), hexName(4)))?.payload).toBeUndefined();
  });

  it('an unlistable spool throws before the first entry; an absent one yields nothing', () => {
    const home = path.join(tempDir(), 'home');
    expect([...scanSpool({ home })]).toEqual([]);
    fs.mkdirSync(home);
    fs.writeFileSync(spoolDir(home), 'not a directory');
    expect(() => scanSpool({ home })).toThrow(expect.objectContaining({ code: 'ENOTDIR' }) as Error);
  });
});

describe('readSpoolFile', () => {
  it('reads one file in full: the payload, or the raw text of an unparseable file', () => {
    const home = path.join(tempDir(), 'home');
    const ok = writeSpoolFile(home, hexName(1), JSON.stringify({ session_key: KEY, ts: 1700000001, data: { text: SECRET } }));
    const broken = writeSpoolFile(home, hexName(2), '{ "data": "\u0000 half');
    expect(readSpoolFile(ok)).toEqual({
      entry: expect.objectContaining({ name: hexName(1), kind: 'pending', content: { sessionKey: KEY, sessionId: null, text: SECRET, textLength: SECRET.length } }) as unknown,
      payload: { session_key: KEY, ts: 1700000001, data: { text: SECRET } },
      raw: undefined,
    });
    expect(readSpoolFile(broken)).toMatchObject({ entry: { problem: 'unparseable' }, payload: undefined, raw: '{ "data": "\u0000 half' });
    expect(readSpoolFile(path.join(spoolDir(home), hexName(3)))).toBeUndefined();
  });
});

describe('spoolEntryTime', () => {
  it('is ts (seconds) when positive and finite, else the modification time: a reference snapshot without ts has an age', () => {
    const home = path.join(tempDir(), 'home');
    const file = writeSpoolFile(home, hexName(1), JSON.stringify({ reason: 'shutdown-with-unpersisted-agent-history', session_id: 's', messages: [] }));
    const then = new Date(Date.UTC(2025, 5, 1, 12, 0, 0));
    fs.utimesSync(file, then, then);
    const [entry] = listSpool({ home });
    expect(entry?.ts).toBeNull();
    expect(entry === undefined ? null : spoolEntryTime(entry)).toBe(Date.UTC(2025, 5, 1, 12, 0, 0));
    expect(spoolEntryTime({ ts: 1700000000.5, mtime: 1 })).toBe(1700000000500);
    expect(spoolEntryTime({ ts: 0, mtime: 42 })).toBe(42);
  });
});

describe('spoolFileId', () => {
  it('strips pending-, .json and a recovery .bad suffix', () => {
    expect(spoolFileId(hexName(10))).toBe('0000000000000000000000000000000a');
    expect(spoolFileId(`${hexName(10)}.bad`)).toBe('0000000000000000000000000000000a');
    expect(spoolFileId(`${hexName(10)}.lz3k9x.bad`)).toBe('0000000000000000000000000000000a');
    expect(spoolFileId('test_session_123.json')).toBe('test_session_123');
    expect(spoolFileId('pending-.json')).toBe('pending-');
    expect(spoolFileId('odd.bad')).toBe('odd');
  });
});
