/**
 * `listCommitted: false`: a pass that lists nothing that went well, counts it, and still lists everything that
 * needs attention — with the same effect on the spool and the store as a pass that lists everything.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openSessionDb } from '@hermes/session-db';
import { describe, expect, it } from 'vitest';
import { recoverPending } from '../src/index.js';
import { memoryLogger, names, spoolDir, tempDir, writeSpoolFile } from './helpers.js';

const SESSION = { id: 'sess-c', source: 'telegram', sessionKey: 'agent:main:telegram:dm:c', startedAt: 1700000000 };

function seeded(): string {
  const home = path.join(tempDir(), 'home');
  fs.mkdirSync(home);
  const db = openSessionDb({ home });
  db.createSession(SESSION);
  db.close();
  for (let i = 0; i < 5; i++) {
    const payload = { schema_version: 1, kind: 'pending', ts: 1700000001 + i, seq: i, process_id: 'p', pid: 1, session_key: SESSION.sessionKey, data: { text: `m${String(i)}`, session_id: SESSION.id } };
    writeSpoolFile(home, `pending-${String(i).padStart(32, '0')}.json`, JSON.stringify(payload));
  }
  // The same payload as file 0 under a second name, and a file that cannot be parsed.
  writeSpoolFile(home, `pending-${'9'.repeat(32)}.json`, fs.readFileSync(path.join(spoolDir(home), `pending-${'0'.repeat(32)}.json`)));
  writeSpoolFile(home, 'pending-broken.json', '{"kind": ');
  return home;
}

describe('recoverPending({ listCommitted: false })', () => {
  it('counts what went well without listing it; duplicates and kept files are listed; the spool and the store end the same', () => {
    const outcomes = [true, false].map((listCommitted) => {
      const home = seeded();
      const db = openSessionDb({ home });
      const logger = memoryLogger();
      const r = recoverPending({ home, store: db, listCommitted, logger });
      const rows = db.exportSession(SESSION.id)?.messages.map((m) => m.content);
      db.close();
      return {
        counts: r.counts,
        listed: [r.inserted.length, r.alreadyCommitted.length, r.duplicates.length, r.kept.map((k) => k.reason)],
        rows,
        left: names(spoolDir(home)),
        summary: logger.lines.at(-1)?.message,
      };
    });
    const [full, counted] = outcomes;
    expect(full?.counts).toEqual({ inserted: 5, rows: 5, alreadyCommitted: 0, duplicates: 1 });
    expect(counted?.counts).toEqual({ inserted: 5, rows: 5, alreadyCommitted: 0, duplicates: 1 });
    expect(full?.listed).toEqual([5, 0, 1, ['unparseable']]);
    expect(counted?.listed).toEqual([0, 0, 1, ['unparseable']]);
    expect(counted?.rows).toEqual(['m0', 'm1', 'm2', 'm3', 'm4']);
    expect(counted?.rows).toEqual(full?.rows);
    expect(counted?.left).toEqual(['pending-broken.json']);
    expect(counted?.left).toEqual(full?.left);
    expect(counted?.summary).toBe(full?.summary);
    expect(counted?.summary).toContain('5 inserted');
  });
});
