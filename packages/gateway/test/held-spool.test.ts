/**
 * The flush's held spool (spool-target.ts, job-spool.ts), deterministically: a spool removed under the flush
 * is created again and the payload written there (never reported ENOENT while the spool can be re-created);
 * a spool renamed inside the home during the flush is reported, and its payloads counted where they are.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type Req, setFaultHook } from '@hermes/fs-policy/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { flushPending, flushPendingSync } from '../src/index.js';
import { memoryLogger, names, spoolDir, tempDir } from './helpers.js';

afterEach(() => {
  setFaultHook(undefined);
});

describe('a spool removed during the flush', () => {
  it.each(['sync', 'async'] as const)('%s: the write that met ENOENT is made again in the re-created spool; both payloads written, durable', async (mode) => {
    const home = path.join(tempDir(), 'home');
    const dir = spoolDir(home);
    fs.mkdirSync(dir, { recursive: true });
    let removed = 0;
    setFaultHook((req: Req) => {
      // Before the first payload's temp file is created: the (empty) spool is removed, as a member could.
      if (removed === 0 && req.step === 'open' && req.op === 'open' && /\/pending-[0-9a-f]{32}\.json$/.test(req.path)) {
        removed++;
        fs.rmdirSync(dir);
      }
      return undefined;
    });
    const logger = memoryLogger();
    const input = { a: 'one', b: 'two' };
    const report = mode === 'sync' ? flushPendingSync(input, { home, logger }) : await flushPending(input, { home, logger, concurrency: 1 });
    setFaultHook(undefined);
    expect(removed).toBe(1);
    expect([report.failed, report.written.length, report.durable]).toEqual([[], 2, true]);
    expect(names(dir)).toHaveLength(2);
    expect(logger.lines.filter((l) => l.level === 'warn').map((l) => l.message)).toEqual([
      `pending flush: ${dir} was removed during the flush; it was created again and the payload written there`,
    ]);
  });
});

describe('a spool renamed inside the home during the flush', () => {
  it('the payloads are where the descriptor went, fsynced; the report says where (ESPOOL_MOVED), not lost', () => {
    const home = path.join(tempDir(), 'home');
    const dir = spoolDir(home);
    fs.mkdirSync(dir, { recursive: true });
    const aside = path.join(home, 'moved-aside');
    let moved = false;
    setFaultHook((req: Req) => {
      // While the held spool is fsynced: renamed inside the home (as a member of the group could).
      if (!moved && req.step === 'fsync-dir' && req.op === 'fsync') {
        moved = true;
        fs.renameSync(dir, aside);
      }
      return undefined;
    });
    const report = flushPendingSync({ a: 'one' }, { home, logger: memoryLogger() });
    setFaultHook(undefined);
    expect([report.failed, report.written.length, report.durable]).toEqual([[], 1, true]);
    expect(report.warnings.map((w) => [w.code, w.message])).toEqual([
      ['ESPOOL_MOVED', `${dir} was renamed to ${aside} during the flush; its 1 payload(s) are there (fsynced), not under ${dir}`],
    ]);
    expect(names(aside)).toHaveLength(1);
  });
});
