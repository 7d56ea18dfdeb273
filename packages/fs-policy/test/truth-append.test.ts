/**
 * Appends tell the whole truth (issue 23, rows 8 and 9): an append issued once a close has begun is refused at
 * once and every promise a handle returned settles; a record cut short by a full device never has the next
 * writer's record glued to it — every appender starts its record on a new line.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeNeeds, tempRoot } from '@hermes/test-utils';
import {
  appendJsonLine,
  appendJsonLineSync,
  FsPolicyError,
  loadEnvironment,
  openAppendHandle,
  openAppendHandleSync,
  privateAppend,
  privateAppendSync,
  setLogger,
  silentLogger,
  type AppendHandle,
  type HermesEnvironment,
} from '../src/index.js';
import { tempEnv } from './helpers.js';

setLogger(silentLogger);

const ROUNDS = 200;

type Outcome = { state: 'resolved'; value: unknown } | { state: 'rejected'; code: string } | { state: 'pending' };

/** Tracks a promise's outcome without awaiting it. */
function track(p: Promise<unknown>): { outcome: Outcome; done: Promise<void> } {
  const t: { outcome: Outcome; done: Promise<void> } = { outcome: { state: 'pending' }, done: Promise.resolve() };
  t.done = p.then(
    (value) => {
      t.outcome = { state: 'resolved', value };
    },
    (err: unknown) => {
      t.outcome = { state: 'rejected', code: err instanceof FsPolicyError ? err.code : `UNTYPED ${String(err)}` };
    },
  );
  return t;
}

/** Waits until every tracked promise settled or `ms` passed (a promise that never settles is counted, not awaited forever). */
async function settleWithin(all: readonly { done: Promise<void> }[], ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.all(all.map((t) => t.done)), new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}

describe('row 8: an append once close() has begun', () => {
  async function rounds(open: (f: string, env: HermesEnvironment) => Promise<AppendHandle>, form: string) {
    const env = tempEnv();
    const dir = path.join(env.home, 'trajectories');
    const before: ReturnType<typeof track>[] = [];
    const after: ReturnType<typeof track>[] = [];
    const closes: ReturnType<typeof track>[] = [];
    let syncRefused = 0;
    let syncAccepted = 0;
    const files: string[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const f = path.join(dir, `h-${String(i)}.jsonl`);
      files.push(f);
      const h = await open(f, env);
      // Issued before the close (even rounds; odd rounds close an idle handle): written before close() resolves.
      if (i % 2 === 0) {
        before.push(track(h.append(`{"before":${String(i)}}\n`)));
        before.push(track(h.appendJson({ before2: i })));
      }
      closes.push(track(h.close()));
      // Issued while the close is pending: refused at once.
      after.push(track(h.append(`{"after":${String(i)}}\n`)));
      after.push(track(h.appendMany([`{"after2":${String(i)}}\n`])));
      if (i % 2 === 0) {
        // (Only in busy rounds: a sync call would flush the queue of an idle round's refused appends.)
        try {
          h.appendSync(`{"afterSync":${String(i)}}\n`);
          syncAccepted++;
        } catch (err) {
          if (err instanceof FsPolicyError && err.code === 'ECLOSED') syncRefused++;
        }
      }
    }
    // A refusal is immediate: by the next turn of the event loop every "after" promise has settled.
    await new Promise((r) => setImmediate(r));
    const refusedAtOnce = after.filter((t) => t.outcome.state === 'rejected' && t.outcome.code === 'ECLOSED').length;
    await settleWithin([...before, ...after, ...closes], 5000);
    const pending = [...before, ...after, ...closes].filter((t) => t.outcome.state === 'pending').length;
    const expected = (i: number): string => (i % 2 === 0 ? `{"before":${String(i)}}\n{"before2":${String(i)}}\n` : '');
    const written = files.filter((f, i) => fs.readFileSync(f, 'utf8') === expected(i)).length;
    console.log(
      `row 8 (${form}): ${String(ROUNDS)} handles (half idle at close); appends after close began: ${String(after.length)} async refused at once ${String(refusedAtOnce)} (ECLOSED), ` +
        `${String(syncRefused)} sync refused, ${String(syncAccepted)} sync accepted; never settled ${String(pending)}; files with exactly the records issued before close ${String(written)}`,
    );
    expect(pending).toBe(0);
    expect(refusedAtOnce).toBe(2 * ROUNDS);
    expect(syncRefused).toBe(ROUNDS / 2);
    expect(syncAccepted).toBe(0);
    expect(before.filter((t) => t.outcome.state === 'resolved').length).toBe(ROUNDS);
    expect(closes.filter((t) => t.outcome.state === 'resolved').length).toBe(ROUNDS);
    expect(written).toBe(ROUNDS);
  }

  it('row 8: async handle — refused with ECLOSED at once, every promise settles, records issued before are written', async () => {
    await rounds((f, env) => openAppendHandle(f, { kind: 'trajectories', env }), 'async handle');
  });

  it('row 8: sync handle — the same', async () => {
    await rounds((f, env) => Promise.resolve(openAppendHandleSync(f, { kind: 'trajectories', env })), 'sync handle');
  });

  it('row 8: a second close() settles with the first; closeSync() during a pending close writes nothing new', async () => {
    const env = tempEnv();
    const f = path.join(env.home, 'trajectories', 'twice.jsonl');
    const h = await openAppendHandle(f, { kind: 'trajectories', env });
    const a = h.append('a\n');
    const first = h.close();
    const second = h.close();
    expect(h.closed).toBe(true);
    h.closeSync();
    await expect(a).resolves.toBe(2);
    await expect(first).resolves.toBeUndefined();
    await expect(second).resolves.toBeUndefined();
    await expect(h.sync()).rejects.toMatchObject({ code: 'ECLOSED' });
    expect(() => {
      h.syncSync();
    }).toThrow(expect.objectContaining({ code: 'ECLOSED' }) as Error);
    expect(fs.readFileSync(f, 'utf8')).toBe('a\n');
  });
});

