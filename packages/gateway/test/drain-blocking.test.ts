/**
 * The exit path's drain in this process: drainBlocking hands what is not on disk yet to the drain worker (the
 * built `dist/drain-worker.js`, run in a real worker thread) and takes the worker's verdicts into the report;
 * what the worker could not take (another home's job, a home it cannot create) is written on this thread. The
 * main thread's own writes are counted through the fault port, which the worker's copy of fs-policy never sees.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Req, setFaultHook } from '@hermes/fs-policy/testing';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FlushReport, flushPending } from '../src/index.js';
import { activeJobs, drainBlocking, drainJob, failure, FlushJob, policyError } from '../src/jobs.js';
import { spoolLocation } from '../src/spool.js';
import { memoryLogger, names, readJson, spoolDir, tempDir } from './helpers.js';

const WORKER = fileURLToPath(new URL('../dist/drain-worker.js', import.meta.url));

beforeAll(() => {
  if (!fs.existsSync(WORKER)) throw new Error(`${WORKER} is missing: build the package first (pnpm -s build)`);
});

afterEach(() => {
  setFaultHook(undefined);
});

const messages = (prefix: string, n: number): Record<string, string> =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${String(i).padStart(2, '0')}`, `${prefix} message ${String(i)}`]));

/**
 * Counts the payload renames this thread makes, and every request it makes on a payload file (the worker's
 * are invisible to the hook): a payload this thread retries shows up here even when it fails before a rename.
 */
function countRenames(): { n: number; onPayloads: number } {
  const seen = { n: 0, onPayloads: 0 };
  setFaultHook((req: Req) => {
    if (req.op === 'rename') seen.n++;
    if (path.basename(req.path).endsWith('.json') || path.basename(req.path).includes('.tmp')) seen.onPayloads++;
    return undefined;
  });
  return seen;
}

/** Starts flushes (their async writes have not begun when this returns) and gives their jobs. */
function started(...flushes: { home: string; prefix: string; n: number }[]): { jobs: FlushJob[]; reports: Promise<FlushReport>[] } {
  const reports = flushes.map((f) => flushPending(messages(f.prefix, f.n), { home: f.home, logger: memoryLogger(), concurrency: 4 }));
  const jobs = activeJobs();
  expect(jobs).toHaveLength(flushes.length);
  for (const job of jobs) expect(job.items.map((i) => i.state)).toEqual(job.items.map(() => 'planned'));
  return { jobs, reports };
}

