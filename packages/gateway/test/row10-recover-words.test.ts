/**
 * The words of a recovery pass on a disk that fills up after its first committed batch (a real 512 KiB tmpfs):
 * the cause is ENOSPC (not SQLite's SQLITE_FULL / SQLITE_IOERR_* alone), and the line says what was committed
 * before the failure instead of a fix that claims nothing was written.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openSessionDb } from '@hermes/session-db';
import { describeNeeds } from '@hermes/test-utils';
import { expect, it } from 'vitest';
import { recoverPending } from '../src/index.js';
import { memoryLogger, spoolDir, tempDir, writeSpoolFile } from './helpers.js';

const SESSION = { id: 'sess-full', source: 'telegram', sessionKey: 'agent:main:telegram:dm:f', startedAt: 1700000000 };

function fill(dir: string): void {
  const fd = fs.openSync(path.join(dir, 'filler'), 'w');
  try {
    for (;;) fs.writeSync(fd, Buffer.alloc(4096, 1));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    fs.closeSync(fd);
  }
}

describeNeeds(['mount'], 'row 10: recovery words on a disk that fills up', () => {
  it('30 files in batches of 10, the disk full after the first commit: "10 file(s) committed, then the store failed; kept 20 file(s): ENOSPC at …/state.db"', () => {
    const mnt = path.join(tempDir(), 'small');
    fs.mkdirSync(mnt);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=512k,mode=0755', 'tmpfs', mnt]);
    try {
      const home = path.join(mnt, 'home');
      fs.mkdirSync(home, { mode: 0o700 });
      for (let i = 0; i < 30; i++) {
        const payload = { kind: 'pending', ts: 1700000001 + i, data: { text: `${String(i)} ${'x'.repeat(3000)}`, session_id: SESSION.id } };
        writeSpoolFile(home, `pending-${i.toString(16).padStart(32, '0')}.json`, JSON.stringify(payload));
      }
      const db = openSessionDb({ home });
      db.createSession(SESSION);
      const logger = memoryLogger();
      let commits = 0;
      const report = recoverPending({ home, store: db, logger, batchSize: 10, salvage: false, hooks: { afterCommit: () => { if (++commits === 1) fill(home); } } });
      const file = path.join(home, 'state.db');
      const errors = logger.lines.filter((l) => l.level === 'error').map((l) => l.message);
      const kept = new Map<string, number>();
      for (const k of report.kept) kept.set(k.reason, (kept.get(k.reason) ?? 0) + 1);
      console.log(`row10 full disk: inserted ${String(report.inserted.length)}, kept ${JSON.stringify(Object.fromEntries(kept))}; ${errors[0] ?? '(no error line)'}`);
      fs.rmSync(path.join(home, 'filler'));
      db.close();

      expect(report.inserted.length).toBe(10);
      expect(Object.fromEntries(kept)).toEqual({ 'checkpoint-pending': 10, 'store-error': 20 });
      expect(report.errors.map((e) => e.code)).toEqual(['ENOSPC']);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toBe(
        `pending-message recovery: 10 file(s) committed, then the store failed; kept 20 file(s): ENOSPC at ${file} (uid ${String(process.geteuid?.() ?? -1)}): ` +
          `checkpoint of ${file} failed: the filesystem holding state.db is full (0 bytes available); SQLite reported ${report.errors[0]?.message.split('SQLite reported ')[1] ?? '?'} — fix: ` +
          `the filesystem holding ${file} is full (or over quota): free space there (\`df ${home}\`) and retry. The statement that failed was rolled back; what was committed before it stays committed.`,
      );
      expect(errors[0]).not.toMatch(/[Nn]othing .*was written/);
      expect(fs.readdirSync(spoolDir(home))).toHaveLength(30);
    } finally {
      execFileSync('umount', [mnt]);
    }
  });
});
