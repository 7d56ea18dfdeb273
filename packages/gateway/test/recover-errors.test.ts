/**
 * One clear line per cause: a database that refuses writes, a spool whose files cannot be removed, a disk that
 * fills up during the flush. Real uids, a real read-only database, a real full tmpfs.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openSessionDb } from '@hermes/session-db';
import { describeNeeds, lastJson, runNode } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import { flushOverflow, installShutdownHook, recoverPending, type RecoveryReport } from '../src/index.js';
import { fixture, memoryLogger, names, spoolDir, tempDir } from './helpers.js';
import { loopHome } from './stop-helpers.js';

const NOBODY = 65534;
const SESSION = { id: 'sess-e', source: 'telegram', sessionKey: 'agent:main:telegram:dm:e', startedAt: 1700000000 };

/** `n` spool payloads for SESSION, owned by `uid` (0600). */
function seed(home: string, n: number, uid?: number): void {
  const dir = spoolDir(home);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (let i = 0; i < n; i++) {
    const file = path.join(dir, `pending-${i.toString(16).padStart(32, '0')}.json`);
    const payload = { schema_version: 1, kind: 'overflow', session_key: SESSION.sessionKey, ts: 1700000001 + i * 0.001, seq: i, data: { text: `e-${String(i)}`, session_id: SESSION.id } };
    fs.writeFileSync(file, JSON.stringify(payload), { mode: 0o600 });
    if (uid !== undefined) fs.chownSync(file, uid, uid);
  }
}

/** The non-empty lines a child wrote to stderr. */
function lines(stderr: string): string[] {
  return stderr.split('\n').filter((l) => l !== '');
}

describe('a store that refuses writes during recovery', () => {
  it('a read-only handle: one line, cause first, counting the 1,000 kept files; state.db named, not the spool', () => {
    const home = path.join(tempDir(), 'home');
    fs.mkdirSync(home);
    seed(home, 1000);
    const rw = openSessionDb({ home });
    rw.createSession(SESSION);
    rw.close();
    const db = openSessionDb({ home, readonly: true });
    const logger = memoryLogger();
    const report = recoverPending({ home, store: db, logger });
    db.close();
    const file = path.join(home, 'state.db');
    expect(report.kept).toHaveLength(1000);
    expect(new Set(report.kept.map((k) => k.reason))).toEqual(new Set(['store-error']));
    expect(report.errors.map((e) => [e.code, e.path])).toEqual([['EREADONLY', file]]);
    expect(logger.lines.map((l) => [l.level, l.message])).toEqual([
      [
        'error',
        `pending-message recovery: kept 1,000 file(s): EREADONLY at ${file} (uid ${String(process.geteuid?.() ?? -1)}): ${file} was opened read-only — fix: open ${file} without \`readonly: true\` to write to it.`,
      ],
      ['warn', 'pending-message recovery: 0 inserted, 0 already committed, 1,000 kept, 0 bad, 0 snapshot(s), 0 foreign, 1 error(s)'],
    ]);
    expect(names(spoolDir(home))).toHaveLength(1000);
  });
});

