/**
 * Failures injected through @hermes/fs-policy's fault port (requests matched on `step` and `path` only):
 * one payload refused, the directory fsyncs a flush makes, a stalled disk that the budget hands to the
 * synchronous path.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type Req, setFaultHook } from '@hermes/fs-policy/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { flushOverflow, flushOverflowSync, flushPending, installShutdownHook } from '../src/index.js';
import { inSpool, memoryLogger, names, spoolDir, tempDir } from './helpers.js';

afterEach(() => {
  setFaultHook(undefined);
});

const KEY = 'agent:main:telegram:dm:9';

function messages(n: number): { text: string; session_id: string }[] {
  return Array.from({ length: n }, (_, i) => ({ text: `f-${String(i).padStart(2, '0')}`, session_id: 's' }));
}

function eacces(p: string): Error {
  return Object.assign(new Error(`EACCES: permission denied, open '${p}'`), { code: 'EACCES', errno: -13 });
}

describe('one payload write refused (EACCES through the fault port)', () => {
  it.each(['async', 'sync'] as const)('%s: that message is in failed, every other one in written', async (mode) => {
    const home = path.join(tempDir(), 'home');
    const dir = spoolDir(home);
    // Refuse the open of the 4th payload file the flush writes (its step and its path, nothing else).
    const seen: string[] = [];
    let refused: string | undefined;
    setFaultHook((req: Req) => {
      if (req.step !== 'open' || path.dirname(inSpool(req.path, dir)) !== dir) return undefined;
      const logical = inSpool(req.path, dir);
      if (!seen.includes(logical)) seen.push(logical);
      if (seen.indexOf(logical) === 3) {
        refused = logical;
        throw eacces(req.path);
      }
      return undefined;
    });
    const logger = memoryLogger();
    const input = { [KEY]: messages(10) };
    const report = mode === 'async' ? await flushOverflow(input, { home, logger, concurrency: 1 }) : flushOverflowSync(input, { home, logger });
    setFaultHook(undefined);
    expect(refused).toBeDefined();
    expect(report.failed).toHaveLength(1);
    expect(report.failed[0]).toMatchObject({ code: 'EACCES', step: 'open', target: refused, kind: 'overflow', sessionKey: KEY });
    expect(report.written).toHaveLength(9);
    expect(report.written.map((w) => w.path)).not.toContain(refused);
    expect(report.durable).toBe(true);
    // The refused message is the only one missing on disk.
    const onDisk = names(dir).map((n) => (JSON.parse(fs.readFileSync(path.join(dir, n), 'utf8')) as { data: { text: string } }).data.text);
    expect(onDisk.sort()).toEqual(messages(10).map((m) => m.text).filter((t) => t !== 'f-03'));
    expect(path.basename(refused ?? '')).not.toBe('');
    expect(logger.lines.filter((l) => l.level === 'error').map((l) => l.message)).toEqual([expect.stringMatching(/^1 pending message\(s\) NOT written: .*EACCES/)]);
  });
});

describe('a flush fsyncs each payload and then the directory, once', () => {
  it.each(['async', 'sync'] as const)('%s: 25 payloads → 25 file fsyncs, 1 directory fsync of pending_messages/', async (mode) => {
    const home = path.join(tempDir(), 'home');
    const dir = spoolDir(home);
    const fileFsyncs: string[] = [];
    const dirFsyncs: string[] = [];
    setFaultHook((req: Req) => {
      if (req.step === 'fsync' && path.dirname(inSpool(req.path, dir)) === dir) fileFsyncs.push(inSpool(req.path, dir));
      if (req.step === 'fsync-dir' && req.op === 'fsync') dirFsyncs.push(req.path);
      return undefined;
    });
    const input = { [KEY]: messages(25) };
    const report = mode === 'async' ? await flushOverflow(input, { home }) : flushOverflowSync(input, { home });
    setFaultHook(undefined);
    expect(report.written).toHaveLength(25);
    expect(new Set(fileFsyncs).size).toBe(25);
    expect(fileFsyncs).toHaveLength(25);
    expect(dirFsyncs).toEqual([dir]);
  });

  it('a failed directory fsync is reported (durable: false) and counted as a failure of the stop', async () => {
    const home = path.join(tempDir(), 'home');
    setFaultHook((req: Req) => {
      if (req.step === 'fsync-dir' && req.op === 'fsync') throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO', errno: -5 });
      return undefined;
    });
    const logger = memoryLogger();
    const hook = installShutdownHook({ flush: () => flushPending({ a: 'x', b: 'y' }, { home, logger }), exit: false, signals: [], logger });
    const outcome = await hook.trigger('SIGTERM');
    hook.uninstall();
    expect(outcome.reports[0]?.durable).toBe(false);
    expect(outcome).toMatchObject({ complete: false, exitCode: 74, written: 2, messages: 2, failed: 0 });
    expect(outcome.line).toBe(`pending flush: 2 of 2 written; the directory fsync failed (EIO at ${spoolDir(home)}): not durable`);
  });
});

describe('the budget: a stalled async flush is finished synchronously', () => {
  it('async fsyncs that never return: the rest is one batch file inside the 100 ms budget, all 60 on disk, no temp left, exit 143', async () => {
    const home = path.join(tempDir(), 'home');
    const dir = spoolDir(home);
    const t0 = Date.now();
    // Every fsync issued in the first 60 ms (all of them by the async writers) never completes.
    setFaultHook((req: Req) => (req.step === 'fsync' && path.dirname(inSpool(req.path, dir)) === dir && Date.now() - t0 < 60 ? { result: new Promise(() => undefined) } : undefined));
    const logger = memoryLogger();
    const hook = installShutdownHook({
      flush: () => flushOverflow({ [KEY]: messages(60) }, { home, logger }),
      budgetMs: 100,
      exit: false,
      signals: [],
      logger,
    });
    const outcome = await hook.trigger('SIGTERM');
    hook.uninstall();
    expect(outcome).toMatchObject({ timedOut: true, drained: 'budget', complete: true, exitCode: 143, written: 60, messages: 60 });
    const batch = outcome.reports[0]?.written[0]?.batch ?? '';
    expect(batch).toMatch(/^batch-[0-9a-f]{32}\.json$/);
    expect(outcome.reports[0]?.written.filter((w) => w.batch === batch)).toHaveLength(60);
    expect(outcome.line).toBe(`pending flush: 60 of 60 written; one file per message did not fit the 100 ms budget: the rest (60) was written as one batch file ${batch}`);
    // The stalled writers' temps are gone: the spool holds the batch file only.
    expect(names(dir)).toEqual([batch]);
    expect(logger.lines.at(-1)).toMatchObject({ level: 'warn', message: outcome.line });
  });
});
