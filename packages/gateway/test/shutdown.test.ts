import { describe, expect, it } from 'vitest';
import { EXIT_FLUSH_INCOMPLETE, GatewayInputError, installShutdownHook, signalExitCode } from '../src/index.js';
import { memoryLogger } from './helpers.js';

describe('installShutdownHook', () => {
  it('exit codes are 128 + the signal number, and 74 for an incomplete flush', () => {
    expect(signalExitCode('SIGTERM')).toBe(143);
    expect(signalExitCode('SIGINT')).toBe(130);
    expect(signalExitCode('SIGHUP')).toBe(129);
    expect(EXIT_FLUSH_INCOMPLETE).toBe(74);
  });

  it('runs the flush once, summarises a flush report, and registers/unregisters its listeners', async () => {
    const before = process.listenerCount('SIGTERM');
    const beforeExit = process.listenerCount('exit');
    const logger = memoryLogger();
    let calls = 0;
    const hook = installShutdownHook({
      flush: () => {
        calls++;
        return Promise.resolve({ written: [1, 2], failed: [] });
      },
      exit: false,
      logger,
    });
    expect(process.listenerCount('SIGTERM')).toBe(before + 1);
    expect(process.listenerCount('exit')).toBe(beforeExit + 1);
    const outcome = await hook.trigger('SIGTERM');
    expect(await hook.trigger('SIGTERM')).toBe(outcome);
    expect(calls).toBe(1);
    expect(outcome).toMatchObject({
      signal: 'SIGTERM',
      exitCode: 143,
      timedOut: false,
      drained: null,
      complete: true,
      messages: 2,
      written: 2,
      failed: 0,
      result: { written: [1, 2], failed: [] },
    });
    // Messages spooled at stop were not delivered: a warning, even when every one of them is on disk.
    expect(logger.lines.map((l) => [l.level, l.message])).toEqual([['warn', 'pending flush: 2 of 2 written']]);
    hook.uninstall();
    expect(process.listenerCount('SIGTERM')).toBe(before);
    expect(process.listenerCount('exit')).toBe(beforeExit);
  });

  it('a flush that never settles and used no flush function of this package: the budget ends it, exit 74, said so', async () => {
    const logger = memoryLogger();
    const hook = installShutdownHook({ flush: () => new Promise(() => undefined), budgetMs: 50, exit: false, logger, signals: [] });
    const outcome = await hook.trigger('SIGINT');
    hook.uninstall();
    expect(outcome).toMatchObject({ signal: 'SIGINT', exitCode: 74, timedOut: true, complete: false, messages: null });
    expect(outcome.elapsedMs).toBeGreaterThanOrEqual(45);
    expect(logger.lines.map((l) => [l.level, l.message])).toEqual([
      [
        'error',
        "pending flush: did not settle within 50 ms, and it used none of this package's flush functions, so nothing could be written synchronously",
      ],
    ]);
  });

  it('reports a flush that throws, and a report with failures, as errors with exit 74', async () => {
    const logger = memoryLogger();
    const h1 = installShutdownHook({
      flush: () => {
        throw new Error('boom');
      },
      exit: false,
      logger,
      signals: [],
    });
    const thrown = await h1.trigger('SIGTERM');
    h1.uninstall();
    expect(thrown.error).toBeInstanceOf(Error);
    expect(thrown.exitCode).toBe(74);
    const h2 = installShutdownHook({ flush: () => ({ written: [], failed: [{}] }), exit: false, logger, signals: [] });
    const failed = await h2.trigger('SIGTERM');
    h2.uninstall();
    expect(failed).toMatchObject({ timedOut: false, exitCode: 74, complete: false });
    expect(logger.lines.map((l) => [l.level, l.message])).toEqual([
      ['error', 'pending flush: the flush threw: boom'],
      ['error', 'pending flush: 0 of 1 written, 1 failed'],
    ]);
  });

  it('refuses options it cannot use with a typed error', () => {
    const bad: [Record<string, unknown>, string][] = [
      [{ flush: 42 }, 'flush must be a function, got number 42'],
      [{ flush: () => 1, budgetMs: Number.NaN }, 'budgetMs must be a finite number of milliseconds >= 0, got NaN'],
      [{ flush: () => 1, budgetMs: -1 }, 'budgetMs must be a finite number of milliseconds >= 0, got number -1'],
      [{ flush: () => 1, syncBudgetMs: '5' }, 'syncBudgetMs must be a finite number of milliseconds >= 0, got string "5"'],
      [{ flush: () => 1, signals: 'SIGTERM' }, 'signals must be a list of signal names, got string "SIGTERM"'],
    ];
    for (const [options, message] of bad) {
      let caught: unknown;
      try {
        installShutdownHook(options as unknown as Parameters<typeof installShutdownHook>[0]);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(GatewayInputError);
      expect((caught as GatewayInputError).code).toBe('EINVALID_OPTION');
      expect((caught as GatewayInputError).message).toBe(message);
    }
  });
});
