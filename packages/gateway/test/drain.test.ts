/**
 * A flush in flight taken over by a stop event, in this process: what drainAll writes, what a passed deadline
 * refuses, and the report every caller then shares. (The same with real signals, `process.exit()` and the drain
 * worker is in stop-contract.test.ts, in child processes.)
 */
import * as path from 'node:path';
import { type Req, setFaultHook } from '@hermes/fs-policy/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type FlushReport, flushPending, flushPendingSync } from '../src/index.js';
import { activeJobs, drainAll, drainJob, type FailedEntry, failureGroups } from '../src/jobs.js';
import { memoryLogger, names, spoolDir, tempDir } from './helpers.js';

afterEach(() => {
  setFaultHook(undefined);
});

const messages = (n: number): Record<string, string> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${String(i).padStart(3, '0')}`, `m${String(i)}`]));

describe('drainAll: a stop event takes over a flush in flight', () => {
  it('every message is written synchronously; the flush resolves to the same, final report', async () => {
    const home = path.join(tempDir(), 'home');
    const logger = memoryLogger();
    const pending = flushPending(messages(40), { home, logger, concurrency: 4 });
    const dirFsyncs: string[] = [];
    setFaultHook((req: Req) => {
      if (req.step === 'fsync-dir' && req.op === 'fsync') dirFsyncs.push(req.path);
      return undefined;
    });
    const jobs = drainAll('shutdown');
    expect(jobs).toHaveLength(1);
    const report = jobs[0]?.report;
    expect(activeJobs()).toEqual([]);
    expect(await pending).toBe(report);
    // The drain fsynced the directory once; the async side, finding the job drained, does nothing more.
    expect(dirFsyncs).toEqual([spoolDir(home)]);
    setFaultHook(undefined);
    expect([report?.drained, report?.durable, report?.written.length, report?.failed, report?.skipped]).toEqual(['shutdown', true, 40, [], []]);
    expect(new Set(report?.written.map((w) => w.sessionKey))).toEqual(new Set(Object.keys(messages(40))));
    expect(names(spoolDir(home)).filter((n) => n.endsWith('.json'))).toHaveLength(40);
    expect(names(spoolDir(home)).filter((n) => !n.endsWith('.json'))).toEqual([]);
    expect(logger.lines.map((l) => [l.level, l.message, l.fields])).toEqual([['info', 'flushed 40 pending message(s)', { path: spoolDir(home), durable: true }]]);
    // Draining a finalized job changes nothing.
    if (jobs[0] !== undefined) expect(drainJob(jobs[0], 'exit')).toBe(report);
    expect(report?.drained).toBe('shutdown');
  });

  it('a deadline already passed before any write: all 40 fail with ETIMEDOUT, one log line for them, nothing on disk', async () => {
    const home = path.join(tempDir(), 'home');
    const logger = memoryLogger();
    const pending = flushPending(messages(40), { home, logger, concurrency: 4 });
    const [job] = drainAll('budget', Date.now() - 1);
    const report = job?.report;
    expect(await pending).toBe(report);
    expect([report?.drained, report?.written.length, report?.failed.length]).toEqual(['budget', 0, 40]);
    expect(new Set(report?.failed.map((f) => [f.code, f.step, f.message.split(' [')[0], f.hint].join(' | ')))).toEqual(
      new Set(["ETIMEDOUT | write | not written: the shutdown budget ran out before this payload's turn | give the shutdown hook a larger budget (budgetMs), or find why the disk is this slow."]),
    );
    expect(logger.lines.map((l) => [l.level, l.message.split('. First: ')[0], l.fields?.count])).toEqual([
      ['error', `40 pending message(s) NOT written: ETIMEDOUT at ${spoolDir(home)}`, 40],
    ]);
    await new Promise((r) => setTimeout(r, 100)); // the flush's own writes, had it started any, would have landed
    expect(names(spoolDir(home))).toEqual([]);
  });

  it('a deadline passed while four writes are under way: those four are written and reported written, the other 36 fail', async () => {
    const home = path.join(tempDir(), 'home');
    let report: FlushReport | undefined;
    // The moment the flush's first payload write reaches the disk, its four workers each hold a payload under way.
    setFaultHook((req: Req) => {
      if (report === undefined && req.op === 'write') {
        setFaultHook(undefined);
        report = drainAll('budget', Date.now() - 1)[0]?.report;
      }
      return undefined;
    });
    const result = await flushPending(messages(40), { home, logger: memoryLogger(), concurrency: 4 });
    expect(result).toBe(report);
    expect(result.written.map((w) => w.sessionKey)).toEqual(['k000', 'k001', 'k002', 'k003']);
    expect(new Set(result.failed.map((f) => f.code))).toEqual(new Set(['ETIMEDOUT']));
    expect(result.failed.map((f) => f.sessionKey)).toEqual(Object.keys(messages(40)).slice(4));
    await new Promise((r) => setTimeout(r, 100));
    expect(names(spoolDir(home))).toEqual(result.written.map((w) => path.basename(w.path)).sort());
  });
});

describe('failureGroups: one line per cause, at the place they share', () => {
  const entry = (code: string, p: string): FailedEntry => ({
    code,
    path: p,
    step: 'write',
    message: `${code} on ${p}`,
    uid: 1000,
    gid: 1000,
    hint: 'h',
    line: `${code} line for ${p}`,
    target: p,
    kind: 'pending',
    sessionKey: 'k',
  });

  it('groups by code in order of first appearance, counting each; where is the one path, the common directory, or /', () => {
    const groups = failureGroups([
      entry('ENOSPC', '/srv/h/pending_messages/a.json'),
      entry('EACCES', '/srv/h/pending_messages/b.json'),
      entry('ENOSPC', '/srv/h/pending_messages/c.json'),
      entry('ENOSPC', '/srv/h/pending_messages/d.json'),
      entry('EIO', '/srv/h/pending_messages/e.json'),
      entry('EIO', '/srv/h/other/f.json'),
      entry('EROFS', '/srv/x.json'),
      entry('EROFS', '/var/y.json'),
      entry('EACCES', '/srv/h/pending_messages/b.json'),
    ]);
    expect(groups.map((g) => [g.code, g.count, g.where, g.first.path])).toEqual([
      ['ENOSPC', 3, '/srv/h/pending_messages', '/srv/h/pending_messages/a.json'],
      ['EACCES', 2, '/srv/h/pending_messages/b.json', '/srv/h/pending_messages/b.json'],
      ['EIO', 2, '/srv/h', '/srv/h/pending_messages/e.json'],
      ['EROFS', 2, '/', '/srv/x.json'],
    ]);
    expect(failureGroups([])).toEqual([]);
  });

  it('the report logs each warning, one error line per failure code (the line itself when it is one), then what was written', () => {
    const home = path.join(tempDir(), 'home');
    const logger = memoryLogger();
    const report = flushPendingSync({ a: { text: 1 }, b: { text: 2 }, c: { text: 'x', timestamp: 1700000000000 }, d: 'ok' } as never, { home, logger, now: () => 1700000500 });
    const dir = spoolDir(home);
    const [a, b] = report.failed;
    const c = report.written[0]?.path;
    expect(logger.lines.map((l) => [l.level, l.message, l.fields])).toEqual([
      [
        'warn',
        "pending flush: the timestamp of a message for c is not epoch seconds (1700000000000 looks like epoch milliseconds, not seconds); the payload's ts is the flush time and data.timestamp keeps the value as given",
        { path: c, code: 'ETIMESTAMP' },
      ],
      [
        'error',
        `2 pending message(s) NOT written: EINVALID_MESSAGE at ${dir}. First: ${a?.line ?? ''}`,
        { path: dir, code: 'EINVALID_MESSAGE', step: 'serialize', uid: a?.uid, gid: a?.gid, count: 2 },
      ],
      ['info', 'flushed 2 pending message(s)', { path: dir, durable: true }],
    ]);
    expect(a?.line).toBe(`not a pending message (\`text\` is not a string); nothing was written for it [EINVALID_MESSAGE at serialize: ${a?.path ?? ''}] (uid ${String(a?.uid)}, gid ${String(a?.gid)}). Fix: pass a string, or an object with a string \`text\` (and JSON-serialisable fields).`);
    expect(b?.path).not.toBe(a?.path);
    const one = memoryLogger();
    const single = flushPendingSync({ z: { text: 1 } } as never, { home, logger: one });
    expect(one.lines.map((l) => [l.level, l.message])).toEqual([['error', `1 pending message(s) NOT written: ${single.failed[0]?.line ?? ''}`]]);
  });

  it('a logger that throws changes nothing about the report', () => {
    const home = path.join(tempDir(), 'home');
    const boom = (): never => {
      throw new Error('logger down');
    };
    const report = flushPendingSync({ a: { text: 1 }, b: 'ok' } as never, { home, logger: { debug: boom, info: boom, warn: boom, error: boom } });
    expect([report.written.map((w) => w.sessionKey), report.failed.map((f) => f.sessionKey), report.durable]).toEqual([['b'], ['a'], true]);
  });
});
