import { describe, expect, it } from 'vitest';
import { installShutdownHook, signalExitCode } from '../src/index.js';
import { memoryLogger } from './helpers.js';

describe('installShutdownHook', () => {
  it('exit codes are 128 + the signal number', () => {
    expect(signalExitCode('SIGTERM')).toBe(143);
    expect(signalExitCode('SIGINT')).toBe(130);
    expect(signalExitCode('SIGHUP')).toBe(129);
  });

  it('runs the flush once, summarises a flush report, and registers/unregisters its listeners', async () => {
    const before = process.listenerCount('SIGTERM');
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
    const outcome = await hook.trigger('SIGTERM');
    expect(await hook.trigger('SIGTERM')).toBe(outcome);
    expect(calls).toBe(1);
    expect(outcome).toMatchObject({ signal: 'SIGTERM', exitCode: 143, timedOut: false, result: { written: [1, 2], failed: [] } });
    expect(logger.lines.map((l) => [l.level, l.message])).toEqual([['info', 'shutdown flush on SIGTERM: 2 written, 0 failed']]);
    hook.uninstall();
    expect(process.listenerCount('SIGTERM')).toBe(before);
  });

  it('gives up after the budget and says so', async () => {
    const logger = memoryLogger();
    const hook = installShutdownHook({ flush: () => new Promise(() => undefined), budgetMs: 50, exit: false, logger, signals: [] });
    const outcome = await hook.trigger('SIGINT');
    expect(outcome).toMatchObject({ signal: 'SIGINT', exitCode: 130, timedOut: true });
    expect(outcome.elapsedMs).toBeGreaterThanOrEqual(45);
    expect(logger.lines[0]?.level).toBe('error');
    expect(logger.lines[0]?.message).toContain('did not finish within 50 ms');
  });

  it('reports a flush that throws, and a report with failures, as errors', async () => {
    const logger = memoryLogger();
    const thrown = await installShutdownHook({
      flush: () => {
        throw new Error('boom');
      },
      exit: false,
      logger,
      signals: [],
    }).trigger('SIGTERM');
    expect(thrown.error).toBeInstanceOf(Error);
    const failed = await installShutdownHook({ flush: () => ({ written: [], failed: [{}] }), exit: false, logger, signals: [] }).trigger('SIGTERM');
    expect(failed.timedOut).toBe(false);
    expect(logger.lines.map((l) => [l.level, l.message])).toEqual([
      ['error', 'shutdown flush threw: boom'],
      ['error', 'shutdown flush on SIGTERM: 0 written, 1 failed'],
    ]);
  });
});
