/**
 * Every way a flush call can be handed something it cannot write, pinned to the entry the report carries: the
 * code, the kind, the session key and the message an operator reads. And what is written instead is exactly the
 * payload the documented format describes.
 */
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  flushAgentHistory,
  flushAgentHistorySync,
  flushOverflow,
  flushOverflowSync,
  flushPending,
  flushPendingSync,
  spoolDroppedTranscriptMessage,
  spoolDroppedTranscriptMessageSync,
  type FlushReport,
} from '../src/index.js';
import { memoryLogger, names, readJson, spoolDir, tempDir } from './helpers.js';

const home = (): string => path.join(tempDir(), 'home');
const failedOf = (r: FlushReport): [string, string | null, string | null, string][] =>
  r.failed.map((f) => [f.code, f.kind, f.sessionKey, f.message.split(' [')[0] ?? '']);

describe('flush: what is refused, entry by entry (sync and async forms alike)', () => {
  it('pending: a message whose text is not a string, an empty string, null, an object without text or media', async () => {
    const h = home();
    const input = { a: { text: 7 }, b: '', c: null, d: { text: '' }, e: { media_urls: [] }, f: { media_urls: ['u'] }, g: 'ok' };
    for (const report of [flushPendingSync(input as never, { home: h, logger: memoryLogger() }), await flushPending(input as never, { home: h, logger: memoryLogger() })]) {
      expect(failedOf(report)).toEqual([['EINVALID_MESSAGE', 'pending', 'a', 'not a pending message (`text` is not a string); nothing was written for it']]);
      expect(report.skipped).toEqual([
        { kind: 'pending', sessionKey: 'b', reason: 'no-content' },
        { kind: 'pending', sessionKey: 'c', reason: 'empty' },
        { kind: 'pending', sessionKey: 'd', reason: 'no-content' },
        { kind: 'pending', sessionKey: 'e', reason: 'no-content' },
      ]);
      expect(report.written.map((w) => w.sessionKey)).toEqual(['f', 'g']);
    }
    expect(names(spoolDir(h))).toHaveLength(4);
  });

  it('the payload written for a pending message: the envelope, the key, the default reason and the data as given', () => {
    const h = home();
    const report = flushPendingSync({ k: { text: 'hi', timestamp: 1700000000, extra: [1] } }, { home: h, now: () => 1700000500 });
    const p = readJson(report.written[0]?.path ?? '') as Record<string, unknown>;
    expect({ kind: p.kind, ts: p.ts, session_key: p.session_key, reason: p.reason, data: p.data }).toEqual({
      kind: 'pending',
      ts: 1700000000,
      session_key: 'k',
      reason: 'shutdown',
      data: { text: 'hi', timestamp: 1700000000, extra: [1] },
    });
    const again = flushOverflowSync({ k: ['one', { text: 'two' }] }, { home: h, now: () => 1700000500, reason: 'adapter_shutdown' });
    expect(again.written.map((w) => readJson(w.path) as Record<string, unknown>).map((x) => [x.kind, x.ts, x.reason, x.index, x.data])).toEqual([
      ['overflow', 1700000500, 'adapter_shutdown', 0, { text: 'one' }],
      ['overflow', 1700000500, 'adapter_shutdown', 1, { text: 'two' }],
    ]);
  });

  it('overflow: an empty key, and null or empty queues (skipped without an entry)', async () => {
    const h = home();
    const input = { '': ['x'], n: null, e: [], u: undefined, ok: ['y'] };
    for (const report of [flushOverflowSync(input, { home: h, logger: memoryLogger() }), await flushOverflow(input, { home: h, logger: memoryLogger() })]) {
      expect(failedOf(report)).toEqual([['EINVALID_MESSAGE', 'overflow', '', 'not a pending message (the session key is empty); nothing was written for it']]);
      expect(report.skipped).toEqual([]);
      expect(report.written.map((w) => w.sessionKey)).toEqual(['ok']);
    }
  });

  it('overflow of something that is not a Map or a plain object', () => {
    const report = flushOverflowSync([['k', ['v']]] as never, { home: home(), logger: memoryLogger() });
    expect(failedOf(report)).toEqual([
      ['EINVALID_INPUT', 'overflow', null, 'flushOverflowSync takes a Map or a plain object of session_key → list of messages, got an array; nothing was written'],
    ]);
  });

  it('a transcript message the cap dropped: an empty or non-string session id, a message that is not an object', async () => {
    const h = home();
    const cases: [unknown, unknown, string | null, string][] = [
      ['', { role: 'user' }, '', 'the session id is empty or not a string'],
      [7, { role: 'user' }, null, 'the session id is empty or not a string'],
      ['s', 'text', 's', 'a transcript message must be an object'],
    ];
    for (const [id, message, key, detail] of cases) {
      for (const report of [
        spoolDroppedTranscriptMessageSync(id as never, message as never, { home: h, logger: memoryLogger() }),
        await spoolDroppedTranscriptMessage(id as never, message as never, { home: h, logger: memoryLogger() }),
      ]) {
        expect(failedOf(report)).toEqual([['EINVALID_MESSAGE', 'transcript_cap_drop', key, `not a pending message (${detail}); nothing was written for it`]]);
      }
    }
    const ok = spoolDroppedTranscriptMessageSync('s', { role: 'user', content: 'c', timestamp: 1700000000000 }, { home: h, now: () => 1700000300 });
    expect(ok.warnings).toEqual([
      {
        code: 'ETIMESTAMP',
        message:
          'the timestamp of a transcript message of session s is not epoch seconds (1700000000000 looks like epoch milliseconds, not seconds); recovery stores the payload\'s ts (the flush time) for it',
        target: ok.written[0]?.path,
        sessionKey: 's',
      },
    ]);
    const p = readJson(ok.written[0]?.path ?? '') as Record<string, unknown>;
    expect([p.kind, p.ts, p.session_key, p.reason, p.data]).toEqual([
      'transcript_cap_drop',
      1700000300,
      's',
      'transcript_cap_drop',
      { session_id: 's', message: { role: 'user', content: 'c', timestamp: 1700000000000 } },
    ]);
    const plain = spoolDroppedTranscriptMessageSync('s', { role: 'user', content: 'c', timestamp: null }, { home: h, now: () => 1700000300 });
    expect(plain.warnings).toEqual([]);
  });

  it('agent history: not a list, a session id that is neither a string nor null, null and empty histories', async () => {
    const h = home();
    for (const report of [
      flushAgentHistorySync('s', 'x' as never, { home: h, logger: memoryLogger() }),
      await flushAgentHistory('s', { length: 1 } as never, { home: h, logger: memoryLogger() }),
    ]) {
      expect(failedOf(report)[0]?.slice(0, 3)).toEqual(['EINVALID_INPUT', 'agent_history', null]);
      expect(failedOf(report)[0]?.[3]).toMatch(/^flushAgentHistory takes a list of messages \(or null\), got .+; nothing was written$/);
    }
    const bad = flushAgentHistorySync(7 as never, [{ role: 'user' }], { home: h, logger: memoryLogger() });
    expect(failedOf(bad)).toEqual([['EINVALID_MESSAGE', 'agent_history', null, 'not a pending message (the session id is not a string or null); nothing was written for it']]);
    for (const empty of [null, undefined, []]) {
      const r = flushAgentHistorySync('s', empty, { home: h });
      expect([r.written, r.failed, r.skipped]).toEqual([[], [], []]);
    }
    const anon = flushAgentHistorySync(null, [{ role: 'user', content: 'a' }, 'str'], { home: h, now: () => 1700000400 });
    const p = readJson(anon.written[0]?.path ?? '') as Record<string, unknown>;
    expect([p.kind, p.ts, p.session_id, p.count, p.messages, anon.written[0]?.sessionKey]).toEqual([
      'agent_history',
      1700000400,
      null,
      2,
      [{ role: 'user', content: 'a' }, 'str'],
      null,
    ]);
  });

  it('a clock that throws is a warning naming what it threw; the system clock is used', async () => {
    const h = home();
    const before = Date.now() / 1000;
    for (const [thrown, said] of [
      [new Error('no time'), 'a clock that threw (no time)'],
      ['just a string', 'a clock that threw'],
    ] as const) {
      const report = await flushPending({ k: 'x' }, {
        home: h,
        logger: memoryLogger(),
        now: () => {
          // eslint-disable-next-line @typescript-eslint/only-throw-error -- a caller's clock may throw anything
          throw thrown;
        },
      });
      expect(report.warnings).toEqual([{ code: 'EINVALID_OPTION', message: `now() must return epoch seconds: ${said}; used the system clock`, target: null, sessionKey: null }]);
      expect(report.written[0]?.ts).toBeGreaterThanOrEqual(Math.floor(before));
    }
  });

  it('concurrency is an option of the async forms only; a valid one is used without a warning', async () => {
    const h = home();
    expect(flushPendingSync({ k: 'x' }, { home: h, concurrency: Number.NaN }).warnings).toEqual([]);
    expect((await flushPending({ k: 'x', l: 'y' }, { home: h, concurrency: 1 })).warnings).toEqual([]);
    expect((await flushPending({ k: 'x' }, { home: h, concurrency: Number.POSITIVE_INFINITY })).warnings).toEqual([]);
  });

  it('an unexpected failure while starting (an options object that throws) is one failed entry, logged, never thrown', async () => {
    const h = home();
    const logger = memoryLogger();
    const hostile = {
      home: h,
      logger,
      get reason(): string {
        throw new Error('options exploded');
      },
    };
    for (const report of [flushPendingSync({ k: 'x' }, hostile), await flushPending({ k: 'x' }, hostile)]) {
      expect({ dir: report.dir, written: report.written, skipped: report.skipped, warnings: report.warnings, durable: report.durable, drained: report.drained, elapsedMs: report.elapsedMs }).toEqual({
        dir: spoolDir(h),
        written: [],
        skipped: [],
        warnings: [],
        durable: false,
        drained: null,
        elapsedMs: 0,
      });
      expect(report.failed.map((f) => [f.path, f.target, f.kind, f.sessionKey])).toEqual([[spoolDir(h), spoolDir(h), null, null]]);
      expect(report.failed[0]?.message).toContain('options exploded');
    }
    expect(logger.lines.map((l) => [l.level, l.message.startsWith('pending message(s) NOT written: '), l.fields?.path])).toEqual([
      ['error', true, spoolDir(h)],
      ['error', true, spoolDir(h)],
    ]);
    const throwing = {
      home: h,
      logger: { ...logger, error: () => {
        throw new Error('logger down');
      } },
      get reason(): string {
        throw new Error('options exploded');
      },
    };
    expect(flushPendingSync({ k: 'x' }, throwing).failed).toHaveLength(1);
  });
});

