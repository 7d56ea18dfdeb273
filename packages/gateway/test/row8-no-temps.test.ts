/**
 * A stop that reports every message on disk leaves no temp file (docs/stop-contract.md): 24 stops of 2,000
 * messages, each a real child process on tmpfs — 12 by SIGTERM with a 300 ms budget (the per-file writes cannot
 * finish, the rest is taken over while async writes are in flight) and 12 by process.exit(0) 20–80 ms into the
 * flush (the exit path overtakes the main thread's async writes). After every stop that reported complete: 0 temps,
 * and 2,000 distinct messages in files and batch members.
 */
import { describe, expect, it } from 'vitest';
import { pool, loopHome } from './stop-helpers.js';
import { countSpool, stopChild } from './row4-helpers.js';

const N = 2000;
const STOPS = 12;

describe('row 8: 0 temps after a complete stop', () => {
  it(`${String(2 * STOPS)} stops of 2,000 (signal with a 300 ms budget, process.exit during the flush): 0 temps after each complete one`, async () => {
    const runs = await pool(2 * STOPS, 2, async (i) => {
      const home = loopHome();
      const mode = i % 2 === 0 ? ('signal' as const) : ('exit-during' as const);
      const run = await stopChild(home, mode, N, mode === 'signal' ? 300 : 5000, 20 + ((i * 7) % 61));
      return { mode, run, disk: countSpool(home) };
    });
    const temps = runs.map((r) => r.disk.temps);
    const complete = runs.filter((r) => r.run.hook?.complete === true).length;
    console.log(
      `row 8: ${String(runs.length)} stops of ${String(N)}, ${String(complete)} reported complete; temps per stop: [${temps.join(', ')}] ` +
        `(signal: ${runs.filter((r) => r.mode === 'signal').map((r) => r.disk.temps).join(', ')}; exit: ${runs.filter((r) => r.mode === 'exit-during').map((r) => r.disk.temps).join(', ')}); ` +
        `batches: ${String(runs.reduce((s, r) => s + r.disk.batches, 0))}`,
    );
    expect(complete).toBe(runs.length);
    for (const { run, disk } of runs) {
      expect(run.last).toContain('pending flush: 2,000 of 2,000 written');
      expect(disk.unique).toBe(N);
      expect(disk.texts.size).toBe(N);
    }
    expect(temps).toEqual(runs.map(() => 0));
  });
});