/** Runs a sync call as a promise: what it throws becomes a rejection. */
function inTurn<T>(fn: () => T): Promise<T> {
  return Promise.resolve().then(fn);
}

/** Every line of `text` that is not blank (readers skip blank lines). */
function records(text: string): string[] {
  return text.split('\n').filter((l) => l !== '');
}

describe('every appender starts its record on a new line', () => {
  it('a file that ends without a newline (a torn record) gets one before the next record; one that ends with one does not', async () => {
    const env = tempEnv();
    const dir = path.join(env.home, 'trajectories');
    fs.mkdirSync(dir, { mode: 0o700 });
    const forms: [string, (f: string, n: number) => Promise<unknown>][] = [
      ['privateAppend', (f, n) => privateAppend(f, `{"n":${String(n)}}\n`, { kind: 'trajectories', env })],
      ['privateAppendSync', (f, n) => Promise.resolve(privateAppendSync(f, `{"n":${String(n)}}\n`, { kind: 'trajectories', env }))],
      ['appendJsonLine', (f, n) => appendJsonLine(f, { n }, { kind: 'trajectories', env })],
      ['appendJsonLineSync', (f, n) => Promise.resolve(appendJsonLineSync(f, { n }, { kind: 'trajectories', env }))],
      [
        'handle.append',
        async (f, n) => {
          const h = await openAppendHandle(f, { kind: 'trajectories', env });
          await h.append(`{"n":${String(n)}}\n`);
          await h.close();
        },
      ],
      [
        'handle.appendSync',
        (f, n) => {
          const h = openAppendHandleSync(f, { kind: 'trajectories', env });
          h.appendSync(`{"n":${String(n)}}\n`);
          h.closeSync();
          return Promise.resolve();
        },
      ],
    ];
    for (const [name, append] of forms) {
      const f = path.join(dir, `${name}.jsonl`);
      fs.writeFileSync(f, '{"n":0}\n{"torn":', { mode: 0o600 });
      await append(f, 1);
      await append(f, 2);
      expect(fs.readFileSync(f, 'utf8'), name).toBe('{"n":0}\n{"torn":\n{"n":1}\n{"n":2}\n');
    }
  });
});

