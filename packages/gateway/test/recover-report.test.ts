/**
 * Every outcome of a recovery pass pinned to what an operator reads: the report entry (reason and detail), the
 * rows the store receives, and the log lines (one per cause, never one per file). A spool holding one file of
 * each kind and a real session database; a store double for the verdicts a real database gives only when it
 * fails (rejected rows, a checkpoint held off, a store that breaks mid-pass).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openSessionDb } from '@hermes/session-db';
import { itNeeds } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import { recoverPending, type RecoveryBatchEntry, type RecoveryCommitOutcome, type SessionStore } from '../src/index.js';
import { type LogLine, memoryLogger, names, spoolDir, tempDir, writeSpoolFile } from './helpers.js';

const SESSION = { id: 'sess-r', source: 'telegram', sessionKey: 'agent:main:telegram:dm:r', startedAt: 1700000000 };
const HISTORY = 'shutdown-with-unpersisted-agent-history';

const json = (v: unknown): string => JSON.stringify(v);
const base = (p: unknown): unknown => (typeof p === 'string' ? path.basename(p) : p);
/** A log line with its `path` field reduced to the file name (the temp directory differs per run). */
const line = (l: LogLine): [string, string, Record<string, unknown>] => [l.level, l.message, { ...l.fields, path: base(l.fields?.path) }];

function newHome(): string {
  const home = path.join(tempDir(), 'home');
  fs.mkdirSync(home);
  return home;
}

describe('recovery: every reason a file is kept, as the report and the log say it', () => {
  it('one file per outcome: kept with its reason and detail, inserted, left as a snapshot; one log line per reason', () => {
    const home = newHome();
    const db = openSessionDb({ home });
    db.createSession(SESSION);
    const files: Record<string, string> = {
      'a.json': '{"kind": "pending", ',
      'b.json': '[1]',
      'c.json': '7',
      'd.json': json({ schema_version: 2, kind: 'pending', ts: 1700000001, data: { text: 'v2', session_id: SESSION.id } }),
      'd0.json': json({ schema_version: 0, kind: 'pending', ts: 1700000001, data: { text: 'v0', session_id: SESSION.id } }),
      'd1.json': json({ schema_version: 1.5, kind: 'pending', ts: 1700000001, data: { text: 'v1.5', session_id: SESSION.id } }),
      'd2.json': json({ schema_version: '1', kind: 'pending', ts: 1700000001, data: { text: 'vs', session_id: SESSION.id } }),
      'e.json': json({ hello: 'world' }),
      'f.json': json({ kind: 'pending', ts: 1700000002, data: { media_urls: ['u'] } }),
      'f2.json': json({ kind: 'pending', ts: 1700000002, data: 'text' }),
      'g.json': json({ reason: 'transcript_cap_drop', ts: 1700000003, data: { session_id: SESSION.id, message: 'not an object' } }),
      'g2.json': json({ reason: 'transcript_cap_drop', ts: 1700000003, data: { session_id: '', message: {} } }),
      'h.json': json({ kind: 'pending', ts: 1700000004, session_key: '', data: { text: 'no key', session_id: '' } }),
      'i.json': json({ kind: 'pending', ts: 1700000005, session_key: 'agent:main:telegram:dm:nobody', data: { text: 'unresolved' } }),
      'i2.json': json({ kind: 'pending', ts: 'later', session_key: 'empty', data: { text: 'resolves to ""' } }),
      'j.json': json({ kind: 'pending', ts: 1700000006, session_key: 'throw', data: { text: 'resolver throws' } }),
      'k.json': json({ kind: 'pending', ts: 1700000007, data: { text: 'no such session', session_id: 'sess-missing' } }),
      'l.json': json({ reason: HISTORY, ts: 1700000008, session_id: SESSION.id, count: 5, messages: [{}, {}] }),
      'l2.json': json({ reason: HISTORY, ts: 1700000008, session_id: 7, messages: [{}, {}] }),
      'l3.json': json({ reason: HISTORY, ts: 1700000008, messages: 'none' }),
      'o.json': json({ schema_version: 1, kind: 'pending', ts: 1700000009, session_key: SESSION.sessionKey, data: { text: 'resolved by key' } }),
      'p.json': json({ kind: 'overflow', ts: 1700000010, seq: 0, session_key: 'not used', data: { text: 'direct', session_id: SESSION.id } }),
    };
    for (const [name, text] of Object.entries(files)) writeSpoolFile(home, name, text);
    fs.mkdirSync(path.join(spoolDir(home), 'm.json'));
    fs.symlinkSync('p.json', path.join(spoolDir(home), 'n.json'));
    writeSpoolFile(home, 'not-a-payload.txt', 'ignored');
    const logger = memoryLogger();
    const calls: [string, number | undefined][] = [];
    const report = recoverPending({
      home,
      store: db,
      logger,
      resolveSessionId: (key, notAfter) => {
        calls.push([key, notAfter]);
        if (key === 'throw') throw new Error('resolver down');
        if (key === 'empty') return '';
        return key === SESSION.sessionKey ? SESSION.id : null;
      },
    });
    expect(report.scanned).toBe(24);
    expect(report.kept.map((k) => [base(k.path), k.reason, k.detail])).toEqual([
      ['a.json', 'unparseable', 'a.json: expected a property name at position 20'],
      ['m.json', 'not-a-regular-file', 'm.json is not a regular file'],
      ['n.json', 'not-a-regular-file', 'n.json is not a regular file'],
      ['b.json', 'not-an-object', 'b.json holds an array'],
      ['c.json', 'not-an-object', 'c.json holds number'],
      ['e.json', 'unknown-kind', 'not a pending, overflow, cap-drop or agent-history payload'],
      ['i2.json', 'unresolved', 'session_key empty resolves to no session'],
      ['d.json', 'unknown-schema-version', 'schema_version 2 is not one this version reads (<= 1)'],
      ['d0.json', 'unknown-schema-version', 'schema_version 0 is not one this version reads (<= 1)'],
      ['d1.json', 'unknown-schema-version', 'schema_version 1.5 is not one this version reads (<= 1)'],
      ['d2.json', 'unknown-schema-version', 'schema_version "1" is not one this version reads (<= 1)'],
      ['f.json', 'no-text', 'data.text is missing or empty'],
      ['f2.json', 'no-text', 'data.text is missing or empty'],
      ['g.json', 'invalid-cap-drop', 'needs data.session_id and an object data.message'],
      ['g2.json', 'invalid-cap-drop', 'needs data.session_id and an object data.message'],
      ['h.json', 'unresolved', 'no data.session_id and no session_key'],
      ['i.json', 'unresolved', 'session_key agent:main:telegram:dm:nobody resolves to no session'],
      ['j.json', 'resolver-error', 'resolving throw failed: resolver down'],
      ['k.json', 'unknown-session', 'session sess-missing does not exist in the store'],
    ]);
    expect(report.inserted.map((e) => [base(e.path), e.kind, e.sessionId, e.rowIds, e.removed])).toEqual([
      ['o.json', 'pending', 'sess-r', [1], true],
      ['p.json', 'overflow', 'sess-r', [2], true],
    ]);
    expect(report.snapshots.map((s) => [base(s.path), s.sessionId, s.count])).toEqual([
      ['l.json', 'sess-r', 5],
      ['l2.json', null, 2],
      ['l3.json', null, null],
    ]);
    expect([report.alreadyCommitted, report.bad, report.foreignOwner, report.errors]).toEqual([[], [], [], []]);
    // The resolver is asked with the payload's ts as the latest start a session may have; a ts that is not a
    // number gives it no bound. A payload that names its session is never resolved by key.
    expect(calls).toEqual([
      ['empty', undefined],
      ['agent:main:telegram:dm:nobody', 1700000005],
      ['throw', 1700000006],
      ['agent:main:telegram:dm:r', 1700000009],
    ]);
    expect(db.exportSession(SESSION.id)?.messages.map((m) => [m.role, m.content, m.timestamp])).toEqual([
      ['user', 'resolved by key', 1700000009],
      ['user', 'direct', 1700000010],
    ]);
    db.close();
    expect(names(spoolDir(home))).toEqual([...Object.keys(files).filter((n) => n !== 'o.json' && n !== 'p.json'), 'm.json', 'n.json', 'not-a-payload.txt'].sort());
    const kept = (n: number, reason: string, first: string, detail: string): [string, string, Record<string, unknown>] => [
      'warn',
      `pending-message recovery: kept ${String(n)} file(s) (${reason}); the first, ${first}: ${detail}`,
      { path: first, reason, kept: n },
    ];
    expect(logger.lines.map(line)).toEqual([
      kept(1, 'unparseable', 'a.json', 'a.json: expected a property name at position 20'),
      kept(2, 'not-a-regular-file', 'm.json', 'm.json is not a regular file'),
      kept(2, 'not-an-object', 'b.json', 'b.json holds an array'),
      kept(1, 'unknown-kind', 'e.json', 'not a pending, overflow, cap-drop or agent-history payload'),
      kept(3, 'unresolved', 'i2.json', 'session_key empty resolves to no session'),
      kept(4, 'unknown-schema-version', 'd.json', 'schema_version 2 is not one this version reads (<= 1)'),
      kept(2, 'no-text', 'f.json', 'data.text is missing or empty'),
      kept(2, 'invalid-cap-drop', 'g.json', 'needs data.session_id and an object data.message'),
      kept(1, 'resolver-error', 'j.json', 'resolving throw failed: resolver down'),
      kept(1, 'unknown-session', 'k.json', 'session sess-missing does not exist in the store'),
      ['warn', 'pending-message recovery: 3 agent-history snapshot(s) left for the operator (never replayed automatically)', { path: 'pending_messages' }],
      ['warn', 'pending-message recovery: 2 inserted, 0 already committed, 19 kept, 0 bad, 3 snapshot(s), 0 foreign, 0 error(s)', { path: 'pending_messages' }],
    ]);
  });
});

