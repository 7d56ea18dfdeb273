/**
 * The stop contract against ordinary accidents (docs/stop-contract.md, "Listener and signal orders"): each case a
 * real child holding 2,000 undelivered messages, on tmpfs. An application 'exit' listener that throws — registered
 * before the hook, or prepended after it and met during a stop — must not keep the hook's exit listener from running; SIGHUP and SIGQUIT
 * are stop signals like SIGTERM and SIGINT, alone, twice or mixed with the others during the flush.
 */
import { describe, expect, it } from 'vitest';
import { ALL, exactlyOnce, flushCounts, loopHome, N, onDisk, pool, recover, runChild } from './stop-helpers.js';

const CODES: Record<string, number> = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129, SIGQUIT: 131 };

describe('stop contract: listener and signal orders', () => {
  it.each([
    ['exit-throws', 'SIGUSR2'],
    ['exit-throws-prepended', 'SIGTERM'],
  ] as const)(
    "an application 'exit' listener that throws (%s) and process.exit(0) on %s: all 2,000 written, the hook's line is printed",
    async (mode, sig) => {
      const home = loopHome();
      const run = await runChild(home, mode, (child) => child.kill(sig));
      const disk = onDisk(home);
      console.log(`${mode}: exit ${String(run.code)}, ${String(disk.finals.size)} of ${String(N)} on disk; last line: ${run.last}`);
      expect(run.stderr).toContain('pending flush: 2,000 of 2,000 written');
      expect(disk.finals.size).toBe(N);
      exactlyOnce(recover(home).texts, ALL);
    },
  );

  // Every order of stop signals tried: one signal, the same twice, and mixed pairs 10–100 ms apart. Each next
  // signal is sent only once the child has echoed the previous one (it has reached the hook): signals pending at
  // the same moment are delivered in the kernel's order, not in the order they were sent.
  const orders: (readonly NodeJS.Signals[])[] = [
    ['SIGINT'],
    ['SIGTERM'],
    ['SIGHUP'],
    ['SIGQUIT'],
    ['SIGHUP', 'SIGHUP'],
    ['SIGQUIT', 'SIGQUIT'],
    ['SIGTERM', 'SIGHUP'],
    ['SIGINT', 'SIGQUIT'],
    ['SIGHUP', 'SIGTERM'],
    ['SIGQUIT', 'SIGINT', 'SIGHUP'],
  ];
  it(`${String(orders.length)} signal orders (SIGINT, SIGTERM, SIGHUP, SIGQUIT, twice, mixed): 2,000 of 2,000 each, exit 128 + the first signal`, async () => {
    const runs = await pool(orders.length, 4, async (i) => {
      const order = orders[i] ?? [];
      const home = loopHome();
      const run = await runChild(home, 'hook', (child) => {
        let next = 0;
        let seen = '';
        const send = (): void => {
          const sig = order[next];
          if (sig !== undefined) child.kill(sig);
        };
        child.stdout.on('data', (d: Buffer) => {
          seen += d.toString();
          const sig = order[next];
          if (sig === undefined || !seen.includes(`SIGNAL ${sig}\n`)) return;
          seen = seen.slice(seen.indexOf(`SIGNAL ${sig}\n`) + `SIGNAL ${sig}\n`.length);
          next++;
          setTimeout(send, 10 + Math.floor(Math.random() * 91));
        });
        send();
      });
      return { order, run, disk: onDisk(home), recovered: recover(home) };
    });
    for (const { order, run, disk, recovered } of runs) {
      const first = order[0] ?? 'SIGTERM';
      console.log(`${order.join(' → ')}: exit ${String(run.code)}, ${String(disk.finals.size)} of ${String(N)} on disk`);
      expect([order.join(','), run.signal, run.code]).toEqual([order.join(','), null, CODES[first]]);
      expect(flushCounts(run.last)).toEqual([N, N]);
      expect(disk.finals.size).toBe(N);
      exactlyOnce(recovered.texts, ALL);
    }
  });
});
