/**
 * Recovery of batch files (#24 row 4): each member is recovered exactly as its own file would be, once, in a
 * real state.db; a batch is removed only when every member is durable or written out as a file of its own; an
 * invalid batch is kept, never half-used.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openSessionDb, type SessionDb } from '@hermes/session-db';
import { spawnNode } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import { parseBatch, recoverPending, serializeBatch, spoolDroppedTranscriptMessageSync } from '../src/index.js';
import { fixture, memoryLogger, names, spoolDir, tempDir } from './helpers.js';
import { builtOverflow, flushedOverflow, flushedPending, flushedSnapshot, membersOf, writeBatch, writeFiles } from './row4b-helpers.js';

const SESSION = 'sess-batch';

function openDb(home: string): SessionDb {
  const db = openSessionDb({ home });
  if (db.getSession(SESSION) === undefined) db.createSession({ id: SESSION, source: 'telegram', sessionKey: 'agent:main:telegram:dm:b', startedAt: 1_700_000_000 });
  return db;
}

/** Every message of the session with how often it is there. */
function counts(db: SessionDb, sessionId = SESSION): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of db.exportSession(sessionId)?.messages ?? []) {
    const c = typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
    out.set(c, (out.get(c) ?? 0) + 1);
  }
  return out;
}

function textsOf(members: readonly { text: string }[]): string[] {
  return members.map((m) => (JSON.parse(m.text) as { data: { text: string } }).data.text);
}

describe('a batch of 100,000 members, some of them also files of their own', () => {
  it('inserts each message exactly once and removes the batch and the files', () => {
    // 2,000 payloads the flush wrote, and 98,000 built the way it builds them (checked against the written ones).
    const flushed = flushedOverflow(2000, SESSION, 'flushed');
    const built = builtOverflow(98_000, SESSION, 'built');
    const sample = JSON.parse(flushed[0]?.text ?? '') as Record<string, unknown>;
    const like = JSON.parse(built[0]?.text ?? '') as Record<string, unknown>;
    expect(Object.keys(like)).toEqual(Object.keys(sample));
    expect(flushed[0]?.text.endsWith('}\n')).toBe(true);
    expect(built[0]?.text.endsWith('}\n')).toBe(true);

    const members = [...flushed, ...built];
    const home = path.join(tempDir(), 'home');
    const batch = writeBatch(home, members);
    // The first 1,000 flushed payloads also reached the spool as files (their async writes completed).
    const alsoFiles = flushed.slice(0, 1000);
    writeFiles(home, alsoFiles);
    expect(names(spoolDir(home))).toHaveLength(1001);

    const db = openDb(home);
    const logger = memoryLogger();
    const t0 = performance.now();
    const report = recoverPending({ home, store: db, logger });
    const ms = Math.round(performance.now() - t0);
    const c = counts(db);
    const once = [...c.values()].filter((n) => n === 1).length;
    const twice = [...c.values()].filter((n) => n > 1).length;
    const missing = textsOf(members).filter((t) => !c.has(t)).length;
    console.log(
      `row4b 100k batch: members ${String(members.length)}, also files ${String(alsoFiles.length)}, rows ${String(db.getSession(SESSION)?.message_count)}, ` +
        `exactly once ${String(once)}, more than once ${String(twice)}, missing ${String(missing)}, inserted ${String(report.inserted.length)}, ` +
        `duplicates ${String(report.duplicates.length)}, batch removed ${String(report.batches[0]?.removed)}, spool entries after ${String(names(spoolDir(home)).length)}, ${String(ms)} ms`,
    );
    expect(report.errors).toEqual([]);
    expect(report.kept).toEqual([]);
    expect(db.getSession(SESSION)?.message_count).toBe(100_000);
    expect(once).toBe(100_000);
    expect(twice).toBe(0);
    expect(missing).toBe(0);
    expect(report.inserted).toHaveLength(100_000);
    expect(report.duplicates).toHaveLength(1000);
    // Members are reported under <batch>/<name>, removed with their batch; a member and its file: the first one
    // met is inserted, the other is its duplicate.
    const fromBatch = report.inserted.filter((e) => path.dirname(e.path) === batch).length;
    const dupFromBatch = report.duplicates.filter((d) => path.dirname(d.path) === batch).length;
    expect(fromBatch + dupFromBatch).toBe(100_000);
    expect(report.batches).toEqual([{ path: batch, members: 100_000, inserted: fromBatch, alreadyCommitted: dupFromBatch, writtenOut: 0, removed: true, detail: null }]);
    expect(report.inserted.every((e) => e.removed)).toBe(true);
    expect(names(spoolDir(home))).toEqual([]);
    const line = logger.lines.at(-1)?.message ?? '';
    expect(line).toMatch(/^pending-message recovery: 100,000 inserted \([\d,]+ from 1 batch file\(s\), 1 removed\), 0 already committed, 0 kept, 0 bad/);

    // A second pass finds nothing.
    const again = recoverPending({ home, store: db, logger: memoryLogger() });
    expect(again.scanned).toBe(0);
    expect(db.getSession(SESSION)?.message_count).toBe(100_000);
    db.close();
  }, 300_000);
});

