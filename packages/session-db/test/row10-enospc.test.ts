/**
 * A full disk is named as what it is: SQLite reports it as SQLITE_FULL or, when the -shm cannot grow, as
 * SQLITE_IOERR_SHMSIZE; the error says ENOSPC (the filesystem's free space measured) and keeps SQLite's code.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describeNeeds } from '@hermes/test-utils';
import { expect, it } from 'vitest';
import { openSessionDb, SessionDbError } from '../src/index.js';
import { tempDir, thrown } from './helpers.js';

/** Fills the filesystem holding `dir` (a filler file grown until ENOSPC). */
function fill(dir: string): void {
  const fd = fs.openSync(path.join(dir, 'filler'), 'w');
  const chunk = Buffer.alloc(4096, 1);
  try {
    for (;;) fs.writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    fs.closeSync(fd);
  }
}

/** Runs `body` with a fresh home (0700) on a 512 KiB tmpfs mounted for it, unmounted afterwards. */
function onSmallTmpfs(body: (home: string) => void): void {
  const mnt = path.join(tempDir(), 'small');
  fs.mkdirSync(mnt);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=512k,mode=0755', 'tmpfs', mnt]);
  try {
    const home = path.join(mnt, 'home');
    fs.mkdirSync(home, { mode: 0o700 });
    body(home);
  } finally {
    execFileSync('umount', [mnt]);
  }
}

describeNeeds(['mount'], 'row 10: a full disk under state.db (a real 512 KiB tmpfs)', () => {
  it('a commit on a full disk fails with ENOSPC, SQLite code kept, free space measured; the hint claims nothing about earlier commits', () => {
    onSmallTmpfs((home) => {
      const db = openSessionDb({ home });
      db.createSession({ id: 's1', source: 'cli', startedAt: 1700000000 });
      db.commitRecovered([{ receiptId: 'r0', fileName: 'f0', rows: [{ sessionId: 's1', role: 'user', content: 'before', timestamp: 1700000001 }] }]);
      fill(home);
      const err = thrown(() =>
        db.commitRecovered(Array.from({ length: 50 }, (_, i) => ({ receiptId: `r${String(i + 1)}`, fileName: `f${String(i + 1)}`, rows: [{ sessionId: 's1', role: 'user', content: 'x'.repeat(4000), timestamp: 1700000002 + i }] }))),
      ) as SessionDbError;
      const file = path.join(home, 'state.db');
      console.log(`row10 ENOSPC: code ${err.code}, sqliteCode ${String(err.sqliteCode)}; ${err.message}`);
      expect(err).toBeInstanceOf(SessionDbError);
      expect(err.code).toBe('ENOSPC');
      expect(err.sqliteCode).toMatch(/^SQLITE_(FULL|IOERR)/);
      expect(err.message).toMatch(new RegExp(`^committing 50 recovered spool file\\(s\\) to ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} failed: the filesystem holding state\\.db is full \\(\\d+ bytes available\\); SQLite reported SQLITE_`));
      expect(err.hint).toBe(
        `the filesystem holding ${file} is full (or over quota): free space there (\`df ${home}\`) and retry. The statement that failed was rolled back; what was committed before it stays committed.`,
      );
      expect(err.toLine().startsWith(`ENOSPC at ${file} (uid `)).toBe(true);
      // What was committed before stays committed.
      fs.rmSync(path.join(home, 'filler'));
      expect(db.hasReceipt('r0')).toBe(true);
      expect(db.hasReceipt('r1')).toBe(false);
      db.close();
    });
  });

  it('opening state.db on a full disk (the -shm cannot grow: SQLITE_IOERR_SHMSIZE) is ENOSPC', () => {
    onSmallTmpfs((home) => {
      const first = openSessionDb({ home });
      first.createSession({ id: 's1', source: 'cli', startedAt: 1700000000 });
      first.close();
      fill(home);
      const err = thrown(() => openSessionDb({ home })) as SessionDbError;
      const file = path.join(home, 'state.db');
      console.log(`row10 ENOSPC at open: code ${err.code}, sqliteCode ${String(err.sqliteCode)}; ${err.message}`);
      expect([err.code, err.sqliteCode]).toEqual(['ENOSPC', 'SQLITE_IOERR_SHMSIZE']);
      expect(err.message).toBe(`cannot prepare ${file}: the filesystem holding state.db is full (0 bytes available); SQLite reported SQLITE_IOERR_SHMSIZE: disk I/O error`);
    });
  });
});
