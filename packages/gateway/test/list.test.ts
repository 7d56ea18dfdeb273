import * as fs from 'node:fs';
import * as path from 'node:path';
import { openSessionDb } from '@hermes/session-db';
import { describe, expect, it } from 'vitest';
import { flushAgentHistorySync, flushOverflowSync, listSpool, recoverPending, spoolFileId } from '../src/index.js';
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
      // ts unknown sorts first (as 0), then (ts, seq, name).
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
      hasSessionKey: true,
      hasSessionId: false,
      messages: null,
      problem: null,
      error: null,
    });
    expect(byName.get(hexName(2))).toMatchObject({ hasSessionKey: true, hasSessionId: true, reason: 'adapter_shutdown' });
    expect(byName.get(hexName(4))).toMatchObject({ kind: 'agent-history', payloadKind: 'agent_history', messages: 3, hasSessionKey: false, hasSessionId: true });
    expect(byName.get(`${hexName(7)}.bad`)).toMatchObject({ id: '00000000000000000000000000000007', kind: 'bad', payloadKind: 'transcript_cap_drop', mtime: old.getTime() });
    expect(byName.get(hexName(5))).toMatchObject({ problem: 'unparseable', payloadKind: null });
    expect(byName.get(hexName(6))).toMatchObject({ problem: 'not-an-object' });
    expect(byName.get(hexName(8))).toMatchObject({ problem: 'not-a-regular-file' });
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