describe('recovery: the row a dropped transcript message becomes', () => {
  it('every field of the message is stored; a missing role is "unknown", a null content "", a timestamp that is not epoch seconds the payload ts', () => {
    const home = newHome();
    const db = openSessionDb({ home });
    db.createSession(SESSION);
    const drop = (message: Record<string, unknown>, ts: number): string =>
      json({ kind: 'transcript_cap_drop', reason: 'transcript_cap_drop', ts, session_key: SESSION.sessionKey, data: { session_id: SESSION.id, message } });
    writeSpoolFile(home, 'x1.json', drop({ content: null, timestamp: 1700000000000 }, 1700000100));
    writeSpoolFile(
      home,
      'x2.json',
      drop(
        {
          role: 'assistant',
          content: 'done',
          timestamp: 1700000050,
          tool_call_id: 'call-1',
          tool_calls: [{ id: 'call-1', name: 'search' }],
          tool_name: 'search',
          token_count: 12,
          finish_reason: 'stop',
          platform_message_id: 'pm-9',
        },
        1700000200,
      ),
    );
    writeSpoolFile(home, 'x3.json', drop({ role: 'user', content: '' }, 1700000300));
    const report = recoverPending({ home, store: db, logger: memoryLogger() });
    expect(report.inserted.map((e) => [base(e.path), e.kind, e.sessionId])).toEqual([
      ['x1.json', 'transcript_cap_drop', 'sess-r'],
      ['x2.json', 'transcript_cap_drop', 'sess-r'],
      ['x3.json', 'transcript_cap_drop', 'sess-r'],
    ]);
    expect(db.exportSession(SESSION.id)?.messages.map(({ id: _id, session_id: _s, ...m }) => m)).toEqual([
      {
        role: 'assistant',
        content: 'done',
        timestamp: 1700000050,
        tool_call_id: 'call-1',
        tool_calls: [{ id: 'call-1', name: 'search' }],
        tool_name: 'search',
        token_count: 12,
        finish_reason: 'stop',
        platform_message_id: 'pm-9',
      },
      { role: 'unknown', content: '', timestamp: 1700000100 },
      { role: 'user', content: '', timestamp: 1700000300 },
    ]);
    db.close();
  });
});

interface Double extends SessionStore {
  readonly batches: string[][];
  readonly receipts: Set<string>;
}

/**
 * A store whose verdict on each file is scripted by its name (`verdict`), that remembers every committed
 * receipt, and whose checkpoint answers `checkpoint` (a function, so a test can make it throw).
 */
function storeDouble(verdict: (e: RecoveryBatchEntry) => RecoveryCommitOutcome | undefined, checkpoint?: () => { complete: boolean; busy?: boolean }, extra: Partial<SessionStore> = {}): Double {
  const receipts = new Set<string>();
  const batches: string[][] = [];
  let row = 0;
  return {
    path: '/srv/hermes/state.db',
    batches,
    receipts,
    hasReceipt: (id) => receipts.has(id),
    commitRecovered: (entries) => {
      batches.push(entries.map((e) => e.fileName));
      const out: RecoveryCommitOutcome[] = [];
      for (const e of entries) {
        const v: RecoveryCommitOutcome = receipts.has(e.receiptId)
          ? { receiptId: e.receiptId, status: 'duplicate' }
          : (verdict(e) ?? { receiptId: e.receiptId, status: 'inserted', rowIds: e.rows.map(() => ++row) });
        if (v.status === 'inserted') receipts.add(e.receiptId);
        out.push(v);
      }
      return out;
    },
    ...(checkpoint === undefined ? {} : { checkpoint }),
    ...extra,
  };
}

const payload = (text: string, ts: number): string => json({ kind: 'pending', ts, data: { text, session_id: SESSION.id } });