describe('members that cannot be inserted now', () => {
  it('are written out as files of their own (same bytes), the batch removed, nothing lost; the next pass inserts them', () => {
    const known = flushedOverflow(3, SESSION, 'known');
    const unknown = flushedPending({ 'agent:main:telegram:dm:nobody-yet': 'waiting for its session' });
    const snapshot = flushedSnapshot(SESSION);
    const unknownSession = flushedOverflow(1, 'sess-missing', 'no such session');
    const members = [...known, ...unknown, ...snapshot, ...unknownSession];
    const home = path.join(tempDir(), 'home');
    const batch = writeBatch(home, members);
    const db = openDb(home);

    const report = recoverPending({ home, store: db, logger: memoryLogger() });
    const dir = spoolDir(home);
    const left = membersOf(home);
    console.log(
      `row4b write-out: members ${String(members.length)}, inserted ${String(report.inserted.length)}, kept ${String(report.kept.length)}, snapshots ${String(report.snapshots.length)}, ` +
        `written out ${String(report.batches[0]?.writtenOut)}, batch removed ${String(report.batches[0]?.removed)}, files after ${String(left.length)}`,
    );
    expect(report.errors).toEqual([]);
    expect(report.inserted.map((e) => path.relative(dir, e.path)).sort()).toEqual(known.map((m) => path.join(path.basename(batch), m.name)));
    expect([...counts(db).keys()].sort()).toEqual(['known-0', 'known-1', 'known-2']);
    expect(report.kept.map((k) => [path.relative(dir, k.path), k.reason]).sort()).toEqual(
      [
        [unknown[0]?.name, 'unresolved'],
        [unknownSession[0]?.name, 'unknown-session'],
      ].sort(),
    );
    expect(report.snapshots.map((s) => [path.relative(dir, s.path), s.sessionId, s.count])).toEqual([[snapshot[0]?.name, SESSION, 2]]);
    expect(report.batches).toEqual([{ path: batch, members: 6, inserted: 3, alreadyCommitted: 0, writtenOut: 3, removed: true, detail: null }]);
    // The written-out files hold exactly the member's bytes, 0600; the batch is gone.
    expect(left).toEqual([...unknown, ...snapshot, ...unknownSession].sort((a, b) => (a.name < b.name ? -1 : 1)));
    for (const m of left) expect(fs.statSync(path.join(dir, m.name)).mode & 0o7777).toBe(0o600);
    expect(fs.existsSync(batch)).toBe(false);

    // The sessions appear: the next pass inserts the written-out payloads as files; the snapshot stays.
    db.createSession({ id: 'sess-missing', source: 'telegram', startedAt: 1_700_000_000 });
    db.createSession({ id: 'sess-late', source: 'telegram', sessionKey: 'agent:main:telegram:dm:nobody-yet', startedAt: 1_700_000_000 });
    const next = recoverPending({ home, store: db, logger: memoryLogger() });
    expect(next.errors).toEqual([]);
    expect(next.inserted).toHaveLength(2);
    expect([...counts(db, 'sess-missing').entries()]).toEqual([['no such session-0', 1]]);
    expect([...counts(db, 'sess-late').entries()]).toEqual([['waiting for its session', 1]]);
    expect(names(dir)).toEqual([snapshot[0]?.name]);
    db.close();
  });

  it('a member already written out by an earlier pass (same bytes at its name) is not written again; other bytes keep the batch', () => {
    const unknown = flushedPending({ 'agent:main:telegram:dm:nobody': 'first', 'agent:main:telegram:dm:nobody-2': 'second' });
    const home = path.join(tempDir(), 'home');
    const batch = writeBatch(home, unknown);
    const same = unknown.find((m) => m.text.includes('"first"'));
    const other = unknown.find((m) => m.text.includes('"second"'));
    if (same === undefined || other === undefined) throw new Error('two payloads expected');
    writeFiles(home, [same, { name: other.name, text: other.text.replace('second', 'SECOND') }]);
    const before = fs.readFileSync(batch, 'utf8');
    const db = openDb(home);
    const report = recoverPending({ home, store: db, logger: memoryLogger() });
    console.log(`row4b conflict: batch removed ${String(report.batches[0]?.removed)}, errors ${report.errors.map((e) => e.code).join(',')}`);
    expect(report.batches[0]?.removed).toBe(false);
    expect(report.batches[0]?.writtenOut).toBe(1);
    expect(report.batches[0]?.detail).toBe(`kept: ${other.name} could not be written out (EEXIST); the next pass finishes it`);
    expect(report.errors.map((e) => [e.code, path.basename(e.path)])).toEqual([['EEXIST', other.name]]);
    // Each file is reported once (kept, unresolved); the member that could not be written out is kept in its batch.
    expect(report.kept.map((k) => [path.relative(spoolDir(home), k.path), k.reason]).sort()).toEqual(
      [
        [same.name, 'unresolved'],
        [other.name, 'unresolved'],
        [path.join(path.basename(batch), other.name), 'unresolved'],
      ].sort(),
    );
    expect(fs.readFileSync(batch, 'utf8')).toBe(before);
    expect(fs.readFileSync(path.join(spoolDir(home), same.name), 'utf8')).toBe(same.text);
    db.close();
  });
});