describe('drainBlocking with the drain worker', () => {
  it('the worker writes all 40 payloads; this thread writes none of them, fsyncs the directory and finalizes the job', async () => {
    const home = path.join(tempDir(), 'home');
    const { jobs, reports } = started({ home, prefix: 'w', n: 40 });
    const renames = countRenames();
    drainBlocking(jobs, 'exit', 10_000, 8, WORKER);
    setFaultHook(undefined);
    expect([renames.n, renames.onPayloads]).toEqual([0, 0]);
    const report = await reports[0];
    expect(jobs[0]?.report).toBe(report);
    expect(activeJobs()).toEqual([]);
    expect([report?.drained, report?.durable, report?.failed, report?.written.length]).toEqual(['exit', true, [], 40]);
    const files = names(spoolDir(home));
    expect(files).toHaveLength(40);
    expect(files.filter((n) => !n.endsWith('.json'))).toEqual([]);
    for (const w of report?.written ?? []) {
      const st = fs.statSync(w.path);
      const onDisk = readJson(w.path) as { ts: number; seq: number; session_key: string };
      expect([w.mode, st.mode & 0o777, w.bytes, w.kind, w.ts, w.seq, w.sessionKey]).toEqual([0o600, 0o600, st.size, 'pending', onDisk.ts, onDisk.seq, onDisk.session_key]);
    }
    expect(new Set(report?.written.map((w) => w.sessionKey))).toEqual(new Set(Object.keys(messages('w', 40))));
  });

  it("a payload the worker cannot write is reported with the worker's failure, and this thread does not try it again", async () => {
    const home = path.join(tempDir(), 'home');
    const { jobs, reports } = started({ home, prefix: 'f', n: 12 });
    const blocked = jobs[0]?.items[5];
    if (blocked === undefined) throw new Error('no sixth payload');
    // A directory (with an entry) at the sixth payload's final name: its rename cannot replace it.
    fs.mkdirSync(path.join(blocked.path, 'occupied'), { recursive: true, mode: 0o700 });
    const renames = countRenames();
    drainBlocking(jobs, 'exit', 10_000, 4, WORKER);
    setFaultHook(undefined);
    expect([renames.n, renames.onPayloads]).toEqual([0, 0]);
    const report = await reports[0];
    expect([report?.drained, report?.written.length, report?.failed.length]).toEqual(['exit', 11, 1]);
    const f = report?.failed[0];
    expect([f?.code, f?.target, f?.kind, f?.sessionKey, f?.step, f?.hint === '', f?.uid, f?.gid]).toEqual([
      'EISDIR',
      blocked.path,
      'pending',
      'f05',
      'resolve',
      false,
      process.geteuid?.(),
      process.getegid?.(),
    ]);
    expect(f?.line).toContain('EISDIR');
    expect(f?.message).toContain(blocked.path);
    expect(f?.line).toContain(blocked.path);
    expect(report?.written.map((w) => w.sessionKey)).not.toContain('f05');
    expect(fs.statSync(blocked.path).isDirectory()).toBe(true);
  });

  it("one worker for one home: a second home's job is written on this thread, both reports complete", async () => {
    const root = tempDir();
    const { jobs, reports } = started({ home: path.join(root, 'a'), prefix: 'a', n: 10 }, { home: path.join(root, 'b'), prefix: 'b', n: 7 });
    const renames = countRenames();
    drainBlocking(jobs, 'exit', 10_000, 4, WORKER);
    setFaultHook(undefined);
    expect(renames.n).toBe(7);
    const [a, b] = await Promise.all(reports);
    expect([a?.drained, a?.written.length, a?.failed, b?.drained, b?.written.length, b?.failed]).toEqual(['exit', 10, [], 'exit', 7, []]);
    expect(names(spoolDir(path.join(root, 'a')))).toHaveLength(10);
    expect(names(spoolDir(path.join(root, 'b')))).toHaveLength(7);
  });

  it('a job whose spool directory cannot be created is left to this thread, which reports every payload failed', async () => {
    const root = tempDir();
    const home = path.join(root, 'home');
    fs.writeFileSync(home, 'a file where the home should be');
    const { jobs, reports } = started({ home, prefix: 'x', n: 5 });
    const renames = countRenames();
    drainBlocking(jobs, 'exit', 10_000, 4, WORKER);
    setFaultHook(undefined);
    expect(renames.n).toBe(0);
    const report = await reports[0];
    expect([report?.drained, report?.written, report?.failed.length]).toEqual(['exit', [], 5]);
    expect(new Set(report?.failed.map((f) => [f.code, f.step, f.path, f.message].join(' | ')))).toEqual(
      new Set([`ENOTDIR | resolve | ${home} | ${home} is not a directory [ENOTDIR at resolve: ${home}]`]),
    );
    expect(report?.failed.map((f) => f.sessionKey)).toEqual(['x00', 'x01', 'x02', 'x03', 'x04']);
    expect(fs.readFileSync(home, 'utf8')).toBe('a file where the home should be');
  });

  it('a single payload needs no worker: written on this thread', async () => {
    const home = path.join(tempDir(), 'home');
    const { jobs, reports } = started({ home, prefix: 's', n: 1 });
    const renames = countRenames();
    drainBlocking(jobs, 'exit', 10_000, 4, WORKER);
    setFaultHook(undefined);
    expect(renames.n).toBe(1);
    const report = await reports[0];
    expect([report?.drained, report?.written.length, report?.failed]).toEqual(['exit', 1, []]);
  });

  it('without a worker script everything is written on this thread', async () => {
    const home = path.join(tempDir(), 'home');
    const { jobs, reports } = started({ home, prefix: 'n', n: 6 });
    const renames = countRenames();
    drainBlocking(jobs, 'exit', 10_000, 4, path.join(tempDir(), 'no-such-worker.js'));
    setFaultHook(undefined);
    expect(renames.n).toBe(6);
    const report = await reports[0];
    expect([report?.drained, report?.written.length, report?.failed]).toEqual(['exit', 6, []]);
  });

  it('a finalized job is left alone', async () => {
    const home = path.join(tempDir(), 'home');
    const { jobs, reports } = started({ home, prefix: 'd', n: 3 });
    const first = await reports[0];
    // Its spool is gone by now: a drain that took the finalized job for open would make it again.
    fs.rmSync(spoolDir(home), { recursive: true });
    const renames = countRenames();
    drainBlocking(jobs, 'exit', 10_000, 4, WORKER);
    setFaultHook(undefined);
    expect(renames.n).toBe(0);
    expect(jobs[0]?.report).toBe(first);
    expect([first?.drained, jobs[0]?.drained]).toEqual([null, null]);
    expect(fs.existsSync(spoolDir(home))).toBe(false);
    // Nor does a drain of the job by itself touch anything.
    const again = countRenames();
    let requests = 0;
    setFaultHook(() => {
      requests++;
      return undefined;
    });
    if (jobs[0] !== undefined) expect(drainJob(jobs[0], 'exit')).toBe(first);
    setFaultHook(undefined);
    expect([again.n, requests]).toEqual([0, 0]);
  });
});

describe('drainBlocking: only what is not settled goes to the worker', () => {
  it('payloads already written or already failed are neither written again nor turned into successes', () => {
    const home = path.join(tempDir(), 'home');
    fs.mkdirSync(spoolDir(home), { recursive: true });
    const job = new FlushJob(spoolLocation({ home }), memoryLogger());
    const at = (n: string): string => path.join(spoolDir(home), `pending-${n.repeat(32)}.json`);
    for (const [i, n] of ['a', 'b', 'c', 'd'].entries()) job.addItem('pending', n, at(n), 1700000000, i, Buffer.from(JSON.stringify({ n })));
    const [a, b, c, d] = job.items;
    if (a === undefined || b === undefined || c === undefined || d === undefined) throw new Error('four items');
    // c was reported written (its file is not here: a rewrite would show), d failed.
    c.state = 'written';
    c.written = { path: c.path, kind: 'pending', sessionKey: 'c', bytes: c.data.length, mode: 0o600, ts: 1700000000, seq: 2 };
    d.state = 'failed';
    d.failed = failure(policyError(Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' }), d.path), d.path, 'pending', 'd');
    drainBlocking([job], 'exit', 10_000, 4, WORKER);
    const report = job.report;
    expect([report?.written.map((w) => w.sessionKey), report?.failed.map((f) => [f.sessionKey, f.code])]).toEqual([
      ['a', 'b', 'c'],
      [['d', 'EIO']],
    ]);
    expect(names(spoolDir(home))).toEqual([path.basename(a.path), path.basename(b.path)]);
  });
});