describe('recovery: the verdicts of a store, and a store that fails', () => {
  it('rejected rows are renamed .bad (never over an existing .bad), an unknown session and a missing verdict are kept, a duplicate is removed', () => {
    const home = newHome();
    const spool = (n: string, ts: number): string => writeSpoolFile(home, n, payload(n, ts));
    spool('r1.json', 1700000001);
    spool('r2.json', 1700000002);
    writeSpoolFile(home, 'r2.json.bad', 'an earlier rejected copy');
    spool('u1.json', 1700000003);
    spool('dup.json', 1700000004);
    spool('none.json', 1700000005);
    spool('ok.json', 1700000006);
    const store = storeDouble((e) => {
      const name = e.fileName;
      if (name.startsWith('r')) return { receiptId: e.receiptId, status: 'rejected', error: `role of ${name} is not a string` };
      if (name === 'u1.json') return { receiptId: e.receiptId, status: 'unknown-session', sessionId: 'sess-gone' };
      if (name === 'dup.json') return { receiptId: e.receiptId, status: 'duplicate' };
      if (name === 'none.json') return { receiptId: 'another receipt', status: 'duplicate' };
      return undefined;
    }, () => ({ complete: true }));
    const logger = memoryLogger();
    const report = recoverPending({ home, store, logger });
    expect(store.batches).toEqual([['r1.json', 'r2.json', 'u1.json', 'dup.json', 'none.json', 'ok.json']]);
    const bad2 = report.bad[1]?.badPath ?? '';
    expect(path.basename(bad2)).toMatch(/^r2\.json\.[0-9a-z]+\.bad$/);
    expect(report.bad.map((b) => [base(b.path), base(b.badPath), b.error])).toEqual([
      ['r1.json', 'r1.json.bad', 'role of r1.json is not a string'],
      ['r2.json', path.basename(bad2), 'role of r2.json is not a string'],
    ]);
    expect(fs.readFileSync(path.join(spoolDir(home), 'r2.json.bad'), 'utf8')).toBe('an earlier rejected copy');
    expect(report.kept.map((k) => [base(k.path), k.reason, k.detail])).toEqual([
      ['u1.json', 'unknown-session', 'session sess-gone does not exist in the store'],
      ['none.json', 'store-error', 'the store returned no outcome for this file'],
    ]);
    expect(report.alreadyCommitted.map((a) => [base(a.path), a.removed])).toEqual([['dup.json', true]]);
    expect(report.inserted.map((a) => [base(a.path), a.rowIds, a.removed])).toEqual([['ok.json', [1], true]]);
    expect(names(spoolDir(home))).toEqual(['none.json', 'r1.json.bad', 'r2.json.bad', path.basename(bad2), 'u1.json'].sort());
    expect(logger.lines.map(line)).toEqual([
      ['warn', 'pending-message recovery: kept 1 file(s) (unknown-session); the first, u1.json: session sess-gone does not exist in the store', { path: 'u1.json', reason: 'unknown-session', kept: 1 }],
      ['warn', 'pending-message recovery: kept 1 file(s) (store-error); the first, none.json: the store returned no outcome for this file', { path: 'none.json', reason: 'store-error', kept: 1 }],
      ['warn', 'pending-message recovery: 2 file(s) rejected by the session store, renamed .bad; the first: role of r1.json is not a string', { path: 'r1.json.bad' }],
      ['warn', 'pending-message recovery: 1 inserted, 1 already committed, 2 kept, 2 bad, 0 snapshot(s), 0 foreign, 0 error(s)', { path: 'pending_messages' }],
    ]);
  });

  it('a checkpoint another connection holds off: committed files wait for a later batch, and are kept at the end of the pass', () => {
    const home = newHome();
    for (let i = 0; i < 3; i++) writeSpoolFile(home, `c${String(i)}.json`, payload(`c${String(i)}`, 1700000001 + i));
    // One answer per batch, then the pass's last try before it ends.
    const answers = [{ complete: false, busy: true }, { complete: true }, { complete: false }, { complete: false, busy: true }];
    const store = storeDouble(() => undefined, () => answers.shift() ?? { complete: true });
    const logger = memoryLogger();
    const progress: [number, number][] = [];
    const report = recoverPending({ home, store, logger, batchSize: 1, checkpointRetryMs: 0, onProgress: (d, t) => progress.push([d, t]) });
    expect(store.batches).toEqual([['c0.json'], ['c1.json'], ['c2.json']]);
    expect(progress).toEqual([[1, 3], [2, 3], [3, 3], [3, 3]]);
    // c0 waited through the first (held-off) checkpoint and went with c1's; c2's did not complete, nor did the last try.
    expect(report.inserted.map((e) => [base(e.path), e.removed])).toEqual([['c0.json', true], ['c1.json', true], ['c2.json', false]]);
    expect(report.kept.map((k) => [base(k.path), k.reason, k.detail])).toEqual([
      ['c2.json', 'checkpoint-pending', 'the checkpoint of /srv/hermes/state.db did not complete (another connection was checkpointing it)'],
    ]);
    expect(names(spoolDir(home))).toEqual(['c2.json']);
    expect(logger.lines.map(line)).toEqual([
      [
        'warn',
        'pending-message recovery: kept 1 file(s) (checkpoint-pending): committed; the next pass removes them without inserting them again; the first, c2.json: the checkpoint of /srv/hermes/state.db did not complete (another connection was checkpointing it)',
        { path: 'c2.json', reason: 'checkpoint-pending', kept: 1 },
      ],
      ['warn', 'pending-message recovery: 3 inserted, 0 already committed, 1 kept, 0 bad, 0 snapshot(s), 0 foreign, 0 error(s)', { path: 'pending_messages' }],
    ]);
    // The next pass removes it without inserting it again.
    const again = recoverPending({ home, store, logger: memoryLogger() });
    expect([again.inserted, again.alreadyCommitted.map((a) => [base(a.path), a.removed])]).toEqual([[], [['c2.json', true]]]);
    expect(names(spoolDir(home))).toEqual([]);
  });

  it('a store that throws: the first failure is named once with its own path and fix, every later file is kept', () => {
    const home = newHome();
    for (let i = 0; i < 4; i++) writeSpoolFile(home, `s${String(i)}.json`, payload(`s${String(i)}`, 1700000001 + i));
    writeSpoolFile(home, 's9.json', json({ kind: 'pending', ts: 1700000009, data: { text: '' } }));
    const failure = Object.assign(new Error('database disk image is malformed'), { code: 'SQLITE_CORRUPT', path: '/srv/hermes/state.db', hint: 'restore state.db from a backup.' });
    let commits = 0;
    const store = storeDouble(() => undefined, undefined, {
      commitRecovered: (entries) => {
        commits++;
        if (commits === 2) throw failure;
        return entries.map((e, i) => ({ receiptId: e.receiptId, status: 'inserted' as const, rowIds: [i + 1] }));
      },
    });
    const logger = memoryLogger();
    const progress: [number, number][] = [];
    const report = recoverPending({ home, store, logger, batchSize: 2, onProgress: (d, t) => progress.push([d, t]) });
    expect(progress).toEqual([[2, 5], [4, 5], [5, 5]]);
    expect(report.inserted.map((e) => [base(e.path), e.removed])).toEqual([['s0.json', true], ['s1.json', true]]);
    expect(report.kept.map((k) => [base(k.path), k.reason, k.detail])).toEqual([
      ['s2.json', 'store-error', 'database disk image is malformed'],
      ['s3.json', 'store-error', 'database disk image is malformed'],
      ['s9.json', 'store-error', 'the session store failed earlier in this pass'],
    ]);
    expect(report.errors).toEqual([{ path: '/srv/hermes/state.db', code: 'SQLITE_CORRUPT', message: 'database disk image is malformed', hint: 'restore state.db from a backup.' }]);
    const uid = String(process.geteuid?.() ?? -1);
    expect(logger.lines.map(line)).toEqual([
      [
        'error',
        `pending-message recovery: 2 file(s) committed, then the store failed; kept 3 file(s): SQLITE_CORRUPT at /srv/hermes/state.db (uid ${uid}): database disk image is malformed — fix: restore state.db from a backup.`,
        { path: 'state.db', code: 'SQLITE_CORRUPT', uid: Number(uid), kept: 3, committed: 2 },
      ],
      ['warn', 'pending-message recovery: 2 inserted, 0 already committed, 3 kept, 0 bad, 0 snapshot(s), 0 foreign, 1 error(s)', { path: 'pending_messages' }],
    ]);
    expect(names(spoolDir(home))).toEqual(['s2.json', 's3.json', 's9.json']);
  });
});

describe('recovery: options it cannot use', () => {
  it('no usable store: the report, the line and the fix name what is needed; the progress bar is told (0, 0); nothing is read', () => {
    const home = newHome();
    writeSpoolFile(home, 'a.json', payload('a', 1700000001));
    for (const [store, got] of [
      [{}, 'an object'],
      [null, 'null'],
      [{ hasReceipt: () => false }, 'an object'],
      [{ commitRecovered: () => [] }, 'an object'],
    ] as const) {
      const logger = memoryLogger();
      const progress: [number, number][] = [];
      const report = recoverPending({ home, store: store as never, logger, onProgress: (d, t) => progress.push([d, t]) });
      const message = `recoverPending needs a store with hasReceipt() and commitRecovered(), got ${got}; nothing was read or changed`;
      const hint = 'pass `store: openSessionDb({ home })` (or another SessionStore).';
      expect(report).toEqual({ dir: home, scanned: 0, counts: { inserted: 0, rows: 0, alreadyCommitted: 0, duplicates: 0 }, inserted: [], alreadyCommitted: [], duplicates: [], kept: [], bad: [], snapshots: [], foreignOwner: [], errors: [{ path: home, code: 'EINVALID_OPTION', message, hint }], salvage: null, batches: [] });
      expect(logger.lines.map((l) => [l.level, l.message, l.fields])).toEqual([
        ['error', `pending-message recovery: EINVALID_OPTION at ${home}: ${message} — fix: ${hint}`, { path: home, code: 'EINVALID_OPTION' }],
      ]);
      expect(progress).toEqual([[0, 0]]);
    }
    expect(names(spoolDir(home))).toEqual(['a.json']);
  });

  it('a batch size that is not a positive integer: the default, and an error that says which and how to fix it', () => {
    const home = newHome();
    for (let i = 0; i < 3; i++) writeSpoolFile(home, `b${String(i)}.json`, payload(`b${String(i)}`, 1700000001 + i));
    const store = storeDouble(() => undefined, () => ({ complete: true }));
    const logger = memoryLogger();
    const report = recoverPending({ home, store, logger, batchSize: 0 });
    expect(store.batches).toEqual([['b0.json', 'b1.json', 'b2.json']]);
    expect(report.errors).toEqual([{ path: spoolDir(home), code: 'EINVALID_OPTION', message: 'batchSize must be a positive integer, got number 0; used 1024', hint: 'pass a positive integer batchSize, or omit it.' }]);
    const uid = String(process.geteuid?.() ?? -1);
    expect(logger.lines.map(line)).toEqual([
      [
        'error',
        `pending-message recovery: 1 error(s): EINVALID_OPTION at ${spoolDir(home)} (uid ${uid}): batchSize must be a positive integer, got number 0; used 1024 — fix: pass a positive integer batchSize, or omit it.`,
        { path: 'pending_messages', code: 'EINVALID_OPTION', uid: Number(uid), count: 1 },
      ],
      ['warn', 'pending-message recovery: 3 inserted, 0 already committed, 0 kept, 0 bad, 0 snapshot(s), 0 foreign, 1 error(s)', { path: 'pending_messages' }],
    ]);
    const quiet = memoryLogger();
    writeSpoolFile(home, 'q.json', payload('q', 1700000009));
    recoverPending({ home, store, logger: quiet, batchSize: 1 });
    expect(quiet.lines.map(line)).toEqual([['info', 'pending-message recovery: 1 inserted, 0 already committed, 0 kept, 0 bad, 0 snapshot(s), 0 foreign, 0 error(s)', { path: 'pending_messages' }]]);
  });

  it('a progress callback that throws: one warning per call naming what it threw, the pass unchanged', () => {
    const home = newHome();
    writeSpoolFile(home, 'a.json', payload('a', 1700000001));
    const store = storeDouble(() => undefined, () => ({ complete: true }));
    const logger = memoryLogger();
    const report = recoverPending({
      home,
      store,
      logger,
      onProgress: () => {
        throw new Error('progress bar gone');
      },
    });
    expect(report.inserted).toHaveLength(1);
    expect(logger.lines.map(line)).toEqual([
      ['warn', 'pending-message recovery: the progress callback threw: progress bar gone', { path: 'pending_messages' }],
      ['warn', 'pending-message recovery: the progress callback threw: progress bar gone', { path: 'pending_messages' }],
      ['info', 'pending-message recovery: 1 inserted, 0 already committed, 0 kept, 0 bad, 0 snapshot(s), 0 foreign, 0 error(s)', { path: 'pending_messages' }],
    ]);
  });
});