describe('a member the store rejects', () => {
  it('is written out as <name>.bad with its exact bytes (what its own file would become); the batch is removed', () => {
    const scratch = path.join(tempDir(), 'scratch');
    const r = spoolDroppedTranscriptMessageSync(SESSION, { role: 'tool', content: 'x', tool_calls: 7 }, { home: scratch });
    expect(r.failed).toEqual([]);
    const rejected = membersOf(scratch);
    const fine = flushedOverflow(1, SESSION, 'fine');
    const home = path.join(tempDir(), 'home');
    const batch = writeBatch(home, [...rejected, ...fine]);
    const db = openDb(home);
    const report = recoverPending({ home, store: db, logger: memoryLogger() });
    const name = rejected[0]?.name ?? '';
    const dir = spoolDir(home);
    console.log(`row4b rejected member: bad ${String(report.bad.length)}, inserted ${String(report.inserted.length)}, batch removed ${String(report.batches[0]?.removed)}, spool ${names(dir).join(' ')}`);
    expect(report.errors).toEqual([]);
    expect(report.bad).toEqual([{ path: path.join(batch, name), badPath: path.join(dir, `${name}.bad`), error: 'invalid value for tool_calls: expected a list, a JSON string or null, got number' }]);
    expect(fs.readFileSync(path.join(dir, `${name}.bad`), 'utf8')).toBe(rejected[0]?.text);
    expect([...counts(db).keys()]).toEqual(['fine-0']);
    expect(report.batches[0]).toMatchObject({ members: 2, inserted: 1, writtenOut: 1, removed: true });
    expect(names(dir)).toEqual([`${name}.bad`]);
    db.close();
  });
});

