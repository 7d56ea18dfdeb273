/** Inputs and options a caller can get wrong: a typed error or a report entry, never silence or a wrong count. */
import * as path from 'node:path';
import { EPOCH_MAX as DB_EPOCH_MAX, EPOCH_MIN as DB_EPOCH_MIN, openSessionDb } from '@hermes/session-db';
import { describe, expect, it } from 'vitest';
import {
  agentHistoryMessages,
  EPOCH_MAX,
  EPOCH_MIN,
  flushAgentHistory,
  flushOverflow,
  flushPending,
  flushPendingSync,
  GatewayInputError,
  recoverPending,
  spoolDroppedTranscriptMessage,
} from '../src/index.js';
import { memoryLogger, names, readJson, spoolDir, tempDir } from './helpers.js';

const home = (): string => path.join(tempDir(), 'home');

describe('flush inputs', () => {
  it.each([
    ['a number', 42, 'number 42'],
    ['a string', 'abc', 'string "abc"'],
    ['null', null, 'null'],
    ['an array', [['k', 'v']], 'an array'],
    ['a Set', new Set(['k']), 'a Set'],
  ])('flushPending(%s): one EINVALID_INPUT failure, nothing written, logged', async (_what, input, described) => {
    const h = home();
    const logger = memoryLogger();
    const reports = [
      ['flushPending', await flushPending(input as never, { home: h, logger })],
      ['flushPendingSync', flushPendingSync(input as never, { home: h, logger })],
    ] as const;
    for (const [fn, report] of reports) {
      expect(report.written).toEqual([]);
      expect(report.failed.map((f) => [f.code, f.kind, f.message.split(' [')[0]])).toEqual([
        ['EINVALID_INPUT', 'pending', `${fn} takes a Map or a plain object of session_key → message, got ${described}; nothing was written`],
      ]);
    }
    expect(names(spoolDir(h))).toEqual([]);
    expect(logger.lines.filter((l) => l.level === 'error')).toHaveLength(2);
  });

  it('flushOverflow: a queue that is not a list, and a non-string Map key, are failed entries; the rest is written', async () => {
    const h = home();
    const logger = memoryLogger();
    const report = await flushOverflow(
      new Map<unknown, unknown>([
        ['ok', ['one']],
        ['bad', 'not a list'],
        [7, ['seven']],
      ]) as never,
      { home: h, logger },
    );
    expect(report.written.map((w) => w.sessionKey)).toEqual(['ok']);
    expect(report.failed.map((f) => [f.sessionKey, f.code, f.message.split(' [')[0]])).toEqual([
      ['bad', 'EINVALID_MESSAGE', 'not a pending message (the queue of bad is string "not a list", not a list); nothing was written for it'],
      ['7', 'EINVALID_MESSAGE', 'not a pending message (the session key is number 7, not a string); nothing was written for it'],
    ]);
  });

  it.each([Number.NaN, 0, -1, 1.5, '8'])('concurrency %s: a warning, the default used, every message written', async (concurrency) => {
    const h = home();
    const logger = memoryLogger();
    const report = await flushOverflow({ k: ['a', 'b', 'c'] }, { home: h, logger, concurrency: concurrency as number });
    expect(report.written).toHaveLength(3);
    expect(report.failed).toEqual([]);
    expect(report.warnings).toEqual([
      { code: 'EINVALID_OPTION', message: expect.stringMatching(/^concurrency must be a positive integer, got .*; used 32$/) as string, target: null, sessionKey: null },
    ]);
    expect(logger.lines.filter((l) => l.level === 'warn')).toHaveLength(1);
  });

  it('a timestamp in milliseconds: the message is written with the flush time as ts, and the report says so', async () => {
    const h = home();
    const logger = memoryLogger();
    const report = await flushPending(
      { ms: { text: 'ms', timestamp: 1700000000000 }, s: { text: 's', timestamp: 1700000000.5 } },
      { home: h, logger, now: () => 1700000100 },
    );
    expect(report.written.map((w) => [w.sessionKey, w.ts])).toEqual([
      ['ms', 1700000100],
      ['s', 1700000000.5],
    ]);
    expect(report.warnings).toEqual([
      {
        code: 'ETIMESTAMP',
        message:
          "the timestamp of a message for ms is not epoch seconds (1700000000000 looks like epoch milliseconds, not seconds); the payload's ts is the flush time and data.timestamp keeps the value as given",
        target: report.written[0]?.path,
        sessionKey: 'ms',
      },
    ]);
    expect((readJson(report.written[0]?.path ?? '') as { data: { timestamp: number } }).data.timestamp).toBe(1700000000000);
  });

  it('a clock in milliseconds (now: Date.now) is refused with a warning: ts stays epoch seconds', async () => {
    const h = home();
    const report = await flushPending({ k: 'x' }, { home: h, logger: memoryLogger(), now: () => Date.now() });
    expect(report.warnings.map((w) => w.code)).toEqual(['EINVALID_OPTION']);
    expect(report.warnings[0]?.message).toMatch(/^now\(\) must return epoch seconds: \d+ looks like epoch milliseconds, not seconds; used the system clock$/);
    const ts = report.written[0]?.ts ?? 0;
    expect(ts).toBeGreaterThan(EPOCH_MIN);
    expect(ts).toBeLessThan(EPOCH_MAX);
  });

  it('a cap-drop message with a millisecond timestamp: written, with a warning; recovery stores the payload ts', async () => {
    const h = home();
    const report = await spoolDroppedTranscriptMessage('sess', { role: 'assistant', content: 'x', timestamp: 1700000000000 }, { home: h, logger: memoryLogger(), now: () => 1700000200 });
    expect(report.written).toHaveLength(1);
    expect(report.warnings.map((w) => w.code)).toEqual(['ETIMESTAMP']);
    const db = openSessionDb({ home: h });
    db.createSession({ id: 'sess', source: 'cli', startedAt: 1700000000 });
    expect(recoverPending({ home: h, store: db, logger: memoryLogger() }).inserted).toHaveLength(1);
    expect(db.exportSession('sess')?.messages.map((m) => m.timestamp)).toEqual([1700000200]);
    db.close();
  });

  it('flushAgentHistory with something that is not a list: EINVALID_INPUT', async () => {
    const report = await flushAgentHistory('s', 'history' as never, { home: home(), logger: memoryLogger() });
    expect(report.failed.map((f) => f.code)).toEqual(['EINVALID_INPUT']);
  });

  it("the epoch window is session-db's", () => {
    expect([EPOCH_MIN, EPOCH_MAX]).toEqual([DB_EPOCH_MIN, DB_EPOCH_MAX]);
    expect([EPOCH_MIN, EPOCH_MAX]).toEqual([946684800, 4102444800]);
  });
});