describe('recovery: batches bounded by their text as well as their count', () => {
  it('four 3 MiB payloads: the batch is committed once its text reaches 8 MiB, i.e. after the third', () => {
    const home = newHome();
    const big = 'x'.repeat(3 * 1024 * 1024);
    for (let i = 0; i < 4; i++) writeSpoolFile(home, `t${String(i)}.json`, payload(`${String(i)}${big}`, 1700000001 + i));
    const store = storeDouble(() => undefined, () => ({ complete: true }));
    const progress: [number, number][] = [];
    const report = recoverPending({ home, store, logger: memoryLogger(), onProgress: (d, t) => progress.push([d, t]) });
    expect(store.batches).toEqual([['t0.json', 't1.json', 't2.json'], ['t3.json']]);
    expect(progress).toEqual([[3, 4], [4, 4], [4, 4]]);
    expect(report.inserted.map((e) => [base(e.path), e.removed])).toEqual([['t0.json', true], ['t1.json', true], ['t2.json', true], ['t3.json', true]]);
  });
});

const summary = (lines: readonly LogLine[]): [string, string][] => lines.filter((l) => l.message.startsWith('pending-message recovery:')).map((l) => [l.level, l.message]);

describe('recovery: what happens around the store', () => {
  it('salvage off leaves a temp alone (salvage: null); salvage options reach the salvage, and an adopted payload is inserted and said so', () => {
    const home = newHome();
    const dir = spoolDir(home);
    const id = '0123456789abcdef0123456789abcdef';
    const temp = writeSpoolFile(home, `.pending-${id}_a1b_c9zq.tmp`, payload('from a temp', 1700000001));
    const store = storeDouble(() => undefined, () => ({ complete: true }));
    const off = recoverPending({ home, store, logger: memoryLogger(), salvage: false });
    expect([off.salvage, off.scanned, off.inserted]).toEqual([null, 0, []]);
    // A temp without a pid in its name is left while it is young (the default), adopted once `now` says it is old.
    const young = recoverPending({ home, store, logger: memoryLogger(), salvage: {} });
    expect([young.salvage?.left.map((l) => [path.basename(l.temp), l.reason]), young.scanned]).toEqual([[[path.basename(temp), 'too-recent']], 0]);
    expect(names(dir)).toEqual([path.basename(temp)]);
    const logger = memoryLogger();
    const old = recoverPending({ home, store, logger, salvage: { now: Date.now() + 120_000 } });
    expect(old.salvage?.adopted.map((a) => path.basename(a.path))).toEqual([`pending-${id}.json`]);
    expect(old.inserted.map((e) => [base(e.path), e.removed])).toEqual([[`pending-${id}.json`, true]]);
    expect(summary(logger.lines)).toEqual([
      ['warn', 'pending-message recovery: 1 inserted (1 adopted from temp files), 0 already committed, 0 kept, 0 bad, 0 snapshot(s), 0 foreign, 0 error(s)'],
    ]);
    expect(names(dir)).toEqual([]);
  });

  it('a file committed by an earlier pass that this pass would keep (its key no longer resolves): removed, nothing inserted', () => {
    const home = newHome();
    writeSpoolFile(home, 'k.json', json({ kind: 'pending', ts: 1700000001, session_key: SESSION.sessionKey, data: { text: 'by key' } }));
    const store = storeDouble(() => undefined, () => ({ complete: false }));
    const first = recoverPending({ home, store, logger: memoryLogger(), resolveSessionId: () => SESSION.id });
    expect([first.inserted.map((e) => [base(e.path), e.sessionId, e.removed]), first.kept.map((k) => k.reason)]).toEqual([[['k.json', SESSION.id, false]], ['checkpoint-pending']]);
    const logger = memoryLogger();
    const second = recoverPending({ home, store: { ...store, checkpoint: () => ({ complete: true }) }, logger, resolveSessionId: () => null });
    expect([second.inserted, second.kept, second.alreadyCommitted.map((a) => [base(a.path), a.removed])]).toEqual([[], [], [['k.json', true]]]);
    expect(store.batches).toEqual([['k.json']]);
    expect(summary(logger.lines)).toEqual([['info', 'pending-message recovery: 0 inserted, 1 already committed, 0 kept, 0 bad, 0 snapshot(s), 0 foreign, 0 error(s)']]);
    expect(names(spoolDir(home))).toEqual([]);
  });

  it('a store without checkpoint(): committed files are removed after their batch', () => {
    const home = newHome();
    for (let i = 0; i < 3; i++) writeSpoolFile(home, `n${String(i)}.json`, payload(`n${String(i)}`, 1700000001 + i));
    const removedAfter: string[][] = [];
    const store = storeDouble(() => undefined);
    const report = recoverPending({ home, store, logger: memoryLogger(), batchSize: 2, hooks: { afterRemove: (p) => removedAfter.push(p.map(base) as string[]) } });
    expect(report.inserted.map((e) => [base(e.path), e.removed])).toEqual([['n0.json', true], ['n1.json', true], ['n2.json', true]]);
    expect(removedAfter).toEqual([['n0.json', 'n1.json'], ['n2.json']]);
    expect(names(spoolDir(home))).toEqual([]);
  });

  it('the hooks: afterCommit gets the inserted and duplicate files of a batch, afterRemove the removed ones (a file already gone counts as removed)', () => {
    const home = newHome();
    for (const n of ['a', 'b', 'c', 'd', 'e']) writeSpoolFile(home, `${n}.json`, payload(n, 1700000000 + n.charCodeAt(0)));
    const store = storeDouble((e) => {
      if (e.fileName === 'b.json') return { receiptId: e.receiptId, status: 'duplicate' };
      if (e.fileName === 'c.json') return { receiptId: e.receiptId, status: 'rejected', error: 'no' };
      if (e.fileName === 'd.json') return { receiptId: e.receiptId, status: 'unknown-session', sessionId: 'gone' };
      return undefined;
    }, () => ({ complete: true }));
    const calls: [string, string[]][] = [];
    const report = recoverPending({
      home,
      store,
      logger: memoryLogger(),
      hooks: {
        afterCommit: (p) => {
          calls.push(['commit', p.map(base) as string[]]);
          fs.unlinkSync(path.join(spoolDir(home), 'e.json')); // someone else removed it meanwhile
        },
        afterRemove: (p) => calls.push(['remove', p.map(base) as string[]]),
      },
    });
    expect(calls).toEqual([
      ['commit', ['a.json', 'b.json', 'e.json']],
      ['remove', ['a.json', 'b.json', 'e.json']],
    ]);
    expect([report.inserted.map((e) => [base(e.path), e.removed]), report.alreadyCommitted.map((e) => [base(e.path), e.removed]), report.errors]).toEqual([
      [['a.json', true], ['e.json', true]],
      [['b.json', true]],
      [],
    ]);
    expect(names(spoolDir(home))).toEqual(['c.json.bad', 'd.json']);
  });

  it('rejected files that vanished before their rename: an error each, one log line for the cause, at their directory', () => {
    const home = newHome();
    const dir = spoolDir(home);
    for (const n of ['r1', 'r2']) writeSpoolFile(home, `${n}.json`, payload(n, 1700000001));
    const store = storeDouble((e) => {
      fs.unlinkSync(path.join(dir, e.fileName));
      return { receiptId: e.receiptId, status: 'rejected', error: 'role is not a string' };
    }, () => ({ complete: true }));
    const logger = memoryLogger();
    const report = recoverPending({ home, store, logger });
    const message = (n: string): string =>
      `rejected by the store (role is not a string) and could not be renamed .bad: ENOENT: no such file or directory, link '${path.join(dir, n)}' -> '${path.join(dir, n)}.bad'`;
    expect(report.bad).toEqual([]);
    expect(report.errors.map((e) => [e.path, e.code, e.message])).toEqual([
      [path.join(dir, 'r1.json'), 'ENOENT', message('r1.json')],
      [path.join(dir, 'r2.json'), 'ENOENT', message('r2.json')],
    ]);
    const uid = String(process.geteuid?.() ?? -1);
    expect(logger.lines.map((l) => [l.level, l.message.split(' — fix: ')[0], l.fields?.path, l.fields?.count])).toEqual([
      ['error', `pending-message recovery: 2 error(s): ENOENT at ${dir} (uid ${uid}): ${message('r1.json')}`, dir, 2],
      ['warn', 'pending-message recovery: 0 inserted, 0 already committed, 0 kept, 0 bad, 0 snapshot(s), 0 foreign, 2 error(s)', dir, undefined],
    ]);
  });

  it('an entry carries its parsed payload only to a store that wants payloads', () => {
    const seen: Record<string, unknown[]> = { plain: [], wanting: [] };
    for (const kind of ['plain', 'wanting'] as const) {
      const home = newHome();
      writeSpoolFile(home, 'p1.json', payload('p1', 1700000001));
      const store = storeDouble(
        (e) => {
          seen[kind]?.push(e.payload);
          return { receiptId: e.receiptId, status: 'inserted', rowIds: [1] };
        },
        () => ({ complete: true }),
        kind === 'wanting' ? { wantsPayloads: true } : {},
      );
      expect(recoverPending({ home, store, logger: memoryLogger() }).counts.inserted).toBe(1);
    }
    expect(seen).toEqual({ plain: [undefined], wanting: [{ kind: 'pending', ts: 1700000001, data: { text: 'p1', session_id: SESSION.id } }] });
  });

  it('a rejected file whose .bad name is taken gets a name of its own: the entry under .bad is never replaced', () => {
    const home = newHome();
    const dir = spoolDir(home);
    writeSpoolFile(home, 'r1.json', payload('r1', 1700000001));
    fs.writeFileSync(path.join(dir, 'r1.json.bad'), 'an earlier rejected file');
    const store = storeDouble((e) => ({ receiptId: e.receiptId, status: 'rejected', error: 'role is not a string' }), () => ({ complete: true }));
    const report = recoverPending({ home, store, logger: memoryLogger() });
    expect(report.errors).toEqual([]);
    expect(report.bad.map((b) => [base(b.path), /^r1\.json\.[0-9a-z]+\.bad$/.test(String(base(b.badPath)))])).toEqual([['r1.json', true]]);
    expect(fs.readFileSync(path.join(dir, 'r1.json.bad'), 'utf8')).toBe('an earlier rejected file');
    expect(fs.readFileSync(report.bad[0]?.badPath ?? '', 'utf8')).toBe(payload('r1', 1700000001));
    expect(names(dir).filter((n) => n.endsWith('.json'))).toEqual([]);
  });

  it('a spool that is not a directory: one error naming it, the progress bar told (0, 0), nothing else touched', () => {
    const home = newHome();
    const dir = spoolDir(home);
    fs.writeFileSync(dir, 'not a directory');
    const logger = memoryLogger();
    const progress: [number, number][] = [];
    const report = recoverPending({ home, store: storeDouble(() => undefined), logger, onProgress: (d, t) => progress.push([d, t]) });
    expect(report.errors.map((e) => [e.path, e.code, e.message.startsWith(`cannot use ${dir}: `)])).toEqual([[dir, 'ENOTDIR', true]]);
    expect(progress).toEqual([[0, 0]]);
    expect(summary(logger.lines).map(([level, m]) => [level, m.split(': ').slice(0, 2).join(': ')])).toEqual([
      ['error', 'pending-message recovery: 1 error(s)'],
      ['warn', 'pending-message recovery: 0 inserted, 0 already committed, 0 kept, 0 bad, 0 snapshot(s), 0 foreign, 1 error(s)'],
    ]);
    expect(fs.readFileSync(dir, 'utf8')).toBe('not a directory');
  });

  it('a resolver that throws a value with no string form: the file is kept (resolver-error) with words for it', () => {
    const home = newHome();
    writeSpoolFile(home, 'k.json', json({ kind: 'pending', ts: 1700000001, session_key: 'key-1', data: { text: 'by key' } }));
    const report = recoverPending({
      home,
      store: storeDouble(() => undefined),
      logger: memoryLogger(),
      resolveSessionId: () => {
        throw Object.create(null) as unknown;
      },
    });
    expect([report.kept.map((k) => [base(k.path), k.reason, k.detail]), report.errors]).toEqual([
      [['k.json', 'resolver-error', 'resolving key-1 failed: an object that has no string form']],
      [],
    ]);
  });

  it('options that locate no spool (an environment without a home): refused with the code of what failed, at an empty path, nothing read', () => {
    const logger = memoryLogger();
    const report = recoverPending({ env: {} as never, store: storeDouble(() => undefined), logger });
    expect(report.errors.map((e) => [e.path, e.code, e.message, e.hint !== ''])).toEqual([
      ['', 'ERR_INVALID_ARG_TYPE', 'The "paths[0]" argument must be of type string. Received undefined', true],
    ]);
    expect(report.dir).toBe('');
    expect(logger.lines.map((l) => [l.level, l.message.split(' — fix: ')[0]])).toEqual([
      ['error', 'pending-message recovery: ERR_INVALID_ARG_TYPE at : The "paths[0]" argument must be of type string. Received undefined'],
    ]);
  });
});