describe('flush: the fix a refused entry tells the operator', () => {
  it('an input refusal names the step and the fix: what to pass instead', () => {
    const h = home();
    const message = flushPendingSync({ a: { text: 7 } } as never, { home: h, logger: memoryLogger() }).failed[0];
    expect([message?.step, message?.hint]).toEqual(['serialize', 'pass a string, or an object with a string `text` (and JSON-serialisable fields).']);
    const input = flushOverflowSync([['k', ['v']]] as never, { home: h, logger: memoryLogger() }).failed[0];
    expect([input?.step, input?.hint]).toEqual(['serialize', 'pass a Map or a plain object of session_key → list of messages.']);
    const history = flushAgentHistorySync('s', 'x' as never, { home: h, logger: memoryLogger() }).failed[0];
    expect([history?.step, history?.hint]).toEqual(['serialize', 'pass a list of messages (or null).']);
  });
});

describe('flush: a message timestamp that is absent, null or not epoch seconds', () => {
  it('absent or null: no warning, the payload ts is the flush time; milliseconds: one warning, data keeps the value', () => {
    const h = home();
    const now = (): number => 1700000900;
    const quiet = flushPendingSync({ a: { text: 'x' }, b: { text: 'y', timestamp: null } as never }, { home: h, now });
    expect(quiet.warnings).toEqual([]);
    expect(quiet.written.map((w) => [w.sessionKey, w.ts])).toEqual([['a', 1700000900], ['b', 1700000900]]);
    const loud = flushPendingSync({ c: { text: 'z', timestamp: 1700000000000 } }, { home: h, now });
    expect(loud.warnings.map((w) => [w.code, w.sessionKey, w.message])).toEqual([
      [
        'ETIMESTAMP',
        'c',
        "the timestamp of a message for c is not epoch seconds (1700000000000 looks like epoch milliseconds, not seconds); the payload's ts is the flush time and data.timestamp keeps the value as given",
      ],
    ]);
    expect((readJson(loud.written[0]?.path ?? '') as { data: unknown }).data).toEqual({ text: 'z', timestamp: 1700000000000 });
    const transcript = spoolDroppedTranscriptMessageSync('s', { role: 'user', content: 'c' }, { home: h, now });
    expect([transcript.warnings, transcript.written.length]).toEqual([[], 1]);
  });
});

