/**
 * "damaged" only when SQLite's own integrity_check says so. A SQLITE_CORRUPT from a database whose
 * integrity_check fails says it is damaged and how to repair it; one from a database whose integrity_check
 * passes says that, and never calls state.db damaged.
 */
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { databaseError, integrityCheck, openSessionDb, SessionDbError } from '../src/index.js';
import { tempDir, thrown } from './helpers.js';

/** Points the sessions table's primary-key index at a decoy index that names session 'ghost' at rowid 999. */
function damageIndex(file: string): void {
  const raw = new Database(file);
  try {
    raw.exec("CREATE TABLE decoy(id TEXT PRIMARY KEY, x); INSERT INTO decoy(rowid, id, x) VALUES (999, 'ghost', 1);");
    const root = (name: string): number => (raw.prepare('SELECT rootpage FROM sqlite_schema WHERE name = ?').get(name) as { rootpage: number }).rootpage;
    const a = root('sqlite_autoindex_sessions_1');
    const b = root('sqlite_autoindex_decoy_1');
    raw.unsafeMode(true);
    raw.pragma('writable_schema = ON');
    raw.prepare('UPDATE sqlite_schema SET rootpage = ? WHERE name = ?').run(b, 'sqlite_autoindex_sessions_1');
    raw.prepare('UPDATE sqlite_schema SET rootpage = ? WHERE name = ?').run(a, 'sqlite_autoindex_decoy_1');
    raw.pragma('writable_schema = OFF');
  } finally {
    raw.close();
  }
}

describe('row 10: "state.db is damaged" only when integrity_check fails', () => {
  it('an index that points at a missing row: SQLITE_CORRUPT, integrity_check fails, "is damaged" with the repair', () => {
    const home = tempDir();
    const file = path.join(home, 'state.db');
    const setup = openSessionDb({ home });
    setup.createSession({ id: 's1', source: 'cli', startedAt: 1700000000 });
    setup.close();
    damageIndex(file);
    const db = openSessionDb({ home });
    const err = thrown(() => db.commitRecovered([{ receiptId: 'r', fileName: 'f', rows: [{ sessionId: 'ghost', role: 'user', content: 'x', timestamp: 1700000001 }] }])) as SessionDbError;
    db.close();
    console.log(`row10 damaged: ${err.code}: ${err.message} — fix: ${err.hint}`);
    expect(err).toBeInstanceOf(SessionDbError);
    expect(err.code).toMatch(/^SQLITE_CORRUPT/);
    expect(err.message).toMatch(/; PRAGMA integrity_check fails \(.+\): state\.db is damaged$/);
    expect(err.hint).toBe(`${file} is damaged; nothing was changed. Keep the spool (pending_messages/) and restore or repair ${file} (e.g. \`sqlite3 ${file} .recover\`).`);
  });

  it('SQLITE_CORRUPT from a database whose integrity_check passes: said so, never "damaged"', () => {
    const home = tempDir();
    const file = path.join(home, 'state.db');
    const db = openSessionDb({ home });
    db.createSession({ id: 's1', source: 'cli', startedAt: 1700000000 });
    db.close();
    const raw = new Database(file, { readonly: true });
    const reported = Object.assign(new Error('database disk image is malformed'), { code: 'SQLITE_CORRUPT' });
    const err = databaseError(reported, file, `checkpoint of ${file} failed`, () => integrityCheck(() => raw.pragma('integrity_check(1)'))) as SessionDbError;
    raw.close();
    console.log(`row10 not damaged: ${err.code}: ${err.message} — fix: ${err.hint}`);
    expect(err.code).toBe('SQLITE_CORRUPT');
    expect(err.message).toBe(`checkpoint of ${file} failed: database disk image is malformed; PRAGMA integrity_check passes, so state.db is not damaged`);
    expect(err.hint).toBe(
      `SQLite reported SQLITE_CORRUPT for ${file} while its integrity_check passes: nothing was changed; retry, and if it persists check the disk (dmesg) and whether another program rewrote ${file}, its -wal or -shm. Keep the spool (pending_messages/).`,
    );
    expect(`${err.message} ${err.hint}`).not.toMatch(/is damaged/);
  });
});