describe('recovery: a store that fails after the commit', () => {
  it('a checkpoint that throws: the committed file is kept (checkpoint-pending, with the code), the store named once; the next pass removes it', () => {
    const home = newHome();
    writeSpoolFile(home, 'c.json', payload('c', 1700000001));
    const store = storeDouble(() => undefined, () => {
      throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
    });
    const logger = memoryLogger();
    const report = recoverPending({ home, store, logger });
    expect(report.inserted.map((e) => [base(e.path), e.removed])).toEqual([['c.json', false]]);
    expect(report.kept.map((k) => [base(k.path), k.reason, k.detail])).toEqual([
      ['c.json', 'checkpoint-pending', 'committed, but the store failed before the commit could be checkpointed (SQLITE_IOERR)'],
    ]);
    expect(report.errors.map((e) => [e.path, e.code, e.message])).toEqual([['/srv/hermes/state.db', 'SQLITE_IOERR', 'disk I/O error']]);
    const uid = String(process.geteuid?.() ?? -1);
    expect(logger.lines.map((l) => [l.level, l.message.split(' — fix: ')[0]])).toEqual([
      ['error', `pending-message recovery: 1 file(s) committed, then the store failed: SQLITE_IOERR at /srv/hermes/state.db (uid ${uid}): disk I/O error`],
      [
        'warn',
        'pending-message recovery: kept 1 file(s) (checkpoint-pending): committed; the next pass removes them without inserting them again; the first, c.json: committed, but the store failed before the commit could be checkpointed (SQLITE_IOERR)',
      ],
      ['warn', 'pending-message recovery: 1 inserted, 0 already committed, 1 kept, 0 bad, 0 snapshot(s), 0 foreign, 1 error(s)'],
    ]);
    const again = recoverPending({ home, store: { ...store, checkpoint: () => ({ complete: true }) }, logger: memoryLogger() });
    expect([again.inserted, again.alreadyCommitted.map((a) => [base(a.path), a.removed])]).toEqual([[], [['c.json', true]]]);
    expect(names(spoolDir(home))).toEqual([]);
  });

  it('a store without a path is named "the session store"', () => {
    const home = newHome();
    writeSpoolFile(home, 'c.json', payload('c', 1700000001));
    const { path: _path, ...unnamed } = storeDouble(() => undefined, () => ({ complete: false, busy: true }));
    const report = recoverPending({ home, store: unnamed, logger: memoryLogger() });
    expect(report.kept.map((k) => [base(k.path), k.reason, k.detail])).toEqual([
      ['c.json', 'checkpoint-pending', 'the checkpoint of the session store did not complete (another connection was checkpointing it)'],
    ]);
    writeSpoolFile(home, 'x.json', json({ kind: 'pending', ts: 1700000002, data: {} }));
    const broken = recoverPending({ home, store: { ...unnamed, hasReceipt: () => { throw new Error('gone'); } }, logger: memoryLogger() });
    expect(broken.errors.map((e) => [e.path, e.code, e.message])).toEqual([['the session store', 'ESTORE', 'gone']]);
    expect(broken.kept.map((k) => [base(k.path), k.reason, k.detail])).toEqual([
      // c.json (first in order) asks for an earlier version's receipt and meets the failure; x.json (no text)
      // is kept because the store failed earlier in the pass.
      ['c.json', 'store-error', 'the session store failed earlier in this pass'],
      ['x.json', 'store-error', 'the session store failed earlier in this pass'],
    ]);
  });

  it('a committed file that became a directory before its removal: kept (not-removed), one line with the cause and the fix', () => {
    const home = newHome();
    writeSpoolFile(home, 'c.json', payload('c', 1700000001));
    const store = storeDouble(() => undefined, () => ({ complete: true }));
    const logger = memoryLogger();
    const file = path.join(spoolDir(home), 'c.json');
    const report = recoverPending({
      home,
      store,
      logger,
      hooks: {
        afterCommit: () => {
          fs.unlinkSync(file);
          fs.mkdirSync(file);
        },
      },
    });
    expect(report.inserted.map((e) => [base(e.path), e.removed])).toEqual([['c.json', false]]);
    expect(report.kept.map((k) => [base(k.path), k.reason, k.detail])).toEqual([
      ['c.json', 'not-removed', `recovered (receipt committed) but not removed: EISDIR: illegal operation on a directory, unlink '${file}'`],
    ]);
    expect(report.errors.map((e) => [e.path, e.code])).toEqual([[file, 'EISDIR']]);
    const uid = String(process.geteuid?.() ?? -1);
    const lines = logger.lines.map((l) => [l.level, l.message, l.fields?.kept]);
    expect(lines[0]?.[0]).toBe('error');
    expect(String(lines[0]?.[1])).toMatch(
      new RegExp(`^pending-message recovery: could not remove 1 recovered file\\(s\\) \\(not-removed\\): EISDIR at ${file} \\(uid ${uid}\\) — fix: .+ Their receipts are committed: the next pass removes them without inserting them again\\.$`),
    );
    expect(lines.slice(1)).toEqual([['warn', 'pending-message recovery: 1 inserted, 0 already committed, 1 kept, 0 bad, 0 snapshot(s), 0 foreign, 1 error(s)', undefined]]);
    expect(logger.lines[0]?.fields).toEqual({ path: file, code: 'EISDIR', uid: Number(uid), kept: 1 });
  });
});

