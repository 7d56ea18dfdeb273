/**
 * The end of a recovery pass retries a checkpoint that another connection held off, and that wait is bounded:
 * never longer than `checkpointRetryMs` (250 ms by default), nor than the pass has taken so far. A store double
 * scripts the checkpoint's answers; the pass is made to take a known time by its afterCommit hook.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { recoverPending, type RecoveryCommitOutcome, type SessionStore } from '../src/index.js';
import { memoryLogger, names, spoolDir, tempDir, writeSpoolFile } from './helpers.js';

const SESSION_ID = 'sess-retry';
const HELD_OFF = { complete: false, busy: false, walFrames: 12, checkpointed: 4 };

function homeWith(files: number): string {
  const home = path.join(tempDir(), 'home');
  fs.mkdirSync(home);
  for (let i = 0; i < files; i++) {
    writeSpoolFile(home, `c${String(i)}.json`, JSON.stringify({ kind: 'pending', ts: 1700000001 + i, data: { text: `c${String(i)}`, session_id: SESSION_ID } }));
  }
  return home;
}

/** A store that inserts everything and answers its checkpoints with `answer(n)` (n counts from 1), timing each call. */
function store(answer: (n: number) => { complete: boolean; busy?: boolean; walFrames?: number; checkpointed?: number }): SessionStore & { calls: number[] } {
  const calls: number[] = [];
  let row = 0;
  return {
    path: '/srv/hermes/state.db',
    calls,
    hasReceipt: () => false,
    commitRecovered: (entries) => entries.map((e): RecoveryCommitOutcome => ({ receiptId: e.receiptId, status: 'inserted', rowIds: [++row] })),
    checkpoint: () => {
      calls.push(performance.now());
      return answer(calls.length);
    },
  };
}

const sleep = (ms: number): void => {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
};

describe('row 5: the bounded checkpoint retry at the end of a pass', () => {
  it('a reader that lets go during the retry: the files are removed in this pass, nothing kept', () => {
    const home = homeWith(3);
    const s = store((n) => (n < 4 ? HELD_OFF : { complete: true }));
    // The batch's own checkpoint (1) and the pass's first try (2) are held off; the retry's second attempt (4) completes.
    const report = recoverPending({ home, store: s, logger: memoryLogger(), hooks: { afterCommit: () => { sleep(200); } } });
    console.log(`row5 retry: ${String(s.calls.length)} checkpoint call(s); removed ${String(report.inserted.filter((e) => e.removed).length)} of 3; kept ${String(report.kept.length)}`);
    expect([s.calls.length, report.kept, report.inserted.map((e) => e.removed)]).toEqual([4, [], [true, true, true]]);
    expect(names(spoolDir(home))).toEqual([]);
  });

  it('a reader that never lets go: the retry ends within the time the pass took before it, and the files are kept (checkpoint-pending)', () => {
    const home = homeWith(2);
    const s = store(() => HELD_OFF);
    const logger = memoryLogger();
    const started = performance.now();
    const report = recoverPending({ home, store: s, logger, checkpointRetryMs: 60_000, hooks: { afterCommit: () => { sleep(200); } } });
    const total = performance.now() - started;
    const first = s.calls[1] ?? 0; // the pass's first try at its end
    const last = s.calls.at(-1) ?? 0;
    const before = first - started;
    const retried = last - first;
    console.log(
      `row5 retry bound: pass before its final checkpoint ${before.toFixed(0)} ms, retried for ${retried.toFixed(0)} ms (${String(s.calls.length - 2)} retries), ` +
        `whole pass ${total.toFixed(0)} ms; kept ${String(report.kept.length)}`,
    );
    expect(s.calls.length).toBeGreaterThan(3);
    expect(retried).toBeLessThanOrEqual(before + 30);
    expect(total).toBeLessThan(2 * before + 100);
    expect(report.kept.map((k) => [path.basename(k.path), k.reason, k.detail])).toEqual([
      ['c0.json', 'checkpoint-pending', "4 of 12 WAL frame(s) of /srv/hermes/state.db are in its main file: another connection's read snapshot held the checkpoint off"],
      ['c1.json', 'checkpoint-pending', "4 of 12 WAL frame(s) of /srv/hermes/state.db are in its main file: another connection's read snapshot held the checkpoint off"],
    ]);
    expect(logger.lines.map((l) => `${l.level} ${l.message}`)).toEqual([
      'warn pending-message recovery: kept 2 file(s) (checkpoint-pending): committed; the next pass removes them without inserting them again; ' +
        "the first, c0.json: 4 of 12 WAL frame(s) of /srv/hermes/state.db are in its main file: another connection's read snapshot held the checkpoint off",
      'warn pending-message recovery: 2 inserted, 0 already committed, 2 kept, 0 bad, 0 snapshot(s), 0 foreign, 0 error(s)',
    ]);
    expect(names(spoolDir(home))).toEqual(['c0.json', 'c1.json']);
  });

  it('checkpointRetryMs 0: no retry (the batch checkpoint and one try at the end); a value that is no duration is an error, and 250 ms is used', () => {
    const none = store(() => HELD_OFF);
    const r0 = recoverPending({ home: homeWith(1), store: none, logger: memoryLogger(), checkpointRetryMs: 0, hooks: { afterCommit: () => { sleep(50); } } });
    expect([none.calls.length, r0.kept.map((k) => k.reason)]).toEqual([2, ['checkpoint-pending']]);

    const bad = store(() => HELD_OFF);
    const home = homeWith(1);
    const r1 = recoverPending({ home, store: bad, logger: memoryLogger(), checkpointRetryMs: -1 });
    expect(r1.errors.map((e) => [e.path, e.code, e.message, e.hint])).toEqual([
      [spoolDir(home), 'EINVALID_OPTION', 'checkpointRetryMs must be a finite number >= 0, got number -1; used 250', 'pass milliseconds (0 turns the retry off), or omit it.'],
    ]);
  });
});