describe('flush: what counts as a Map or a plain object of sessions', () => {
  it('a null-prototype object is plain; a class instance, a string and null are refused; a Map key must be a string', () => {
    const h = home();
    const bare = Object.create(null) as Record<string, string>;
    bare.k = 'x';
    expect(flushPendingSync(bare, { home: h }).written.map((w) => w.sessionKey)).toEqual(['k']);
    class Sessions {
      k = 'x';
    }
    const expected = 'flushPendingSync takes a Map or a plain object of session_key → message, got ';
    for (const [input, got] of [
      [new Sessions(), 'a Sessions'],
      ['k', 'string "k"'],
      [null, 'null'],
    ] as const) {
      const report = flushPendingSync(input as never, { home: h, logger: memoryLogger() });
      expect(failedOf(report)).toEqual([['EINVALID_INPUT', 'pending', null, `${expected}${got}; nothing was written`]]);
      expect(report.written).toEqual([]);
    }
    const keyed = flushPendingSync(new Map<unknown, unknown>([[7, 'x'], ['ok', 'y']]) as never, { home: h, logger: memoryLogger() });
    expect(failedOf(keyed)).toEqual([['EINVALID_MESSAGE', 'pending', '7', 'not a pending message (the session key is number 7, not a string); nothing was written for it']]);
    expect(keyed.written.map((w) => w.sessionKey)).toEqual(['ok']);
    const queued = flushOverflowSync(new Map<unknown, unknown>([[7, ['x']], ['ok', ['y']]]) as never, { home: h, logger: memoryLogger() });
    expect(failedOf(queued)).toEqual([['EINVALID_MESSAGE', 'overflow', '7', 'not a pending message (the session key is number 7, not a string); nothing was written for it']]);
    expect(queued.written.map((w) => w.sessionKey)).toEqual(['ok']);
  });
});