describe('recovery: the second reading, progress, and the store it is given', () => {
  it('a spool larger than the read-ahead is read again batch by batch: a file replaced meanwhile by a link, a directory or garbage, or removed, is settled as it now is', () => {
    const home = newHome();
    const dir = spoolDir(home);
    const big = 'x'.repeat(3 * 1024 * 1024);
    for (let i = 0; i < 3; i++) writeSpoolFile(home, `t${String(i)}.json`, payload(`${String(i)}${big}`, 1700000001 + i));
    for (const [n, ts] of [['v', 6], ['w', 7], ['y', 8], ['z', 9], ['zz', 10]] as const) writeSpoolFile(home, `${n}.json`, payload(n, 1700000000 + ts));
    writeSpoolFile(home, 'm.json', '{"unparseable');
    const outside = path.join(tempDir(), 'outside.json');
    fs.writeFileSync(outside, payload('outside', 1700000011));
    let changed = false;
    const progress: [number, number][] = [];
    const report = recoverPending({
      home,
      store: storeDouble(() => undefined, () => ({ complete: true })),
      logger: memoryLogger(),
      batchSize: 1,
      onProgress: (d, t) => progress.push([d, t]),
      hooks: {
        afterCommit: () => {
          if (changed) return;
          changed = true;
          fs.unlinkSync(path.join(dir, 'v.json'));
          fs.writeFileSync(path.join(dir, 'w.json'), '{"no longer json');
          fs.unlinkSync(path.join(dir, 'y.json'));
          fs.mkdirSync(path.join(dir, 'y.json'));
          fs.unlinkSync(path.join(dir, 'z.json'));
          fs.symlinkSync(outside, path.join(dir, 'z.json'));
        },
      },
    });
    expect(report.inserted.map((e) => base(e.path))).toEqual(['t0.json', 't1.json', 't2.json', 'zz.json']);
    expect(report.kept.map((k) => [base(k.path), k.reason, k.detail])).toEqual([
      ['m.json', 'unparseable', 'm.json: unterminated string at position 13'],
      ['w.json', 'unparseable', 'w.json: unterminated string at position 16'],
      ['z.json', 'not-a-regular-file', 'z.json is a symbolic link'],
    ]);
    expect(report.errors.map((e) => [base(e.path), e.code, e.message])).toEqual([
      [
        'y.json',
        'ENOTREGULAR',
        `cannot read ${path.join(dir, 'y.json')}: ENOTREGULAR: not a regular file (a FIFO, socket or device), read '${path.join(dir, 'y.json')}'`,
      ],
    ]);
    // m.json is settled by the first pass; every later file counts once, whatever became of it.
    expect(progress).toEqual([[2, 9], [3, 9], [4, 9], [9, 9], [9, 9]]);
    expect(fs.readFileSync(outside, 'utf8')).toBe(payload('outside', 1700000011));
  });

  it('progress counts what the first pass settles from the first call on', () => {
    const home = newHome();
    fs.mkdirSync(path.join(spoolDir(home), 'm.json'), { recursive: true });
    writeSpoolFile(home, 'a.json', 'not json');
    writeSpoolFile(home, 'b.json', Buffer.from([0x7b, 0xff, 0x7d]));
    writeSpoolFile(home, 'f.json', json({ kind: 'pending', ts: 1700000001, data: { text: '' } }));
    writeSpoolFile(home, 'g1.json', payload('g1', 1700000002));
    writeSpoolFile(home, 'g2.json', payload('g2', 1700000003));
    const progress: [number, number][] = [];
    const report = recoverPending({ home, store: storeDouble(() => undefined, () => ({ complete: true })), logger: memoryLogger(), batchSize: 1, onProgress: (d, t) => progress.push([d, t]) });
    expect(progress).toEqual([[5, 6], [6, 6], [6, 6]]);
    expect(report.kept.map((k) => [base(k.path), k.reason, k.detail])).toEqual([
      ['a.json', 'unparseable', 'a.json: unexpected token at position 0'],
      ['b.json', 'unparseable', 'b.json: The encoded data was not valid for encoding utf-8'],
      ['m.json', 'not-a-regular-file', 'm.json is not a regular file'],
      ['f.json', 'no-text', 'data.text is missing or empty'],
    ]);
  });

  it("a store's failure without a code, a path or a fix: ESTORE at the store's own path, a fix from the code; a thrown non-Error has its words", () => {
    const cases: [unknown, string, string, string][] = [
      [Object.assign(new Error('database is locked'), { path: '', hint: '' }), 'ESTORE', '/srv/hermes/state.db', 'database is locked'],
      [{ code: 'SQLITE_BUSY', path: 7 }, 'SQLITE_BUSY', '/srv/hermes/state.db', '[object Object]'],
      [null, 'ESTORE', '/srv/hermes/state.db', 'null'],
      [Object.assign(new Error('no space'), { code: 'SQLITE_FULL', path: '/var/db/other.db', hint: 'free space on /var.' }), 'SQLITE_FULL', '/var/db/other.db', 'no space'],
    ];
    for (const [thrown, code, where, message] of cases) {
      const home = newHome();
      writeSpoolFile(home, 'a.json', payload('a', 1700000001));
      const store = storeDouble(() => undefined, undefined, {
        commitRecovered: () => {
          throw thrown;
        },
      });
      const report = recoverPending({ home, store, logger: memoryLogger() });
      expect(report.errors.map((e) => [e.code, e.path, e.message])).toEqual([[code, where, message]]);
      const hint = report.errors[0]?.hint ?? '';
      expect(hint === '').toBe(false);
      if (code === 'SQLITE_FULL') expect(hint).toBe('free space on /var.');
      expect(report.kept.map((k) => [base(k.path), k.reason])).toEqual([['a.json', 'store-error']]);
    }
  });

  it("without a resolver option, the store's resolveSessionIdForKey resolves a key; without either, the key is named as unresolved", () => {
    const home = newHome();
    writeSpoolFile(home, 'k.json', json({ kind: 'pending', ts: 1700000001, session_key: 'key-1', data: { text: 'by key' } }));
    const asked: [string, number | undefined][] = [];
    const plain = storeDouble(() => undefined, () => ({ complete: true }));
    const none = recoverPending({ home, store: plain, logger: memoryLogger() });
    expect(none.kept.map((k) => [base(k.path), k.reason, k.detail])).toEqual([['k.json', 'unresolved', 'no data.session_id and no resolver for session_key key-1']]);
    const resolving = {
      ...plain,
      resolveSessionIdForKey: (key: string, notAfter: number | undefined) => {
        asked.push([key, notAfter]);
        return 'sess-k';
      },
    };
    const report = recoverPending({ home, store: resolving, logger: memoryLogger() });
    expect([asked, report.inserted.map((e) => [base(e.path), e.sessionId])]).toEqual([[['key-1', 1700000001]], [['k.json', 'sess-k']]]);
  });

  it('payload shapes at the edges: NaN ts, an empty text, a cap-drop with null data or null/empty content, invalid UTF-8', () => {
    const home = newHome();
    const rows: [string, unknown, unknown][] = [];
    const asked: [string, number | undefined][] = [];
    writeSpoolFile(home, 'n.json', '{"kind": "pending", "ts": NaN, "data": {"text": "nan", "session_id": "s"}}');
    writeSpoolFile(home, 'n2.json', '{"kind": "pending", "ts": NaN, "session_key": "key-n", "data": {"text": "nan by key"}}');
    writeSpoolFile(home, 'e.json', json({ kind: 'pending', ts: 1700000001, data: { text: '', session_id: 's' } }));
    writeSpoolFile(home, 'c0.json', json({ reason: 'transcript_cap_drop', ts: 1700000002, data: null }));
    writeSpoolFile(home, 'c1.json', json({ reason: 'transcript_cap_drop', ts: 1700000003, data: { session_id: 's', message: { role: 'assistant', content: null } } }));
    writeSpoolFile(home, 'c2.json', json({ reason: 'transcript_cap_drop', ts: 1700000004, data: { session_id: 's', message: { role: 'assistant', content: '' } } }));
    writeSpoolFile(home, 'u.json', Buffer.from([0x7b, 0xff, 0xfe, 0x7d]));
    writeSpoolFile(home, 'nk.json', json({ kind: 'pending', ts: 1700000005, data: { text: 'neither key nor id' } }));
    writeSpoolFile(home, 'c3.json', json({ reason: 'transcript_cap_drop', ts: 1700000006, data: { session_id: 7, message: { role: 'user', content: 'x' } } }));
    const store = storeDouble((e) => {
      for (const r of e.rows) rows.push([e.fileName, r.content, r.timestamp]);
      return undefined;
    }, () => ({ complete: true }));
    const report = recoverPending({ home, store, logger: memoryLogger(), resolveSessionId: (key, notAfter) => { asked.push([key, notAfter]); return 's'; } });
    expect(rows.sort()).toEqual([
      ['c1.json', '', 1700000003],
      ['c2.json', '', 1700000004],
      ['n.json', 'nan', undefined],
      ['n2.json', 'nan by key', undefined],
    ]);
    expect(asked).toEqual([['key-n', undefined]]);
    expect(report.kept.map((k) => [base(k.path), k.reason, k.detail])).toEqual([
      ['u.json', 'unparseable', 'u.json: The encoded data was not valid for encoding utf-8'],
      ['e.json', 'no-text', 'data.text is missing or empty'],
      ['c0.json', 'invalid-cap-drop', 'needs data.session_id and an object data.message'],
      ['nk.json', 'unresolved', 'no data.session_id and no session_key'],
      ['c3.json', 'invalid-cap-drop', 'needs data.session_id and an object data.message'],
    ]);
  });

  it('refusals: a function is no store; without a home the refusal is at an empty path', () => {
    const store = Object.assign(() => undefined, { hasReceipt: () => false, commitRecovered: () => [] });
    const home = newHome();
    const report = recoverPending({ home, store, logger: memoryLogger() });
    expect(report.errors.map((e) => [e.path, e.code, e.message])).toEqual([
      [home, 'EINVALID_OPTION', 'recoverPending needs a store with hasReceipt() and commitRecovered(), got function; nothing was read or changed'],
    ]);
    const nowhere = recoverPending({ store: null as never, logger: memoryLogger() });
    expect(nowhere.errors.map((e) => [e.path, e.code])).toEqual([['', 'EINVALID_OPTION']]);
  });

  it('a home that does not exist is an empty pass (a missing named profile is an error, said so); nothing is created', () => {
    const root = tempDir();
    const plain = recoverPending({ home: path.join(root, 'gone'), store: storeDouble(() => undefined), logger: memoryLogger() });
    expect([plain.errors, plain.scanned]).toEqual([[], 0]);
    const profile = path.join(root, 'profiles', 'work');
    const missing = recoverPending({ home: profile, store: storeDouble(() => undefined), logger: memoryLogger() });
    expect(missing.errors.map((e) => [e.path, e.code, e.message])).toEqual([[profile, 'EPROFILE_MISSING', `named profile home does not exist: ${profile}`]]);
    expect(names(root)).toEqual([]);
  });

  it('each pass holds the spool it finds: a spool replaced between two passes is read anew', () => {
    const home = newHome();
    writeSpoolFile(home, 'a.json', payload('a', 1700000001));
    const store = storeDouble(() => undefined, () => ({ complete: true }));
    expect(recoverPending({ home, store, logger: memoryLogger() }).inserted.map((e) => base(e.path))).toEqual(['a.json']);
    fs.renameSync(spoolDir(home), path.join(home, 'old_spool'));
    writeSpoolFile(home, 'b.json', payload('b', 1700000002));
    expect(recoverPending({ home, store, logger: memoryLogger() }).inserted.map((e) => base(e.path))).toEqual(['b.json']);
  });

  it('nothing committed: no afterCommit, no checkpoint, no afterRemove; a checkpoint that is incomplete without being held off says only that', () => {
    const home = newHome();
    writeSpoolFile(home, 'r.json', payload('r', 1700000001));
    let checkpoints = 0;
    const calls: string[] = [];
    const store = storeDouble((e) => ({ receiptId: e.receiptId, status: 'rejected', error: 'no' }), () => {
      checkpoints++;
      return { complete: false };
    });
    const hooks = { afterCommit: () => calls.push('commit'), afterRemove: () => calls.push('remove') };
    recoverPending({ home, store, logger: memoryLogger(), hooks });
    expect([calls, checkpoints]).toEqual([[], 0]);
    writeSpoolFile(home, 'ok.json', payload('ok', 1700000002));
    const report = recoverPending({ home, store: { ...store, commitRecovered: (entries) => entries.map((e) => ({ receiptId: e.receiptId, status: 'inserted' as const, rowIds: [1] })) }, logger: memoryLogger(), hooks, checkpointRetryMs: 0 });
    expect(report.kept.map((k) => [base(k.path), k.reason, k.detail])).toEqual([['ok.json', 'checkpoint-pending', 'the checkpoint of /srv/hermes/state.db did not complete']]);
    expect([calls, checkpoints]).toEqual([['commit'], 2]);
  });

  it('a store that returns fewer verdicts than files: the rest are kept as given no verdict, and the hooks see only the committed', () => {
    const home = newHome();
    for (const n of ['a', 'b', 'c']) writeSpoolFile(home, `${n}.json`, payload(n, 1700000000 + n.charCodeAt(0)));
    const store = storeDouble(() => undefined, () => ({ complete: true }), {
      commitRecovered: (entries) => entries.slice(0, 1).map((e) => ({ receiptId: e.receiptId, status: 'inserted' as const, rowIds: [1] })),
    });
    const committed: string[][] = [];
    const report = recoverPending({ home, store, logger: memoryLogger(), hooks: { afterCommit: (p) => committed.push(p.map(base) as string[]) } });
    expect(committed).toEqual([['a.json']]);
    expect(report.kept.map((k) => [base(k.path), k.reason, k.detail])).toEqual([
      ['b.json', 'store-error', 'the store returned no outcome for this file'],
      ['c.json', 'store-error', 'the store returned no outcome for this file'],
    ]);
  });
});