// A real 64 KiB tmpfs filled to ENOSPC: the record is cut short by the device, and the newline that would end
// the fragment does not fit either.
describeNeeds(['root', 'mount'], 'row 9: a record cut short by ENOSPC (root only: 64 KiB tmpfs)', () => {
  let mnt: string;
  beforeAll(() => {
    mnt = path.join(tempRoot(), 'tmpfs');
    fs.mkdirSync(mnt);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k,mode=0700', 'tmpfs', mnt]);
  });
  afterAll(() => {
    spawnSync('umount', [mnt]);
  });

  /** Fills the device, then frees `free` bytes (whole pages), so the next large write is cut short. */
  function fillLeaving(filler: string, free: number): void {
    const fd = fs.openSync(filler, 'w', 0o600);
    const chunk = Buffer.alloc(4096, 0x7a);
    try {
      for (;;) fs.writeSync(fd, chunk);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
    }
    fs.ftruncateSync(fd, Math.max(0, fs.fstatSync(fd).size - free));
    fs.closeSync(fd);
  }

  it('row 9: after a fragment without a newline, the next record of every appender (sync, async, handle) starts on a new line and parses', async () => {
    const env = loadEnvironment({ home: mnt, env: { HERMES_MANAGED: 'false' } });
    const dir = path.join(mnt, 'trajectories');
    const filler = path.join(mnt, 'filler');
    const forms: [string, (f: string, v: object) => Promise<unknown>][] = [
      ['privateAppend', (f, v) => privateAppend(f, `${JSON.stringify(v)}\n`, { kind: 'trajectories', env })],
      ['privateAppendSync', (f, v) => inTurn(() => privateAppendSync(f, `${JSON.stringify(v)}\n`, { kind: 'trajectories', env }))],
      ['appendJsonLine', (f, v) => appendJsonLine(f, v, { kind: 'trajectories', env })],
      ['appendJsonLineSync', (f, v) => inTurn(() => appendJsonLineSync(f, v, { kind: 'trajectories', env }))],
      [
        'handle.append',
        async (f, v) => {
          const h = await openAppendHandle(f, { kind: 'trajectories', env });
          try {
            await h.appendJson(v);
          } finally {
            await h.close();
          }
        },
      ],
      [
        'handle.appendSync',
        (f, v) =>
          inTurn(() => {
            const h = openAppendHandleSync(f, { kind: 'trajectories', env });
            try {
              h.appendJsonSync(v);
            } finally {
              h.closeSync();
            }
          }),
      ],
    ];
    let torn = 0;
    let parsed = 0;
    let glued = 0;
    let blank = 0;
    for (const [name, append] of forms) {
      for (let round = 0; round < 2; round++) {
        const f = path.join(dir, `t-${name}-${String(round)}.jsonl`);
        await privateAppend(f, '{"line":1}\n', { kind: 'trajectories', env });
        fillLeaving(filler, 8192);
        // The torn record: by an appender of the same form as the one that comes next.
        const big = { big: 'b'.repeat(200 * 1024) };
        const e = await append(f, big).then(
          () => undefined,
          (err: unknown) => err,
        );
        expect(e, name).toBeInstanceOf(FsPolicyError);
        expect((e as FsPolicyError).code, name).toBe('ENOSPC');
        const fragment = fs.readFileSync(f, 'utf8');
        expect(fragment.endsWith('\n'), `${name}: the device left a fragment without a newline`).toBe(false);
        torn++;
        fs.rmSync(filler); // space again
        const mine = { form: name, round, committed: true };
        await append(f, mine);
        const text = fs.readFileSync(f, 'utf8');
        const lines = text.split('\n');
        blank += lines.slice(0, -1).filter((l) => l === '').length;
        const last = records(text).pop() ?? '';
        let ok: boolean;
        try {
          ok = JSON.stringify(JSON.parse(last)) === JSON.stringify(mine);
        } catch {
          ok = false;
        }
        if (ok) parsed++;
        else glued++;
        expect(text.startsWith(`{"line":1}\n{"big":"bbb`), name).toBe(true);
        expect(text.endsWith(`\n${JSON.stringify(mine)}\n`), name).toBe(true);
        fs.rmSync(f);
      }
    }
    console.log(`row 9: ${String(torn)} records cut short by ENOSPC (6 appender forms x 2); the next record: ${String(parsed)} on a line of its own and parsed, ${String(glued)} glued to the fragment, ${String(blank)} blank lines`);
    expect(glued).toBe(0);
    expect(parsed).toBe(12);
    expect(blank).toBe(0);
  });
});