describe('recovery inputs', () => {
  it('batchSize NaN: an EINVALID_OPTION error entry, the default used, every file recovered', () => {
    const h = home();
    const db = openSessionDb({ home: h });
    db.createSession({ id: 's', source: 'cli', startedAt: 1700000000 });
    flushPendingSync({ a: { text: 'one', session_id: 's' }, b: { text: 'two', session_id: 's' } }, { home: h });
    const report = recoverPending({ home: h, store: db, logger: memoryLogger(), batchSize: Number.NaN });
    expect(report.errors.map((e) => [e.code, e.message])).toEqual([['EINVALID_OPTION', 'batchSize must be a positive integer, got NaN; used 1024']]);
    expect(report.inserted).toHaveLength(2);
    db.close();
  });

  it('no usable store: one EINVALID_OPTION error, nothing read or changed', () => {
    const h = home();
    flushPendingSync({ a: { text: 'one', session_id: 's' } }, { home: h });
    const logger = memoryLogger();
    const report = recoverPending({ home: h, store: {} as never, logger });
    expect(report.errors.map((e) => e.code)).toEqual(['EINVALID_OPTION']);
    expect(report.scanned).toBe(0);
    expect(names(spoolDir(h))).toHaveLength(1);
    expect(logger.lines.map((l) => l.level)).toEqual(['error']);
  });
});

describe('agentHistoryMessages: a snapshot exported as what it holds', () => {
  it('objects stay messages, str(obj) entries are text, other values their JSON; nothing dropped', () => {
    const payload = {
      reason: 'shutdown-with-unpersisted-agent-history',
      messages: [
        { role: 'user', content: 'hi' },
        "ChatCompletionMessage(content='hello', role='assistant', tool_calls=None)",
        { content: 'no role' },
        42,
        [1, 2],
        null,
      ],
    };
    expect(agentHistoryMessages(payload)).toEqual([
      { role: 'user', content: 'hi', origin: 'message' },
      { role: 'unknown', content: "ChatCompletionMessage(content='hello', role='assistant', tool_calls=None)", origin: 'text' },
      { role: 'unknown', content: 'no role', origin: 'message' },
      { role: 'unknown', content: '42', origin: 'value' },
      { role: 'unknown', content: '[1,2]', origin: 'value' },
      { role: 'unknown', content: 'null', origin: 'value' },
    ]);
  });

  it('a payload without a messages list is a typed error', () => {
    expect(() => agentHistoryMessages({ messages: 'x' })).toThrow(GatewayInputError);
    expect(() => agentHistoryMessages(null)).toThrow('an agent-history snapshot has a messages list; this one has no object but null');
  });
});
