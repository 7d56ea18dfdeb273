import * as path from 'node:path';
import { modeOf } from '@hermes/test-utils';
import { describe, expect, it, vi } from 'vitest';
import type * as GatewayModule from '../src/index.js';
import { flushPending, flushPendingSync } from '../src/index.js';
import { memoryLogger, names, readJson, spoolDir, tempDir } from './helpers.js';

const KEY = 'agent:main:telegram:dm:42';
const NAME = /^pending-[0-9a-f]{32}\.json$/;
/** `process_id`: a random per-process id, 16 hex digits (README, payload fields). */
const PROCESS_ID: unknown = expect.stringMatching(/^[0-9a-f]{16}$/);

/**
 * A fresh instance of the package, so that its per-process `seq` counter starts at 0 and the values a test
 * expects are literals, whatever other tests of this file wrote before.
 */
async function freshGateway(): Promise<typeof GatewayModule> {
  vi.resetModules();
  return import('../src/index.js');
}

function homeIn(): string {
  return path.join(tempDir(), 'home');
}

describe('flushPending (pending slots)', () => {
  it.each([
    ['async', (g: typeof GatewayModule, p: Parameters<typeof flushPendingSync>[0], home: string) => g.flushPending(p, { home, now: () => 1700000000.25 })],
    ['sync', (g: typeof GatewayModule, p: Parameters<typeof flushPendingSync>[0], home: string) => Promise.resolve(g.flushPendingSync(p, { home, now: () => 1700000000.25 }))],
  ])('%s: one opaque, owner-only file per slot in the reference shape plus the version and ordering fields', async (_n, flush) => {
    const home = homeIn();
    const logger = memoryLogger();
    const report = await flush(await freshGateway(), { [KEY]: 'lost message', 'agent:main:discord:dm:7': { text: 'event', session_id: 's-7', timestamp: 1699999999.5, message_id: 'm1' } }, home);
    expect(report.failed).toEqual([]);
    expect(report.skipped).toEqual([]);
    expect(report.durable).toBe(true);
    expect(report.dir).toBe(path.join(home, 'pending_messages'));
    expect(report.written).toHaveLength(2);
    const files = names(spoolDir(home));
    expect(files).toHaveLength(2);
    for (const f of files) {
      expect(f).toMatch(NAME);
      expect(f).not.toContain(':');
      expect(f).not.toContain('telegram');
      expect(modeOf(path.join(spoolDir(home), f))).toBe('0600');
    }
    const [first, second] = report.written;
    expect(first?.mode).toBe(0o600);
    expect(report.written.map((w) => w.seq)).toEqual([0, 1]);
    expect(readJson(first?.path ?? '')).toEqual({
      schema_version: 1,
      kind: 'pending',
      ts: 1700000000.25,
      seq: 0,
      pid: process.pid,
      process_id: PROCESS_ID,
      session_key: KEY,
      reason: 'shutdown',
      data: { text: 'lost message' },
    });
    expect(readJson(second?.path ?? '')).toEqual({
      schema_version: 1,
      kind: 'pending',
      ts: 1699999999.5,
      seq: 1,
      pid: process.pid,
      process_id: PROCESS_ID,
      session_key: 'agent:main:discord:dm:7',
      reason: 'shutdown',
      data: { text: 'event', session_id: 's-7', timestamp: 1699999999.5, message_id: 'm1' },
    });
    // One process, one id.
    expect((readJson(first?.path ?? '') as { process_id: string }).process_id).toBe((readJson(second?.path ?? '') as { process_id: string }).process_id);
    expect(logger.lines).toEqual([]);
  });

  it('skips what holds nothing, reports it, and creates no directory for an empty flush', async () => {
    const home = homeIn();
    const report = await flushPending({ a: null, b: '', c: { text: '' }, d: undefined }, { home });
    expect(report.written).toEqual([]);
    expect(report.failed).toEqual([]);
    expect(report.skipped).toEqual([
      { kind: 'pending', sessionKey: 'a', reason: 'empty' },
      { kind: 'pending', sessionKey: 'b', reason: 'no-content' },
      { kind: 'pending', sessionKey: 'c', reason: 'no-content' },
      { kind: 'pending', sessionKey: 'd', reason: 'empty' },
    ]);
    expect(names(path.dirname(home))).toEqual([]);
  });

  it('writes a media-only event and the reason the caller gives; takes a Map as well as a record', () => {
    const home = homeIn();
    const report = flushPendingSync(new Map([[KEY, { media_urls: ['https://x/y.png'] }]]), { home, reason: 'adapter_shutdown' });
    expect(report.written).toHaveLength(1);
    expect(readJson(report.written[0]?.path ?? '')).toMatchObject({
      reason: 'adapter_shutdown',
      data: { media_urls: ['https://x/y.png'] },
    });
  });

  it('a value that is not a message is a failed entry with EINVALID_MESSAGE, logged with the fix', async () => {
    const home = homeIn();
    const logger = memoryLogger();
    const report = await flushPending({ ok: 'fine', bad: 42 as unknown as string, worse: { text: 7 } as unknown as string }, { home, logger });
    expect(report.written).toHaveLength(1);
    expect(report.failed.map((f) => [f.sessionKey, f.code, f.step])).toEqual([
      ['bad', 'EINVALID_MESSAGE', 'serialize'],
      ['worse', 'EINVALID_MESSAGE', 'serialize'],
    ]);
    expect(names(spoolDir(home))).toHaveLength(1);
    // One line per cause (code), with the count; the per-message detail is in the report.
    const errors = logger.lines.filter((l) => l.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toMatch(/^2 pending message\(s\) NOT written: EINVALID_MESSAGE at /);
    expect(errors[0]?.message).toContain('Fix: pass a string');
    expect(errors[0]?.fields).toMatchObject({ code: 'EINVALID_MESSAGE', count: 2 });
  });
});

describe('flushOverflow (FIFO tails)', () => {
  it('one file per queued event, in arrival order (seq and index); empty lists skipped, an empty key refused', async () => {
    const home = homeIn();
    const g = await freshGateway();
    const logger = memoryLogger();
    const report = await g.flushOverflow({ [KEY]: ['one', 'two', { text: 'three' }], '': ['refused'], empty: [] }, { home, now: () => 1700000000, logger });
    expect(report.written.map((w) => w.sessionKey)).toEqual([KEY, KEY, KEY]);
    // A message under an empty session key is not dropped silently: it is a failed entry, logged.
    expect(report.failed.map((f) => [f.sessionKey, f.code, f.message.split(' [')[0]])).toEqual([
      ['', 'EINVALID_MESSAGE', 'not a pending message (the session key is empty); nothing was written for it'],
    ]);
    expect(logger.lines.filter((l) => l.level === 'error')).toHaveLength(1);
    const payloads = report.written.map((w) => readJson(w.path) as Record<string, unknown>);
    expect(payloads.map((p) => [p.kind, p.index, (p.data as { text: string }).text, p.ts, p.seq])).toEqual([
      ['overflow', 0, 'one', 1700000000, 0],
      ['overflow', 1, 'two', 1700000000, 1],
      ['overflow', 2, 'three', 1700000000, 2],
    ]);
    expect(g.flushOverflowSync({}, { home }).written).toEqual([]);
  });
});

describe('cap-drop spool and agent-history snapshot', () => {
  it('spools an evicted transcript message in the reference cap-drop shape', async () => {
    const home = homeIn();
    const message = { role: 'assistant', content: 'evicted', tool_calls: [{ id: 'c1' }] };
    const g = await freshGateway();
    const reports = [
      await g.spoolDroppedTranscriptMessage('sess-1', message, { home, now: () => 1700000000 }),
      g.spoolDroppedTranscriptMessageSync('sess-1', message, { home, now: () => 1700000000 }),
    ];
    for (const [seq, report] of reports.entries()) {
      expect(report.written).toHaveLength(1);
      const p = readJson(report.written[0]?.path ?? '') as Record<string, unknown>;
      expect(p).toEqual({
        schema_version: 1,
        kind: 'transcript_cap_drop',
        ts: 1700000000,
        seq,
        pid: process.pid,
        process_id: PROCESS_ID,
        session_key: 'sess-1',
        reason: 'transcript_cap_drop',
        data: { session_id: 'sess-1', message },
      });
    }
  });

  it('writes the agent-history snapshot with issue, count and messages; an empty history writes nothing', async () => {
    const home = homeIn();
    const history = [{ role: 'user', content: 'u' }, 'a scalar', [1, 2]];
    const g = await freshGateway();
    const report = await g.flushAgentHistory('sess-1', history, { home, now: () => 1700000000 });
    const p = readJson(report.written[0]?.path ?? '') as Record<string, unknown>;
    expect(p).toEqual({
      schema_version: 1,
      kind: 'agent_history',
      ts: 1700000000,
      seq: 0,
      pid: process.pid,
      process_id: PROCESS_ID,
      reason: 'shutdown-with-unpersisted-agent-history',
      issue: '#72680',
      session_id: 'sess-1',
      count: 3,
      messages: history,
    });
    expect(g.flushAgentHistorySync(null, [], { home }).written).toEqual([]);
    expect(g.flushAgentHistorySync(null, null, { home }).written).toEqual([]);
    expect(names(spoolDir(home))).toHaveLength(1);
  });
});
