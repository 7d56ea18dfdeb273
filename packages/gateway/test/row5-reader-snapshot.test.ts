/**
 * Recovery never waits on another reader of state.db. A second real process (a backup, the sqlite3 shell, the
 * doctor) holds a read snapshot of state.db for the whole pass: the WAL frames the pass commits cannot be
 * copied into the main file while it does, so a checkpoint that waited for it would sit in the busy handler
 * for every batch. The pass must commit, keep the files (`checkpoint-pending`) and end in about the time it
 * takes without the reader; the next pass, once the reader let go, removes them and inserts nothing.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openSessionDb } from '@hermes/session-db';
import { spawnNode } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import { recoverPending, type RecoveryReport } from '../src/index.js';
import { fixture, memoryLogger, names, spoolDir, tempDir, writeSpoolFile } from './helpers.js';

const FILES = 10_000;
const SESSION = { id: 'sess-r5', source: 'telegram', sessionKey: 'agent:main:telegram:dm:5', startedAt: 1700000000 };

/** A home with FILES spool files (the reference's overflow shape, each with its session id) and the session row. */
function homeWithSpool(): string {
  const home = path.join(tempDir(), 'home');
  for (let i = 0; i < FILES; i++) {
    const name = `pending-${i.toString(16).padStart(32, '0')}.json`;
    const payload = { session_key: SESSION.sessionKey, reason: 'shutdown', ts: 1700000001 + i / 1000, seq: i, data: { text: `message ${String(i)}`, session_id: SESSION.id } };
    writeSpoolFile(home, name, JSON.stringify(payload));
  }
  const db = openSessionDb({ home });
  db.createSession(SESSION);
  db.close();
  return home;
}

/** One recovery pass with its own connection, timed. */
function timedPass(home: string): { report: RecoveryReport; ms: number; lines: string[] } {
  const logger = memoryLogger();
  const db = openSessionDb({ home });
  const started = performance.now();
  let report: RecoveryReport;
  try {
    report = recoverPending({ home, store: db, logger, salvage: false });
  } finally {
    db.close();
  }
  return { report, ms: Math.round(performance.now() - started), lines: logger.lines.map((l) => `${l.level} ${l.message}`) };
}

/** Texts in state.db: how many rows, how many distinct. */
function rowsOf(home: string): { rows: number; distinct: number } {
  const db = openSessionDb({ home, readonly: true });
  try {
    const texts = (db.exportSession(SESSION.id)?.messages ?? []).map((m) => String(m.content));
    return { rows: texts.length, distinct: new Set(texts).size };
  } finally {
    db.close();
  }
}

/** Starts the reader child on the home's state.db and waits until it holds its snapshot. */
async function startReader(home: string): Promise<{ ready: string; release: () => Promise<string> }> {
  const child = spawnNode(fixture('row5-reader.mjs'), [path.join(home, 'state.db')]);
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => {
    child.on('exit', (code) => {
      resolve(code);
    });
  });
  const ready = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`the reader did not start; stdout=${stdout} stderr=${stderr}`));
    }, 30_000);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      const line = stdout.split('\n').find((l) => l.startsWith('READY'));
      if (line !== undefined) {
        clearTimeout(timer);
        resolve(line);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the reader exited early (${String(code)}); stdout=${stdout} stderr=${stderr}`));
    });
  });
  return {
    ready,
    release: async () => {
      child.stdin.end();
      const code = await exited;
      return `${String(code)} ${stdout.trim().split('\n').pop() ?? ''}`;
    },
  };
}

describe('row 5: recovery with another process holding a read snapshot of state.db', () => {
  it('10,000 files: finishes within 2× its time without the reader, 0 lost, 0 duplicated; the next pass removes the kept files and inserts nothing', async () => {
    // Without a reader: the baseline.
    const free = homeWithSpool();
    const baseline = timedPass(free);
    expect([baseline.report.inserted.length, baseline.report.kept.length, names(spoolDir(free)).length]).toEqual([FILES, 0, 0]);
    expect(rowsOf(free)).toEqual({ rows: FILES, distinct: FILES });

    // With a reader holding its snapshot for the whole pass.
    const held = homeWithSpool();
    const reader = await startReader(held);
    expect(reader.ready).toBe('READY 0');
    let during: ReturnType<typeof timedPass>;
    try {
      during = timedPass(held);
    } finally {
      expect(await reader.release()).toBe('0 RELEASED');
    }
    const r = during.report;
    const keptBy = new Map<string, number>();
    for (const k of r.kept) keptBy.set(k.reason, (keptBy.get(k.reason) ?? 0) + 1);
    const afterHeld = rowsOf(held);
    const spoolAfterHeld = names(spoolDir(held)).length;

    // The reader is gone: the next pass removes every kept file and inserts nothing.
    const next = timedPass(held);
    const afterNext = rowsOf(held);
    const ratio = during.ms / baseline.ms;
    console.log(
      `row5: ${String(FILES)} files; without a reader ${String(baseline.ms)} ms, with a reader holding a snapshot ${String(during.ms)} ms ` +
        `(ratio ${ratio.toFixed(2)}); inserted ${String(r.inserted.length)}, kept ${JSON.stringify(Object.fromEntries(keptBy))}, ` +
        `rows ${String(afterHeld.rows)} (distinct ${String(afterHeld.distinct)}), spool files left ${String(spoolAfterHeld)}; ` +
        `next pass: inserted ${String(next.report.inserted.length)}, already committed ${String(next.report.alreadyCommitted.length)}, ` +
        `removed ${String(next.report.alreadyCommitted.filter((a) => a.removed).length)}, rows ${String(afterNext.rows)}, spool files left ${String(names(spoolDir(held)).length)} (${String(next.ms)} ms)`,
    );

    expect(r.inserted.length).toBe(FILES);
    expect(Object.fromEntries(keptBy)).toEqual({ 'checkpoint-pending': FILES });
    expect(r.inserted.filter((e) => e.removed).length).toBe(0);
    expect(afterHeld).toEqual({ rows: FILES, distinct: FILES });
    expect(spoolAfterHeld).toBe(FILES);
    expect(r.errors).toEqual([]);
    expect(during.lines.filter((l) => l.includes('(checkpoint-pending)'))).toEqual([
      `warn pending-message recovery: kept 10,000 file(s) (checkpoint-pending): committed; the next pass removes them without inserting them again; ` +
        `the first, pending-${'0'.repeat(32)}.json: 0 of ${String(r.kept.length > 0 ? walFramesOf(r.kept[0]?.detail ?? '') : 0)} WAL frame(s) of ${path.join(held, 'state.db')} are in its main file: another connection's read snapshot held the checkpoint off`,
    ]);
    expect(during.ms).toBeLessThanOrEqual(2 * baseline.ms);

    expect([next.report.inserted.length, next.report.alreadyCommitted.length, next.report.kept.length, next.report.errors.length]).toEqual([0, FILES, 0, 0]);
    expect(next.report.alreadyCommitted.every((a) => a.removed)).toBe(true);
    expect(afterNext).toEqual({ rows: FILES, distinct: FILES });
    expect(names(spoolDir(held))).toEqual([]);
    expect(fs.existsSync(path.join(held, 'state.db'))).toBe(true);
  }, 240_000);
});

/** The WAL size a checkpoint-pending detail names (`0 of N WAL frame(s) …`). */
function walFramesOf(detail: string): number {
  const m = /^\d+ of (\d+) WAL frame/.exec(detail);
  return m === null ? -1 : Number(m[1]);
}
