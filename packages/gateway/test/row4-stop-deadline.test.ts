/**
 * Every stop path has a deadline, and the deadline keeps the messages (docs/stop-contract.md): 100,000 pending
 * messages, a 5 s budget, on the real disk, each stop a real child process — stopped by SIGTERM (the hook's signal
 * path) and by another SIGTERM listener's process.exit(0) registered before the hook (the exit path alone). Every
 * message is on disk afterwards (files + batch members, each once), and the stop ends within the budget plus a
 * fixed margin for what no clock inside the process bounds (its exit, a disk slower than the batch estimate).
 */
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from './helpers.js';
import { countSpool, stopChild } from './row4-helpers.js';

const N = 100_000;
const BUDGET_MS = 5000;
const MARGIN_MS = 1000;

describe('row 4: a stop with 100,000 pending messages ends within its 5 s budget and keeps them all', () => {
  it.each([
    ['signal', 143, 'one file per message did not fit the 5,000 ms budget: the rest ('],
    ['exit', 0, 'the process exited: the rest ('],
  ] as const)('%s: 100,000 of 100,000 on disk, within 5,000 ms + margin, 0 temps', async (mode, code, note) => {
    const home = path.join(tempDir(), 'home');
    const run = await stopChild(home, mode, N, BUDGET_MS);
    const disk = countSpool(home);
    console.log(
      `row 4 ${mode}: ${String(N)} pending, budget ${String(BUDGET_MS)} ms: stop took ${String(run.stopMs)} ms (hook ${String(run.hook?.elapsedMs)} ms), ` +
        `exit ${String(run.code)}; on disk ${String(disk.unique)} of ${String(N)} (${String(disk.files)} files, ${String(disk.members)} in ${String(disk.batches)} batch file(s)), ${String(disk.temps)} temps`,
    );
    expect([run.signal, run.code]).toEqual([null, code]);
    expect(run.last).toContain(`pending flush: 100,000 of 100,000 written; ${note}`);
    expect(disk.unique).toBe(N);
    expect(disk.texts.size).toBe(N);
    expect(disk.temps).toBe(0);
    expect(run.hook?.complete).toBe(true);
    expect(run.stopMs).toBeLessThanOrEqual(BUDGET_MS + MARGIN_MS);
  }, 360_000);
});
