/**
 * The stop contract (docs/stop-contract.md), each case a real child process holding 2,000 undelivered
 * messages: a second SIGTERM 10–100 ms after the first, and another listener's process.exit() registered
 * before and after the hook.
 */
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from './helpers.js';
import { ALL, exactlyOnce, flushCounts, loopHome, N, onDisk, pool, recover, runChild } from './stop-helpers.js';

describe('stop contract: signals and process.exit()', () => {
  it('double SIGTERM 10–100 ms apart (20 runs): never aborted, exit 143, the last stderr line counts what is on disk', async () => {
    const runs = await pool(20, 4, async () => {
      const home = loopHome();
      const gap = 10 + Math.floor(Math.random() * 91);
      const run = await runChild(home, 'hook', (child) => {
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGTERM'), gap);
      });
      const disk = onDisk(home);
      const recovered = recover(home);
      return { gap, run, disk, recovered };
    });
    let withSecond = 0;
    for (const { run, disk, recovered } of runs) {
      expect(run.signal).toBeNull();
      expect(run.code).toBe(143);
      expect(run.last).toMatch(/pending flush: 2,000 of 2,000 written(; a second signal \(SIGTERM\) during the flush did not abort it)? signal="SIGTERM" exitCode=143$/);
      if (run.last.includes('a second signal')) withSecond++;
      const [written] = flushCounts(run.last);
      expect(disk.finals.size).toBe(written);
      exactlyOnce(recovered.texts, ALL);
    }
    // The second signal did land during the flush (a flush of 2,000 durable files takes far longer than 100 ms).
    expect(withSecond).toBeGreaterThan(0);
  });

  // One of the two on the real disk (the exit path's writes are seconds of fsyncs there), one on tmpfs.
  it.each([
    ['exit-before', 'the process exited: flushed before the exit completed', 'tmpfs'],
    ['exit-after', 'the process exited during the flush: the rest was written before the exit completed', 'disk'],
  ])('another SIGTERM listener calls process.exit(0) (%s the hook): all 2,000 written, the line says so', async (mode, note, where) => {
    const home = where === 'disk' ? path.join(tempDir(), 'home') : loopHome();
    const run = await runChild(home, mode, (child) => child.kill('SIGTERM'));
    expect(run.signal).toBeNull();
    // Every message is on disk, so the status is the one the other listener chose.
    expect(run.code).toBe(0);
    expect(run.last).toContain(`pending flush: 2,000 of 2,000 written; ${note}`);
    expect(onDisk(home).finals.size).toBe(N);
    exactlyOnce(recover(home).texts, ALL);
  });

});
