import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openSessionDb, type SessionDb } from '@hermes/session-db';
import { describe, expect, it } from 'vitest';
import { RecoveryOrder } from '../src/ordering.js';
import { holdDirectorySync } from '@hermes/fs-policy';
import { readSpoolText } from '../src/read.js';
import { DEFAULT_RECOVERY_BATCH_SIZE, recoverPending } from '../src/index.js';
import { memoryLogger, names, spoolDir, tempDir, writeSpoolFile } from './helpers.js';

const SESSION = 'sess-o';

function freshDb(home: string): SessionDb {
  const db = openSessionDb({ home });
  db.createSession({ id: SESSION, source: 'cli', startedAt: 1_600_000_000 });
  return db;
}

function payload(text: string, ts: unknown, seq?: unknown): string {
  return JSON.stringify({
    schema_version: 1,
    kind: 'pending',
    session_key: 'k',
    reason: 'shutdown',
    ts,
    ...(seq === undefined ? {} : { seq }),
    data: { text, session_id: SESSION },
  });
}

/** A deterministic shuffle (LCG), so that name order, write order and recovery order all differ. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    const j = s % (i + 1);
    const a = out[i];
    const b = out[j];
    if (a === undefined || b === undefined) continue;
    out[i] = b;
    out[j] = a;
  }
  return out;
}

function hexName(n: number): string {
  return `pending-${n.toString(16).padStart(32, '0')}.json`;
}

describe('recovery order with scrambled names (memory-bounded two-pass recovery)', () => {
  it('replays in exact (ts, seq, name) order across many small batches', () => {
    const home = path.join(tempDir(), 'home');
    // 240 files: ts descends while the name ascends; groups of equal ts are ordered by seq (descending in
    // name order), and groups of equal (ts, seq) by name. Missing/NaN ts sorts first, missing seq as -1.
    interface Spec { name: string; ts: unknown; seq?: unknown; order: [number, number, string] }
    const specs: Spec[] = [];
    for (let i = 0; i < 200; i++) {
      const ts = 1_700_000_000 + Math.floor((199 - i) / 4) * 0.5;
      const seq = (199 - i) % 4 < 2 ? 7 : (199 - i) % 4;
      const name = hexName(0x1000 + i * 7919);
      specs.push({ name, ts, seq, order: [ts, seq, name] });
    }
    for (let i = 0; i < 20; i++) {
      const name = hexName(0x900000 + i);
      specs.push({ name, ts: 'not a number', seq: i % 3, order: [0, i % 3, name] });
    }
    for (let i = 0; i < 20; i++) {
      // Legacy names (the reference globs *.json) with no seq: -1.
      const name = `legacy-${String.fromCharCode(122 - i)}.json`;
      specs.push({ name, ts: 1_700_000_050, order: [1_700_000_050, -1, name] });
    }
    for (const s of shuffled(specs, 42)) writeSpoolFile(home, s.name, payload(s.name, s.ts, s.seq));
    const expected = [...specs]
      .sort((a, b) => a.order[0] - b.order[0] || a.order[1] - b.order[1] || (a.order[2] < b.order[2] ? -1 : a.order[2] > b.order[2] ? 1 : 0))
      .map((s) => s.name);

    const db = freshDb(home);
    const progress: [number, number][] = [];
    const report = recoverPending({ home, store: db, logger: memoryLogger(), batchSize: 7, onProgress: (d, t) => progress.push([d, t]) });
    expect(report.errors).toEqual([]);
    expect(report.kept).toEqual([]);
    expect(report.scanned).toBe(specs.length);
    expect(report.inserted.map((e) => path.basename(e.path))).toEqual(expected);
    // The rows were inserted in that order too (row ids ascend with the replay).
    const rows = [...(db.exportSession(SESSION)?.messages ?? [])].sort((a, b) => a.id - b.id);
    expect(rows.map((m) => m.content)).toEqual(expected);
    expect(names(spoolDir(home))).toEqual([]);

    // One call per batch of 7, then the final one.
    expect(progress).toHaveLength(Math.ceil(specs.length / 7) + 1);
    expect(progress.every(([, t]) => t === specs.length)).toBe(true);
    expect(progress.map(([d]) => d)).toEqual([...progress.map(([d]) => d)].sort((a, b) => a - b));
    expect(progress.at(-1)).toEqual([specs.length, specs.length]);
    db.close();
  });

  it('re-reads files when the spool is larger than the read-ahead budget (and sees changes made meanwhile)', () => {
    const home = path.join(tempDir(), 'home');
    // 40 files of ~230 KB: more text than the first pass keeps (8 MiB), and more than one batch holds.
    const big = 'x'.repeat(230 * 1024);
    const count = 40;
    const files = Array.from({ length: count }, (_, i) => hexName(count - i)); // name order = reverse ts order
    files.forEach((name, i) => writeSpoolFile(home, name, payload(`${i}:${big}`, 1_700_000_000 + i, 0)));
    const last = files[count - 1] ?? '';
    const gone = files[count - 2] ?? '';
    const db = freshDb(home);
    let first = true;
    const progress: [number, number][] = [];
    const report = recoverPending({
      home,
      store: db,
      logger: memoryLogger(),
      onProgress: (d, t) => progress.push([d, t]),
      hooks: {
        afterCommit: () => {
          if (!first) return;
          first = false;
          // After the first batch: the last file changes, the one before it is recovered by someone else.
          writeSpoolFile(home, last, payload(`changed:${big}`, 1_700_000_000 + count - 1, 0));
          fs.unlinkSync(path.join(spoolDir(home), gone));
        },
      },
    });
    expect(report.errors).toEqual([]);
    expect(report.kept).toEqual([]);
    expect(report.scanned).toBe(count);
    // Batches close early on size (default batch size notwithstanding).
    expect(count).toBeLessThan(DEFAULT_RECOVERY_BATCH_SIZE);
    expect(progress.length).toBeGreaterThan(2);
    expect(progress.at(-1)).toEqual([count, count]);
    expect(report.inserted.map((e) => path.basename(e.path))).toEqual(files.filter((f) => f !== gone));
    const contents = [...(db.exportSession(SESSION)?.messages ?? [])].sort((a, b) => a.id - b.id).map((m) => String(m.content).split(':')[0]);
    expect(contents).toEqual([...Array.from({ length: count - 2 }, (_, i) => String(i)), 'changed']);
    // The receipt is the identity of the bytes that were committed (no writer's process id in this payload):
    // sha256 of the identity's prefix and those bytes, the name left out.
    const committed = Buffer.from(payload(`changed:${big}`, 1_700_000_000 + count - 1, 0));
    const lastEntry = report.inserted.at(-1);
    expect(lastEntry?.receiptId).toBe(createHash('sha256').update('hermes-spool-bytes/1\u0000').update(committed).digest('hex'));
    expect(names(spoolDir(home))).toEqual([]);
    db.close();
  });

  it('onProgress: (0, 0) for a missing spool, and a throwing callback changes nothing but a warning', () => {
    const root = tempDir();
    const home = path.join(root, 'home');
    fs.mkdirSync(home);
    const db = freshDb(home);
    const calls: [number, number][] = [];
    recoverPending({ home, store: db, onProgress: (d, t) => calls.push([d, t]) });
    expect(calls).toEqual([[0, 0]]);

    writeSpoolFile(home, hexName(1), payload('a', 1_700_000_001, 0));
    writeSpoolFile(home, hexName(2), '{ broken');
    const logger = memoryLogger();
    const report = recoverPending({
      home,
      store: db,
      logger,
      onProgress: () => {
        throw new Error('progress bar gone');
      },
    });
    expect(report.inserted).toHaveLength(1);
    expect(report.kept.map((k) => k.reason)).toEqual(['unparseable']);
    expect(report.errors).toEqual([]);
    expect(logger.lines.filter((l) => l.message.includes('progress callback threw'))).toHaveLength(2);
    db.close();
  });
});

describe('files that are not regular files are never followed', () => {
  it('a symbolic link or a directory named *.json is kept, its target untouched', () => {
    const root = tempDir();
    const home = path.join(root, 'home');
    const outside = path.join(root, 'outside.json');
    fs.writeFileSync(outside, payload('from outside the spool', 1_700_000_000, 0));
    writeSpoolFile(home, hexName(1), payload('inside', 1_700_000_001, 0));
    fs.symlinkSync(outside, path.join(spoolDir(home), hexName(2)));
    fs.mkdirSync(path.join(spoolDir(home), hexName(3)));
    const db = freshDb(home);
    const report = recoverPending({ home, store: db, logger: memoryLogger() });
    expect(report.inserted.map((e) => path.basename(e.path))).toEqual([hexName(1)]);
    expect(report.kept.map((k) => [path.basename(k.path), k.reason])).toEqual([
      [hexName(2), 'not-a-regular-file'],
      [hexName(3), 'not-a-regular-file'],
    ]);
    expect(db.exportSession(SESSION)?.messages.map((m) => m.content)).toEqual(['inside']);
    expect(fs.readFileSync(outside, 'utf8')).toContain('from outside the spool');
    expect(names(spoolDir(home))).toEqual([hexName(2), hexName(3)]);
    db.close();
  });

  it('the reader refuses a link even when the listing said "file" (a swap after the listing)', () => {
    const root = tempDir();
    const target = path.join(root, 'target.json');
    fs.writeFileSync(target, '{}');
    const link = path.join(root, 'link.json');
    fs.symlinkSync(target, link);
    const held = holdDirectorySync(root, { root });
    try {
      expect(() => readSpoolText(held, 'link.json')).toThrow(expect.objectContaining({ code: 'ELOOP', path: link }) as Error);
    } finally {
      held.close();
    }
  });
});

describe('RecoveryOrder (the compact state between the passes)', () => {
  it('keeps texts only while all of them fit, and orders by (ts, seq, name) with names decoded for ties only', () => {
    const order = new RecoveryOrder(64);
    order.add('b.json', 2, 0, 'x'.repeat(30));
    order.add('a.json', 2, 0, 'y'.repeat(30));
    expect(order.text(0)).toBe('x'.repeat(30));
    order.add('é.json', 1, 5, 'z'.repeat(30)); // over the budget: every kept text is dropped
    order.add('c.json', 1, -1, 'w');
    expect([0, 1, 2, 3].map((i) => order.text(i))).toEqual([undefined, undefined, undefined, undefined]);
    expect([...order.order()].map((i) => order.name(i))).toEqual(['c.json', 'é.json', 'a.json', 'b.json']);
    expect(order.size).toBe(4);
  });

  it('grows past its initial capacity', () => {
    const order = new RecoveryOrder(1 << 20);
    const n = 5000;
    for (let i = 0; i < n; i++) order.add(hexName(i), n - i, 0, `t${i}`);
    const sorted = [...order.order()];
    expect(sorted[0]).toBe(n - 1);
    expect(order.name(sorted[0] ?? 0)).toBe(hexName(n - 1));
    expect(order.text(123)).toBe('t123');
  });

  it('keeps texts across chunks (the first 256 KiB, then 1 MiB each, a larger text in one of its own), multi-byte included', () => {
    const order = new RecoveryOrder(8 * 1024 * 1024);
    const texts: string[] = [];
    // 3,000 texts of ~1 KiB cross the first chunk and two more; one of 1.5 MiB needs a chunk of its own.
    for (let i = 0; i < 3000; i++) texts.push(`${String(i)} é€😀 ${'x'.repeat(1000 + (i % 7))}`);
    texts.splice(1234, 0, `big ${'€'.repeat(512 * 1024)}`);
    texts.forEach((t, i) => {
      order.add(hexName(i), i, 0, t);
    });
    const back = texts.map((_, i) => order.text(i));
    expect(back.filter((t, i) => t !== texts[i])).toEqual([]);
    expect(order.text(1234)?.length).toBe(4 + 512 * 1024);
  });
});
