/**
 * checkpoint() never waits on another process's read snapshot: it answers at once (incomplete, nothing of the
 * new commits copied), under the default 10 s busy timeout, and completes once the reader let go.
 */
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/index.js';
import { tempDir } from './helpers.js';

const READER = fileURLToPath(new URL('./fixtures/row5-reader.mjs', import.meta.url));

describe('row 5: checkpoint() with a second process holding a read snapshot', () => {
  it('returns within 1 s (default busy timeout) with the new frames not copied; complete once the reader is gone', async () => {
    const home = tempDir();
    const db = openSessionDb({ home });
    db.createSession({ id: 's1', source: 'cli', startedAt: 1700000000 });
    expect(db.checkpoint()).toMatchObject({ complete: true, busy: false });

    const child = spawn(process.execPath, [READER, path.join(home, 'state.db')], { stdio: ['pipe', 'pipe', 'inherit'] });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    await new Promise<void>((resolve, reject) => {
      child.stdout.once('data', () => {
        resolve();
      });
      void exited.then((code) => {
        reject(new Error(`the reader exited early (${String(code)})`));
      });
    });
    let held: ReturnType<typeof db.checkpoint>;
    let heldMs: number;
    try {
      for (let i = 0; i < 100; i++) db.commitRecovered([{ receiptId: `r${String(i)}`, fileName: `f${String(i)}`, rows: [{ sessionId: 's1', role: 'user', content: `m${String(i)}`, timestamp: 1700000001 + i }] }]);
      const started = performance.now();
      held = db.checkpoint();
      heldMs = Math.round(performance.now() - started);
    } finally {
      child.stdin.end();
    }
    expect(await exited).toBe(0);
    const after = db.checkpoint();
    db.close();
    console.log(
      `row5 checkpoint: with a reader ${String(heldMs)} ms → ${JSON.stringify(held)}; after it let go → ${JSON.stringify(after)}`,
    );
    expect(heldMs).toBeLessThan(1000);
    expect(held.complete).toBe(false);
    expect(held.busy).toBe(false);
    expect(held.walFrames).toBeGreaterThanOrEqual(100);
    expect(held.checkpointed).toBeLessThan(held.walFrames);
    expect(after).toEqual({ complete: true, busy: false, walFrames: held.walFrames, checkpointed: held.walFrames });
  }, 60_000);
});