describeNeeds(['root'], 'recovery as another uid: real permission failures', () => {
  it('SQLITE_READONLY (state.db 0644 of root, recovery as uid 65534): one line naming state.db, the uid and the fix', () => {
    // 5,000 files: on tmpfs when there is one (creating them on a busy virtual disk takes seconds).
    const home = loopHome();
    fs.mkdirSync(home, { mode: 0o777 });
    fs.chmodSync(home, 0o777);
    const db = openSessionDb({ home });
    db.createSession(SESSION);
    db.close();
    const file = path.join(home, 'state.db');
    fs.chmodSync(file, 0o644);
    seed(home, 5000, NOBODY);
    fs.chownSync(spoolDir(home), NOBODY, NOBODY);
    const r = runNode(fixture('recover.mjs'), [JSON.stringify({ brief: true })], { env: { HERMES_HOME: home }, uid: NOBODY, gid: NOBODY, timeoutMs: 120_000 });
    const { report } = lastJson<{ report: { kept: Record<string, number>; inserted: number; errors: RecoveryReport['errors'] } }>(r);
    expect(report.kept).toEqual({ 'store-error': 5000 });
    expect(report.inserted).toBe(0);
    expect(report.errors.map((e) => [e.code, e.path])).toEqual([['SQLITE_READONLY', file]]);
    const out = lines(r.stderr);
    expect(out).toHaveLength(2);
    expect(out[0]).toMatch(
      new RegExp(`^hermes fs-policy error: pending-message recovery: kept 5,000 file\\(s\\): SQLITE_READONLY at ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(uid 65534\\): .*attempt to write a readonly database.* — fix: `),
    );
    expect(out[0]).toContain(`${file} (or its -wal/-shm, or the directory holding them) is not writable by uid 65534`);
    expect(out[0]).not.toContain('pending_messages');
    expect(out[1]).toMatch(/^hermes fs-policy warning: pending-message recovery: 0 inserted, .*5,000 kept/);
  });

  it('a refused unlink is counted as kept (not-removed), one line per cause; the next pass removes the files without inserting them again', () => {
    const home = path.join(tempDir(), 'home');
    fs.mkdirSync(home, { mode: 0o777 });
    fs.chmodSync(home, 0o777);
    const db = openSessionDb({ home });
    db.createSession(SESSION);
    db.close();
    for (const f of ['state.db']) fs.chownSync(path.join(home, f), NOBODY, NOBODY);
    seed(home, 3, NOBODY);
    fs.chmodSync(spoolDir(home), 0o755); // root's directory: uid 65534 may read the files, not remove them
    const r = runNode(fixture('recover.mjs'), ['{}'], { env: { HERMES_HOME: home }, uid: NOBODY, gid: NOBODY });
    const { report } = lastJson<{ report: RecoveryReport }>(r);
    expect(report.inserted.map((i) => i.removed)).toEqual([false, false, false]);
    expect(report.kept.map((k) => k.reason)).toEqual(['not-removed', 'not-removed', 'not-removed']);
    expect(report.errors.map((e) => e.code)).toEqual(['EACCES', 'EACCES', 'EACCES']);
    const out = lines(r.stderr);
    expect(out).toHaveLength(2);
    expect(out[0]).toContain(`pending-message recovery: could not remove 3 recovered file(s) (not-removed): EACCES at ${spoolDir(home)} (uid 65534) — fix: `);
    expect(out[0]).toContain('the next pass removes them without inserting them again');
    expect(out[1]).toContain('pending-message recovery: 3 inserted, 0 already committed, 3 kept');

    // Root trusts a database only when it belongs to root or the home's owner (root here): hand it back first.
    for (const f of ['state.db', 'state.db-wal', 'state.db-shm']) {
      if (fs.existsSync(path.join(home, f))) fs.chownSync(path.join(home, f), 0, 0);
    }
    const again = openSessionDb({ home });
    const second = recoverPending({ home, store: again, logger: memoryLogger() });
    expect(second.inserted).toEqual([]);
    expect(second.alreadyCommitted.map((a) => a.removed)).toEqual([true, true, true]);
    expect(again.exportSession(SESSION.id)?.messages.map((m) => m.content)).toEqual(['e-0', 'e-1', 'e-2']);
    again.close();
    expect(names(spoolDir(home))).toEqual([]);
  });
});

describeNeeds(['mount'], 'a disk that fills up during the flush (a real 512 KiB tmpfs)', () => {
  it('one aggregated line per errno with the count, the per-message report, and a summary line that counts what is on disk', async () => {
    const root = tempDir();
    const mnt = path.join(root, 'small');
    fs.mkdirSync(mnt);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=512k,mode=0755', 'tmpfs', mnt]);
    try {
      const home = path.join(mnt, 'home');
      fs.mkdirSync(home, { mode: 0o700 });
      const logger = memoryLogger();
      const events = Array.from({ length: 2000 }, (_, i) => ({ text: `full-${String(i)} ${'x'.repeat(200)}`, session_id: 's' }));
      const hook = installShutdownHook({ flush: () => flushOverflow({ k: events }, { home, logger }), exit: false, signals: [], logger });
      const outcome = await hook.trigger('SIGTERM');
      hook.uninstall();
      const report = outcome.reports[0];
      const written = report?.written.length ?? 0;
      const failed = report?.failed.length ?? 0;
      expect(written).toBeGreaterThan(0);
      expect(failed).toBeGreaterThan(0);
      expect(written + failed).toBe(2000);
      expect(new Set(report?.failed.map((f) => f.code))).toEqual(new Set(['ENOSPC']));
      // On disk: exactly the written payloads, no temp file left behind.
      expect(names(spoolDir(home)).sort()).toEqual((report?.written.map((w) => path.basename(w.path)) ?? []).sort());
      const errors = logger.lines.filter((l) => l.level === 'error').map((l) => l.message);
      expect(errors).toHaveLength(2);
      expect(errors[0]).toMatch(new RegExp(`^${failed.toLocaleString('en-US')} pending message\\(s\\) NOT written: ENOSPC at ${spoolDir(home).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\. First: `));
      expect(errors[1]).toBe(`pending flush: ${written.toLocaleString('en-US')} of 2,000 written, ${failed.toLocaleString('en-US')} failed (ENOSPC at ${spoolDir(home)})`);
      expect(outcome).toMatchObject({ exitCode: 74, complete: false, written, failed, messages: 2000 });
    } finally {
      execFileSync('umount', [mnt]);
    }
  });
});