describe('recovery: removals that are refused, and salvage that found only a torn temp', () => {
  it('a duplicate whose file became a directory is reported not removed, and afterRemove hears of nothing', () => {
    const home = newHome();
    writeSpoolFile(home, 'd.json', payload('d', 1700000001));
    const file = path.join(spoolDir(home), 'd.json');
    const store = storeDouble((e) => ({ receiptId: e.receiptId, status: 'duplicate' }), () => ({ complete: true }));
    const removed: string[][] = [];
    const report = recoverPending({
      home,
      store,
      logger: memoryLogger(),
      hooks: {
        afterCommit: () => {
          fs.unlinkSync(file);
          fs.mkdirSync(file);
        },
        afterRemove: (p) => removed.push([...p]),
      },
    });
    expect([report.alreadyCommitted.map((a) => [base(a.path), a.removed]), report.kept.map((k) => [base(k.path), k.reason]), removed]).toEqual([
      [['d.json', false]],
      [['d.json', 'not-removed']],
      [],
    ]);
  });

  it('a pass whose salvage only moved a torn temp aside ends with a warning, not an info line', () => {
    const home = newHome();
    const torn = writeSpoolFile(home, `.pending-${'f'.repeat(32)}_xxxxxxxx.tmp`, '{\n  "session_key": "agent:main:tel');
    const logger = memoryLogger();
    const report = recoverPending({ home, store: storeDouble(() => undefined), logger, salvage: { now: Date.now() + 120_000 } });
    expect(report.salvage?.partial.map((p) => path.basename(p.partialPath))).toEqual([`${path.basename(torn).slice(1)}.partial`]);
    expect(summary(logger.lines)).toEqual([['warn', 'pending-message recovery: 0 inserted, 0 already committed, 0 kept, 0 bad, 0 snapshot(s), 0 foreign, 0 error(s)']]);
  });
});

