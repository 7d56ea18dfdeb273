/**
 * The flush job's own contract, below the flush functions: how any thrown value becomes a failure entry, what a
 * job counts, who hears of a job, and an async flush whose spool directory cannot be made.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FsPolicyError } from '@hermes/fs-policy';
import { type Req, setFaultHook } from '@hermes/fs-policy/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { flushPending, flushPendingSync } from '../src/index.js';
import { failure, finalize, FlushJob, onJobStart, policyError, register, runJobAsync } from '../src/jobs.js';
import { spoolLocation } from '../src/spool.js';
import { inSpool, memoryLogger, names, spoolDir, tempDir } from './helpers.js';

afterEach(() => {
  setFaultHook(undefined);
});

const uid = process.geteuid?.() ?? -1;
const gid = process.getegid?.() ?? -1;

describe('policyError and failure: any thrown value becomes one failure entry', () => {
  it('an FsPolicyError passes through as it is', () => {
    const err = new FsPolicyError({ code: 'ENOSPC', step: 'write', path: '/h/p/a.json', message: 'no space left', hint: 'free some space.' });
    expect(policyError(err, '/elsewhere')).toBe(err);
  });

  it('a system error keeps its code; the step is the write, the path the payload', () => {
    const e = policyError(Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' }), '/h/p/a.json');
    expect([e.code, e.step, e.path, e.detail, e.cause instanceof Error]).toEqual(['EIO', 'write', '/h/p/a.json', 'writing /h/p/a.json failed: EIO: i/o error, write', true]);
  });

  it('an error without a code, and a thrown string, are EUNEXPECTED with their words', () => {
    const plain = policyError(new TypeError('not a buffer'), '/h/p/b.json');
    expect([plain.code, plain.step, plain.detail]).toEqual(['EUNEXPECTED', 'write', 'writing /h/p/b.json failed: not a buffer']);
    const thrown = policyError('boom', '/h/p/c.json');
    expect([thrown.code, thrown.detail, thrown.cause]).toEqual(['EUNEXPECTED', 'writing /h/p/c.json failed: boom', 'boom']);
  });

  it('failure() copies every field of the error and names the target, kind and session', () => {
    const err = new FsPolicyError({ code: 'EACCES', step: 'open', path: '/h/p', message: 'permission denied', hint: 'fix the mode of /h/p.' });
    expect(failure(err, '/h/p/x.json', 'overflow', 'agent:k')).toEqual({
      code: 'EACCES',
      path: '/h/p',
      step: 'open',
      message: 'permission denied [EACCES at open: /h/p]',
      uid,
      gid,
      hint: 'fix the mode of /h/p.',
      line: `permission denied [EACCES at open: /h/p] (uid ${String(uid)}, gid ${String(gid)}). Fix: fix the mode of /h/p.`,
      target: '/h/p/x.json',
      kind: 'overflow',
      sessionKey: 'agent:k',
    });
  });
});

describe('FlushJob: what a job counts', () => {
  it('messages counts the planned and the refused, writtenCount the written, failures the refused, the failed writes and the directory', () => {
    const job = new FlushJob(spoolLocation({ home: path.join(tempDir(), 'home') }), memoryLogger());
    const err = (code: string, p: string): FsPolicyError => new FsPolicyError({ code, step: 'write', path: p, message: code });
    job.planFailed.push(failure(err('EINVALID_INPUT', '/a'), '/a', 'pending', 'a'));
    job.addItem('pending', 'b', '/b', 1, 0, Buffer.from('b'));
    job.addItem('pending', 'c', '/c', 1, 1, Buffer.from('c'));
    job.addItem('pending', 'd', '/d', 1, 2, Buffer.from('d'));
    job.skipped.push({ kind: 'pending', sessionKey: 'e', reason: 'empty' });
    const [b, c, d] = job.items;
    if (b === undefined || c === undefined || d === undefined) throw new Error('three items');
    b.state = 'written';
    c.state = 'failed';
    c.failed = failure(err('EIO', '/c'), '/c', 'pending', 'c');
    d.state = 'failed'; // a failed state without its entry is not counted twice or invented
    job.dirFailure = failure(err('EIO', '/dir'), '/dir', null, null);
    expect([job.messages(), job.writtenCount(), job.failures().map((f) => [f.code, f.target])]).toEqual([
      4,
      1,
      [
        ['EINVALID_INPUT', '/a'],
        ['EIO', '/c'],
        ['EIO', '/dir'],
      ],
    ]);
    expect(job.final()).toBe(undefined);
    const report = finalize(job);
    expect(job.final()).toBe(report);
    expect(finalize(job)).toBe(report);
  });

  it('running a finalized job returns its report; a job with nothing to write creates nothing', async () => {
    const home = path.join(tempDir(), 'home');
    const job = new FlushJob(spoolLocation({ home }), memoryLogger());
    const report = await runJobAsync(job, 4);
    expect([report.written, report.failed, report.durable, report.drained]).toEqual([[], [], true, null]);
    expect(await runJobAsync(job, 4)).toBe(report);
    expect(fs.existsSync(home)).toBe(false);
  });

  it('running again a job whose payloads were written makes no request and returns its report', async () => {
    const home = path.join(tempDir(), 'home');
    const seen: FlushJob[] = [];
    const stop = onJobStart((j) => seen.push(j));
    const report = await flushPending({ a: 'one', b: 'two' }, { home, logger: memoryLogger() });
    stop();
    const job = seen[0];
    if (job === undefined) throw new Error('no job');
    let requests = 0;
    setFaultHook(() => {
      requests++;
      return undefined;
    });
    expect(await runJobAsync(job, 4)).toBe(report);
    setFaultHook(undefined);
    expect(requests).toBe(0);
  });
});

describe('onJobStart: who hears of a job', () => {
  it('every registered job reaches every listener; a throwing listener stops nothing; an unsubscribed one hears no more', () => {
    const heard: number[] = [];
    const stopThrowing = onJobStart(() => {
      throw new Error('listener broke');
    });
    const stop = onJobStart((job) => heard.push(job.id));
    const loc = spoolLocation({ home: path.join(tempDir(), 'home') });
    const a = new FlushJob(loc, memoryLogger());
    register(a);
    stop();
    stopThrowing();
    const b = new FlushJob(loc, memoryLogger());
    register(b);
    expect(heard).toEqual([a.id]);
    expect(b.id).toBeGreaterThan(a.id);
    finalize(a);
    finalize(b);
  });
});

describe('an async flush whose spool directory cannot be made', () => {
  it('every payload is failed with that error, each naming its own file; one log line; the file in the way untouched', async () => {
    const home = path.join(tempDir(), 'home');
    fs.mkdirSync(home);
    fs.writeFileSync(spoolDir(home), 'in the way');
    const logger = memoryLogger();
    const report = await flushPending({ a: 'one', b: 'two', c: 'three' }, { home, logger, concurrency: 2 });
    expect(report.written).toEqual([]);
    expect(report.failed.map((f) => [f.code, f.path, f.sessionKey, path.dirname(f.target)])).toEqual([
      ['ENOTDIR', spoolDir(home), 'a', spoolDir(home)],
      ['ENOTDIR', spoolDir(home), 'b', spoolDir(home)],
      ['ENOTDIR', spoolDir(home), 'c', spoolDir(home)],
    ]);
    expect(new Set(report.failed.map((f) => f.target)).size).toBe(3);
    expect(logger.lines.map((l) => [l.level, l.message.split('. First: ')[0], l.fields?.count])).toEqual([
      ['error', `3 pending message(s) NOT written: ENOTDIR at ${spoolDir(home)}`, 3],
    ]);
    expect(fs.readFileSync(spoolDir(home), 'utf8')).toBe('in the way');
    expect(names(home)).toEqual(['pending_messages']);
  });
});

describe('the directory fsync and the clock of a job', () => {
  it('a synchronous flush whose directory fsync fails: durable false and the failure named; the payloads are on disk', () => {
    const home = path.join(tempDir(), 'home');
    setFaultHook((req: Req) => {
      if (req.step === 'fsync-dir' && req.op === 'fsync') throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO', errno: -5 });
      return undefined;
    });
    const before = Date.now();
    const report = flushPendingSync({ a: 'one', b: 'two' }, { home, logger: memoryLogger() });
    const took = Date.now() - before;
    setFaultHook(undefined);
    expect([report.durable, report.written.length, report.failed.map((f) => [f.code, f.path, f.target, f.kind])]).toEqual([
      false,
      2,
      [['EIO', spoolDir(home), spoolDir(home), null]],
    ]);
    expect(names(spoolDir(home))).toHaveLength(2);
    // elapsedMs is a duration: within what the call took as measured here.
    expect(report.elapsedMs).toBeGreaterThanOrEqual(0);
    expect(report.elapsedMs).toBeLessThanOrEqual(took);
  });

  it('an async flush that wrote nothing fsyncs no directory and stays durable', async () => {
    const home = path.join(tempDir(), 'home');
    const dirFsyncs: string[] = [];
    setFaultHook((req: Req) => {
      if (req.step === 'fsync-dir') dirFsyncs.push(req.path);
      if (req.op === 'open' && req.step === 'open' && path.dirname(inSpool(req.path, spoolDir(home))) === spoolDir(home)) throw Object.assign(new Error('EACCES: permission denied, open'), { code: 'EACCES', errno: -13 });
      return undefined;
    });
    const report = await flushPending({ a: 'one', b: 'two' }, { home, logger: memoryLogger(), concurrency: 2 });
    setFaultHook(undefined);
    expect([report.durable, report.written, report.failed.map((f) => f.code), dirFsyncs]).toEqual([true, [], ['EACCES', 'EACCES'], []]);
  });
});
