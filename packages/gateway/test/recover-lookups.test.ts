/**
 * How often a recovery pass asks the store about receipts: once per chunk of files (and once more for the rest
 * of a chunk after a commit inside it), never once per file, when the store answers in bulk; id by id, with the
 * same report, when it does not. A failure of the bulk lookup keeps every file, never inserts blindly.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openSessionDb, type SessionDb } from '@hermes/session-db';
import { describe, expect, it } from 'vitest';
import { recoverPending, type RecoveryReport, type SessionStore } from '../src/index.js';
import { memoryLogger, names, spoolDir, tempDir, writeSpoolFile } from './helpers.js';

const KEY = 'agent:main:telegram:dm:9';
const SESSION = 'lookups';

function payload(i: number): string {
  return JSON.stringify({
    schema_version: 1, kind: 'overflow', session_key: KEY, reason: 'shutdown', ts: 1_700_000_000 + i, seq: i, index: i,
    pid: 1, process_id: 'lookups', data: { text: `message ${String(i)}`, session_id: SESSION },
  });
}

function nameOf(i: number): string {
  return `pending-${i.toString(16).padStart(32, '0')}.json`;
}

/** A home whose spool holds `n` payloads for one session, and its database with that session. */
function spool(n: number): { home: string; db: SessionDb } {
  const home = path.join(tempDir(), 'home');
  for (let i = 0; i < n; i++) writeSpoolFile(home, nameOf(i), payload(i));
  const db = openSessionDb({ home });
  db.createSession({ id: SESSION, source: 'telegram', sessionKey: KEY, startedAt: 1_699_999_999 });
  return { home, db };
}

interface Counted {
  readonly store: SessionStore;
  readonly calls: { hasReceipt: number; committedReceipts: number; idsAsked: number };
}

/** `db` behind a store that counts its receipt lookups; `bulk: false` leaves committedReceipts out. */
function counting(db: SessionDb, bulk: boolean, committedReceipts?: (ids: readonly string[]) => ReadonlySet<string>): Counted {
  const calls = { hasReceipt: 0, committedReceipts: 0, idsAsked: 0 };
  const store: SessionStore = {
    path: db.path,
    hasReceipt: (id) => {
      calls.hasReceipt++;
      return db.hasReceipt(id);
    },
    commitRecovered: (entries) => db.commitRecovered(entries),
    checkpoint: () => db.checkpoint(),
  };
  if (bulk) {
    store.committedReceipts = (ids) => {
      calls.committedReceipts++;
      calls.idsAsked += ids.length;
      return (committedReceipts ?? ((all) => db.committedReceipts(all)))(ids);
    };
  }
  return { store, calls };
}

function summary(r: RecoveryReport): string {
  return `${String(r.inserted.length)} inserted, ${String(r.alreadyCommitted.length)} already committed, ${String(r.kept.length)} kept, ${String(r.errors.length)} errors`;
}

describe('receipt lookups per recovery pass', () => {
  it('2,000 files: 4 bulk lookups (one per chunk of 512), no per-file hasReceipt; every file inserted', () => {
    const { home, db } = spool(2000);
    const { store, calls } = counting(db, true);
    const r = recoverPending({ home, store, logger: memoryLogger() });
    const rows = db.exportSession(SESSION)?.messages.length;
    db.close();
    console.log(`recover-lookups: 2000 files -> ${summary(r)}; committedReceipts ${String(calls.committedReceipts)} call(s) for ${String(calls.idsAsked)} ids, hasReceipt ${String(calls.hasReceipt)}`);
    expect(r.inserted).toHaveLength(2000);
    expect(r.errors).toEqual([]);
    expect(rows).toBe(2000);
    expect(names(spoolDir(home))).toEqual([]);
    expect(calls.committedReceipts).toBe(4);
    expect(calls.idsAsked).toBe(4000); // both receipt forms of each file, each asked once
    expect(calls.hasReceipt).toBe(0);
  });

  it('asks again for the rest of a chunk after each commit inside it: batchSize 300 → 4 chunks + 6 commits = 10 lookups', () => {
    const { home, db } = spool(2000);
    const { store, calls } = counting(db, true);
    const r = recoverPending({ home, store, batchSize: 300, logger: memoryLogger() });
    db.close();
    console.log(`recover-lookups: batchSize 300 -> ${summary(r)}; committedReceipts ${String(calls.committedReceipts)} call(s) for ${String(calls.idsAsked)} ids`);
    expect(r.inserted).toHaveLength(2000);
    expect(calls.committedReceipts).toBe(10);
    expect(calls.idsAsked).toBe(6664); // 4,000 + the rest of a chunk after each of the 6 commits inside one (2 ids a file)
    expect(calls.hasReceipt).toBe(0);
  });

  it('a store without committedReceipts is asked id by id (one hasReceipt per file) and gives the same report', () => {
    const { home, db } = spool(200);
    const { store, calls } = counting(db, false);
    const r = recoverPending({ home, store, logger: memoryLogger() });
    db.close();
    console.log(`recover-lookups: fallback, 200 files -> ${summary(r)}; hasReceipt ${String(calls.hasReceipt)}`);
    expect(r.inserted).toHaveLength(200);
    expect(r.errors).toEqual([]);
    expect(calls.hasReceipt).toBe(200);
  });

  it('a file an earlier version committed (its receipt: sha256 of name and bytes) is only removed, found by the bulk lookup', () => {
    const { home, db } = spool(3);
    const text = payload(1);
    const legacy = createHash('sha256').update(nameOf(1)).update('\u0000').update(text).digest('hex');
    expect(db.commitRecovered([{ receiptId: legacy, fileName: nameOf(1), rows: [{ sessionId: SESSION, role: 'user', content: 'message 1' }] }])[0]?.status).toBe('inserted');
    const { store, calls } = counting(db, true);
    const r = recoverPending({ home, store, logger: memoryLogger() });
    const rows = db.exportSession(SESSION)?.messages.length;
    db.close();
    console.log(`recover-lookups: legacy receipt -> ${summary(r)}; rows ${String(rows)}; lookups ${String(calls.committedReceipts)}`);
    expect(r.alreadyCommitted.map((e) => [path.basename(e.path), e.removed])).toEqual([[nameOf(1), true]]);
    expect(r.inserted.map((e) => path.basename(e.path))).toEqual([nameOf(0), nameOf(2)]);
    expect(rows).toBe(3);
    expect(calls.committedReceipts).toBe(1);
  });

  it('a bulk lookup that throws, or answers with something other than a Set, keeps every file (store-error) and inserts nothing', () => {
    const cases: [string, (ids: readonly string[]) => ReadonlySet<string>, string][] = [
      ['throws', () => { throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }); }, 'SQLITE_BUSY'],
      ['not a Set', () => ['x'] as unknown as ReadonlySet<string>, 'ESTORE'],
    ];
    for (const [label, answer, code] of cases) {
      const { home, db } = spool(5);
      const { store } = counting(db, true, answer);
      const r = recoverPending({ home, store, logger: memoryLogger() });
      const rows = db.exportSession(SESSION)?.messages.length;
      db.close();
      console.log(`recover-lookups: lookup ${label} -> ${summary(r)}; ${r.errors.map((e) => `${e.code}: ${e.message}`).join('; ')}`);
      expect(r.inserted).toEqual([]);
      expect(r.kept.map((k) => k.reason)).toEqual(['store-error', 'store-error', 'store-error', 'store-error', 'store-error']);
      expect(r.errors.map((e) => e.code)).toEqual([code]);
      expect(rows).toBe(0);
      expect(fs.readdirSync(spoolDir(home))).toHaveLength(5);
    }
  });
});
