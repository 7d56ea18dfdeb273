/**
 * The service's recovery store records a spooled message's idempotency key with its row. The chaos test once
 * delivered 100 acknowledged messages twice: the store looked keys up in a listing of the spool taken before
 * the pass, so a payload spooled after that listing (a stop's flush while a drain ran) was recovered without
 * its key, and the client's retry of it was stored a second time. These tests spool in exactly that order.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { recoverPending } from '@hermes/gateway';
import { openSessionDb, type SessionDb } from '@hermes/session-db';
import { tempRoot } from '@hermes/test-utils';
import { afterEach, describe, expect, it } from 'vitest';
import { sessionIdFor } from '../src/ids.js';
import { gatewayStore } from '../src/recovery-store.js';
import { type Job, type JobOutcome, settleSpooled, startSpool } from '../src/spool.js';

const open: SessionDb[] = [];
afterEach(() => {
  for (const db of open.splice(0)) db.close();
});

function home(): string {
  const h = path.join(tempRoot('hermes-gw-store-'), 'home');
  fs.mkdirSync(h, { mode: 0o700 });
  return h;
}

/** A user message as the committer hands it to the spool; `outcome` settles with the spool's verdict. */
function job(sessionKey: string, text: string, key: string, timestamp: number): { job: Job; outcome: Promise<JobOutcome> } {
  let resolve: (o: JobOutcome) => void = () => undefined;
  let reject: (e: Error) => void = () => undefined;
  const outcome = new Promise<JobOutcome>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return {
    job: { sessionKey, sessionId: sessionIdFor(sessionKey), role: 'user', content: text, timestamp, idempotencyKey: key, enqueuedAt: 0, resolve, reject },
    outcome,
  };
}

/** Spools `jobs` as the committer does (flush, then settle) and returns their outcomes. */
async function spool(h: string, jobs: readonly { job: Job; outcome: Promise<JobOutcome> }[]): Promise<JobOutcome[]> {
  const reports = await Promise.all(startSpool(jobs.map((j) => j.job), h, undefined, 'db-unavailable'));
  settleSpooled(jobs.map((j) => j.job), reports);
  return Promise.all(jobs.map((j) => j.outcome));
}

function userTexts(db: SessionDb, sessionKey: string): string[] {
  return (db.exportSession(sessionIdFor(sessionKey))?.messages ?? []).filter((m) => m.role === 'user').map((m) => String(m.content));
}

describe('recovery store of the gateway service', () => {
  it('a payload spooled after the store was made keeps its idempotency key: the retry is a duplicate, one row', async () => {
    const h = home();
    const db = openSessionDb({ home: h });
    open.push(db);
    // The store exists before the payload does (the drain's pass started, then the stop spooled).
    const store = gatewayStore(db);
    const outcomes = await spool(h, [job('alice', 'hello', 'k-1', 1_700_000_000), job('bob', 'hi', 'k-2', 1_700_000_001)]);
    expect(outcomes.map((o) => o.status)).toEqual(['spooled', 'spooled']);

    const report = recoverPending({ home: h, store, listCommitted: false });
    expect([report.counts.rows, report.kept.length, report.errors.length]).toEqual([2, 0, 0]);
    expect(fs.readdirSync(path.join(h, 'pending_messages'))).toEqual([]);

    // The clients never saw their 202 (the process exited) and send again, same keys: no second row.
    const retried = db.appendMessages([
      { sessionId: sessionIdFor('alice'), role: 'user', content: 'hello', timestamp: 1_700_000_005, idempotencyKey: 'k-1' },
      { sessionId: sessionIdFor('bob'), role: 'user', content: 'hi', timestamp: 1_700_000_006, idempotencyKey: 'k-2' },
    ]);
    expect(retried.map((r) => r.status)).toEqual(['duplicate', 'duplicate']);
    expect(userTexts(db, 'alice')).toEqual(['hello']);
    expect(userTexts(db, 'bob')).toEqual(['hi']);
  });

  it('the retry stored first, then the spooled copy: the copy is settled as a duplicate, one row', async () => {
    const h = home();
    const db = openSessionDb({ home: h });
    open.push(db);
    const store = gatewayStore(db);
    await spool(h, [job('carol', 'one', 'k-9', 1_700_000_000)]);
    db.createSession({ id: sessionIdFor('carol'), source: 'gateway', sessionKey: 'carol', startedAt: 1_700_000_000 });
    const direct = db.appendMessages([{ sessionId: sessionIdFor('carol'), role: 'user', content: 'one', timestamp: 1_700_000_003, idempotencyKey: 'k-9' }]);
    expect(direct.map((r) => r.status)).toEqual(['inserted']);

    const report = recoverPending({ home: h, store, listCommitted: false });
    // The store's "duplicate" settles the file as committed before: removed, no row.
    expect(report.counts).toEqual({ inserted: 0, rows: 0, alreadyCommitted: 1, duplicates: 0 });
    expect([report.kept.length, report.errors.length]).toEqual([0, 0]);
    expect(fs.readdirSync(path.join(h, 'pending_messages'))).toEqual([]);
    expect(userTexts(db, 'carol')).toEqual(['one']);
  });
});
