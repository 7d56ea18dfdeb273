/**
 * Every outcome of a recovery pass pinned to what an operator reads: the report entry (reason and detail), the
 * rows the store receives, and the log lines (one per cause, never one per file). A spool holding one file of
 * each kind and a real session database; a store double for the verdicts a real database gives only when it
 * fails (rejected rows, a checkpoint held off, a store that breaks mid-pass).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openSessionDb } from '@hermes/session-db';
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
    const report = recoverPending({ home, store, logger, batchSize: 1, onProgress: (d, t) => progress.push([d, t]) });
    expect(store.batches).toEqual([['c0.json'], ['c1.json'], ['c2.json']]);
    expect(progress).toEqual([[1, 3], [2, 3], [3, 3], [3, 3]]);
    // c0 waited through the first (held-off) checkpoint and went with c1's; c2's did not complete, nor did the last try.
    expect(report.inserted.map((e) => [base(e.path), e.removed])).toEqual([['c0.json', true], ['c1.json', true], ['c2.json', false]]);
    expect(report.kept.map((k) => [base(k.path), k.reason, k.detail])).toEqual([
      ['c2.json', 'not-checkpointed', 'the checkpoint of /srv/hermes/state.db did not complete (another connection held it off)'],
    ]);
    expect(names(spoolDir(home))).toEqual(['c2.json']);
    expect(logger.lines.map(line)).toEqual([
      [
        'warn',
        'pending-message recovery: kept 1 file(s) (not-checkpointed) (committed; the next pass removes them without inserting them again); the first, c2.json: the checkpoint of /srv/hermes/state.db did not complete (another connection held it off)',
        { path: 'c2.json', reason: 'not-checkpointed', kept: 1 },
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
    const report = recoverPending({ home, store, logger, batchSize: 2 });
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
        `pending-message recovery: kept 3 file(s): SQLITE_CORRUPT at /srv/hermes/state.db (uid ${uid}): database disk image is malformed — fix: restore state.db from a backup.`,
        { path: 'state.db', code: 'SQLITE_CORRUPT', uid: Number(uid), kept: 3 },
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
      expect(report).toEqual({ dir: home, scanned: 0, inserted: [], alreadyCommitted: [], kept: [], bad: [], snapshots: [], foreignOwner: [], errors: [{ path: home, code: 'EINVALID_OPTION', message, hint }], salvage: null });
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
    expect(report.errors).toEqual([{ path: spoolDir(home), code: 'EINVALID_OPTION', message: 'batchSize must be a positive integer, got number 0; used 2000', hint: 'pass a positive integer batchSize, or omit it.' }]);
    const uid = String(process.geteuid?.() ?? -1);
    expect(logger.lines.map(line)).toEqual([
      [
        'error',
        `pending-message recovery: 1 error(s): EINVALID_OPTION at ${spoolDir(home)} (uid ${uid}): batchSize must be a positive integer, got number 0; used 2000 — fix: pass a positive integer batchSize, or omit it.`,
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