describe('a batch file that is not a valid batch', () => {
  it('is kept with its problem, never deleted, none of its members used; the files beside it are recovered', () => {
    const members = flushedOverflow(3, SESSION, 'in a bad batch');
    const beside = flushedOverflow(1, SESSION, 'beside');
    const home = path.join(tempDir(), 'home');
    const good = JSON.parse(serializeBatch(members)) as Record<string, unknown>;
    const bad = `${JSON.stringify({ ...good, count: 4 })}\n`;
    expect(parseBatch(JSON.parse(bad)).problem).toBe('count 4 does not match the 3 payload(s) it holds');
    const file = path.join(spoolDir(home), 'batch-0123456789abcdef0123456789abcdef.json');
    writeFiles(home, [{ name: path.basename(file), text: bad }, ...beside]);
    const db = openDb(home);
    const logger = memoryLogger();
    const report = recoverPending({ home, store: db, logger });
    console.log(`row4b invalid batch: kept ${String(report.kept.length)} (${report.kept.map((k) => k.reason).join(',')}), inserted ${String(report.inserted.length)}, file kept ${String(fs.existsSync(file))}`);
    expect(report.kept).toEqual([
      { path: file, reason: 'invalid-batch', detail: `${path.basename(file)} is not a valid batch file (count 4 does not match the 3 payload(s) it holds); none of its members was used` },
    ]);
    expect(report.batches).toEqual([]);
    expect([...counts(db).keys()]).toEqual(['beside-0']);
    expect(fs.readFileSync(file, 'utf8')).toBe(bad);
    expect(logger.lines.some((l) => l.level === 'warn' && l.message.startsWith('pending-message recovery: kept 1 file(s) (invalid-batch)'))).toBe(true);
    // Kept on every pass.
    const again = recoverPending({ home, store: db, logger: memoryLogger() });
    expect(again.kept.map((k) => k.reason)).toEqual(['invalid-batch']);
    expect(fs.readFileSync(file, 'utf8')).toBe(bad);
    db.close();
  });
});

describe('a crash (SIGKILL of a real recovery process) in the middle of a batch', () => {
  it('leaves the batch; the second recovery inserts every member exactly once and removes it', async () => {
    const members = [...flushedOverflow(200, SESSION, 'crash-flushed'), ...builtOverflow(4800, SESSION, 'crash-built', 200_000)];
    const home = path.join(tempDir(), 'home');
    const batch = writeBatch(home, members);
    writeFiles(home, members.slice(0, 100)); // some also files of their own
    const session = { id: SESSION, source: 'telegram', sessionKey: 'agent:main:telegram:dm:b', startedAt: 1_700_000_000 };
    const child = spawnNode(fixture('row4b-recover.mjs'), [JSON.stringify({ session, batchSize: 500, blockAtCommit: 3 })], { umask: 0o022, env: { HERMES_HOME: home } });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_c, signal) => { resolve(signal); }));
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
    const announced = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const line = out.split('\n').find((l) => l.startsWith('COMMITTED'));
        if (line !== undefined) resolve(line);
      });
      void exited.then(() => { reject(new Error(`the child ended before its third commit: ${out} ${err}`)); });
    });
    child.kill('SIGKILL');
    const signal = await exited;
    expect(announced).toBe('COMMITTED 500');
    expect(signal).toBe('SIGKILL');
    // Killed between a commit and the end of the pass: the batch is still there, 1,500 rows committed so far.
    expect(fs.existsSync(batch)).toBe(true);
    const db = openDb(home);
    const committedBefore = db.getSession(SESSION)?.message_count ?? 0;
    expect(committedBefore).toBe(1500);

    const report = recoverPending({ home, store: db, logger: memoryLogger() });
    const c = counts(db);
    const once = textsOf(members).filter((t) => c.get(t) === 1).length;
    const more = [...c.values()].filter((n) => n > 1).length;
    console.log(
      `row4b crash: members ${String(members.length)}, committed before the kill ${String(committedBefore)}, second pass inserted ${String(report.inserted.length)}, ` +
        `already committed ${String(report.alreadyCommitted.length + report.duplicates.length)}, rows ${String(db.getSession(SESSION)?.message_count)}, exactly once ${String(once)}, ` +
        `more than once ${String(more)}, batch removed ${String(report.batches[0]?.removed)}`,
    );
    expect(report.errors).toEqual([]);
    expect(report.inserted).toHaveLength(3500);
    expect(db.getSession(SESSION)?.message_count).toBe(5000);
    expect(once).toBe(5000);
    expect(more).toBe(0);
    expect(report.batches[0]?.removed).toBe(true);
    expect(names(spoolDir(home))).toEqual([]);
    db.close();
  }, 120_000);
});