describe('recovery as a uid that cannot read every payload (this process, its effective uid dropped for the pass)', () => {
  // process.seteuid works only on the main thread: vitest's default pool (forks, as in CI) has it; Stryker's
  // runner uses worker threads, so this test does not run under mutation testing.
  itNeeds(['root', 'main-thread'], "another uid's 0600 payload is left for that uid's recovery, named with its uid; this uid's own is recovered", () => {
    const NOBODY = 65534;
    const home = newHome();
    const mine = writeSpoolFile(home, 'mine.json', payload('mine', 1700000001));
    const theirs = writeSpoolFile(home, 'theirs.json', payload('theirs', 1700000002));
    fs.chmodSync(theirs, 0o600);
    fs.chownSync(home, NOBODY, NOBODY);
    fs.chownSync(spoolDir(home), NOBODY, NOBODY);
    fs.chownSync(mine, NOBODY, NOBODY);
    fs.chmodSync(mine, 0o600);
    const logger = memoryLogger();
    const store = storeDouble(() => undefined, () => ({ complete: true }));
    let report: ReturnType<typeof recoverPending> | undefined;
    process.seteuid?.(NOBODY);
    try {
      report = recoverPending({ home, store, logger, salvage: false });
    } finally {
      process.seteuid?.(0);
    }
    expect(process.geteuid?.()).toBe(0);
    expect([report.foreignOwner.map((f) => [base(f.path), f.uid]), report.inserted.map((e) => base(e.path)), report.kept, report.errors]).toEqual([
      [['theirs.json', 0]],
      ['mine.json'],
      [],
      [],
    ]);
    expect(summary(logger.lines)).toEqual([
      ['info', "pending-message recovery: 1 payload(s) of uid 0 left for that uid's own recovery"],
      ['info', 'pending-message recovery: 1 inserted, 0 already committed, 0 kept, 0 bad, 0 snapshot(s), 1 foreign, 0 error(s)'],
    ]);
    expect(names(spoolDir(home))).toEqual(['theirs.json']);
  });
});

describe('recovery: a file committed earlier whose removal is refused', () => {
  it('is reported already committed and not removed', () => {
    const home = newHome();
    const k = writeSpoolFile(home, 'k.json', json({ kind: 'pending', ts: 1700000001, session_key: SESSION.sessionKey, data: { text: 'by key' } }));
    const store = storeDouble(() => undefined, () => ({ complete: false }));
    recoverPending({ home, store, logger: memoryLogger(), resolveSessionId: () => SESSION.id });
    writeSpoolFile(home, 'z.json', payload('z', 1700000009));
    const report = recoverPending({
      home,
      store: { ...store, checkpoint: () => ({ complete: true }) },
      logger: memoryLogger(),
      resolveSessionId: () => null,
      hooks: {
        afterCommit: () => {
          fs.unlinkSync(k);
          fs.mkdirSync(k);
        },
      },
    });
    expect([report.alreadyCommitted.map((a) => [base(a.path), a.removed]), report.inserted.map((e) => [base(e.path), e.removed])]).toEqual([
      [['k.json', false]],
      [['z.json', true]],
    ]);
    expect(report.kept.map((x) => [base(x.path), x.reason])).toEqual([['k.json', 'not-removed']]);
  });
});

describe('recovery: a store named by an empty path, and a pass that only kept files', () => {
  it('an empty store path is "the session store"; kept files alone make the summary a warning', () => {
    const home = newHome();
    writeSpoolFile(home, 'c.json', payload('c', 1700000001));
    writeSpoolFile(home, 'e.json', json({ kind: 'pending', ts: 1700000002, data: { text: '' } }));
    const store = { ...storeDouble(() => undefined, () => ({ complete: false })), path: '' };
    const logger = memoryLogger();
    const report = recoverPending({ home, store, logger });
    expect(report.kept.map((k) => [base(k.path), k.reason, k.detail])).toEqual([
      ['e.json', 'no-text', 'data.text is missing or empty'],
      ['c.json', 'checkpoint-pending', 'the checkpoint of the session store did not complete'],
    ]);
    const quiet = newHome();
    writeSpoolFile(quiet, 'e.json', json({ kind: 'pending', ts: 1700000002, data: { text: '' } }));
    const kept = memoryLogger();
    recoverPending({ home: quiet, store: storeDouble(() => undefined), logger: kept });
    expect(summary(kept.lines).at(-1)).toEqual(['warn', 'pending-message recovery: 0 inserted, 0 already committed, 1 kept, 0 bad, 0 snapshot(s), 0 foreign, 0 error(s)']);
  });
});
