import * as path from 'node:path';
import { openSessionDb } from '@hermes/session-db';
import { spawnNode } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import { flushOverflowSync, recoverPending } from '../src/index.js';
import { fixture, memoryLogger, names, spoolDir, tempDir } from './helpers.js';

const SESSION = { id: 'sess-x', source: 'telegram', sessionKey: 'agent:main:telegram:dm:7', startedAt: 1700000000 };

/** Starts the recovery child, waits until it reports the commit, then SIGKILLs it. */
async function killAfterCommit(home: string): Promise<{ announced: string; signal: NodeJS.Signals | null }> {
  const child = spawnNode(fixture('recover.mjs'), [JSON.stringify({ session: SESSION, blockAfterCommit: true })], {
    umask: 0o022,
    env: { HERMES_HOME: home },
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const announced = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`no COMMITTED line; stdout=${stdout} stderr=${stderr}`));
    }, 30_000);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      const line = stdout.split('\n').find((l) => l.startsWith('COMMITTED'));
      if (line !== undefined) {
        clearTimeout(timer);
        resolve(line);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`child exited early (${String(code)}); stdout=${stdout} stderr=${stderr}`));
    });
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => {
    child.on('exit', (_code, signal) => {
      resolve(signal);
    });
  });
  child.kill('SIGKILL');
  return { announced, signal: await exited };
}

describe('exactly once: a crash between commit and unlink', () => {
  it('SIGKILL after the commit leaves the files; the next pass inserts nothing twice and removes them', async () => {
    const home = path.join(tempDir(), 'home');
    const flushed = flushOverflowSync(
      { [SESSION.sessionKey]: [{ text: 'one', session_id: 'sess-x' }, { text: 'two', session_id: 'sess-x' }, { text: 'three', session_id: 'sess-x' }] },
      { home },
    );
    expect(flushed.written).toHaveLength(3);

    const { announced, signal } = await killAfterCommit(home);
    expect(announced).toBe('COMMITTED 3');
    expect(signal).toBe('SIGKILL');

    // The kill landed between the commit and the unlink: files still there, rows already committed.
    expect(names(spoolDir(home))).toHaveLength(3);
    const db = openSessionDb({ home });
    expect(db.exportSession('sess-x')?.messages.map((m) => m.content)).toEqual(['one', 'two', 'three']);

    const report = recoverPending({ home, store: db, logger: memoryLogger() });
    expect(report.inserted).toEqual([]);
    expect(report.alreadyCommitted).toHaveLength(3);
    for (const a of report.alreadyCommitted) {
      expect(a.removed).toBe(true);
      expect(db.hasReceipt(a.receiptId)).toBe(true);
    }
    expect(report.kept).toEqual([]);
    expect(report.errors).toEqual([]);
    expect(names(spoolDir(home))).toEqual([]);
    expect(db.exportSession('sess-x')?.messages.map((m) => m.content)).toEqual(['one', 'two', 'three']);
    expect(db.getSession('sess-x')?.message_count).toBe(3);
    db.close();
  });
});
