/**
 * The batch file of a stop's rest, with failures injected through @hermes/fs-policy's fault port: its members
 * count as written only once the batch's rename and the directory fsync succeeded; a failed batch write reports
 * every member failed with the real errno, and the summary says so ("the rest: 60 failed (ENOSPC …)", never
 * "the rest was written").
 */
import * as path from 'node:path';
import { type Req, setFaultHook } from '@hermes/fs-policy/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { flushOverflow, installShutdownHook } from '../src/index.js';
import { inSpool, memoryLogger, names, spoolDir, tempDir } from './helpers.js';

afterEach(() => {
  setFaultHook(undefined);
});

const KEY = 'agent:main:telegram:dm:b';

function messages(n: number): { text: string; session_id: string }[] {
  return Array.from({ length: n }, (_, i) => ({ text: `b-${String(i).padStart(2, '0')}`, session_id: 's' }));
}

function errno(code: string, n: number): Error {
  return Object.assign(new Error(`${code}: injected`), { code, errno: n });
}

/** A stop of 60 messages whose async fsyncs hang (so the rest goes into a batch), plus `fault` on the batch. */
async function stop(home: string, fault: (req: Req, batch: boolean) => void) {
  const dir = spoolDir(home);
  const t0 = Date.now();
  setFaultHook((req: Req) => {
    const name = path.basename(inSpool(req.path, dir));
    fault(req, name.includes('batch-'));
    return req.step === 'fsync' && !name.includes('batch-') && Date.now() - t0 < 60 ? { result: new Promise(() => undefined) } : undefined;
  });
  const logger = memoryLogger();
  const hook = installShutdownHook({ flush: () => flushOverflow({ [KEY]: messages(60) }, { home, logger }), budgetMs: 100, exit: false, signals: [], logger });
  const outcome = await hook.trigger('SIGTERM');
  hook.uninstall();
  return { outcome, logger, dir };
}

describe('row 4: the batch file of a stop', () => {
  it('ENOSPC writing the batch: all 60 reported failed with ENOSPC, no batch left, the line says "the rest: 60 failed", exit 74', async () => {
    const home = path.join(tempDir(), 'home');
    const { outcome, dir } = await stop(home, (req, batch) => {
      if (batch && req.step === 'open') throw errno('ENOSPC', -28);
    });
    const failed = outcome.reports[0]?.failed ?? [];
    console.log(`row 4 batch ENOSPC: ${String(outcome.written)} written, ${String(failed.length)} failed (${[...new Set(failed.map((f) => f.code))].join(',')}); ${outcome.line}`);
    expect(outcome).toMatchObject({ complete: false, exitCode: 74, written: 0, failed: 60, messages: 60, drained: 'budget' });
    expect(new Set(failed.map((f) => f.code))).toEqual(new Set(['ENOSPC']));
    expect(outcome.line).toMatch(/^pending flush: 0 of 60 written, 60 failed \(ENOSPC at [^)]+\); one file per message did not fit the 100 ms budget: the rest: 60 failed \(ENOSPC at [^)]+\)$/);
    expect(outcome.line).not.toContain('was written');
    expect(names(dir).filter((n) => n.endsWith('.json'))).toEqual([]);
  });

  it('EIO on the directory fsync after the batch: all 60 reported failed with EIO, the batch removed again, exit 74', async () => {
    const home = path.join(tempDir(), 'home');
    let batchWritten = false;
    const { outcome, dir } = await stop(home, (req, batch) => {
      if (batch && req.step === 'open') batchWritten = true;
      if (batchWritten && req.step === 'fsync-dir' && req.op === 'fsync') throw errno('EIO', -5);
    });
    const failed = outcome.reports[0]?.failed ?? [];
    console.log(`row 4 batch EIO: ${String(outcome.written)} written, ${String(failed.length)} failed; first: ${failed[0]?.message ?? ''}`);
    expect(outcome).toMatchObject({ complete: false, exitCode: 74, written: 0, failed: 60, messages: 60 });
    expect(new Set(failed.map((f) => f.code))).toEqual(new Set(['EIO']));
    expect(failed[0]?.message).toMatch(/^batch file .*\/batch-[0-9a-f]{32}\.json was written, but the directory fsync failed .*; it was removed again, so its 60 payload\(s\) are not on disk \[EIO at fsync-dir: [^\]]+\]$/);
    expect(names(dir).filter((n) => n.endsWith('.json'))).toEqual([]);
  });

  it('a batch that is durable: every member is reported written with `batch`, the spool holds the batch file only', async () => {
    const home = path.join(tempDir(), 'home');
    const { outcome, dir } = await stop(home, () => undefined);
    const written = outcome.reports[0]?.written ?? [];
    const batch = written[0]?.batch ?? '';
    console.log(`row 4 batch ok: ${String(written.length)} written, ${String(written.filter((w) => w.batch === batch).length)} in ${batch}`);
    expect(outcome).toMatchObject({ complete: true, exitCode: 143, written: 60 });
    expect(written.map((w) => w.batch)).toEqual(Array.from({ length: 60 }, () => batch));
    expect(names(dir)).toEqual([batch]);
  });
});
