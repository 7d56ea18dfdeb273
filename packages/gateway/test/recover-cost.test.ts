/**
 * What recovery costs per file: the spool is listed once by the salvage when it holds no temp file of a
 * writer it could check (fs-policy's sweep only runs for those), the first pass keeps a compact record per
 * file (payload names as their 16 bytes), and counts in log lines are grouped without loading locale data.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type * as FsPolicy from '@hermes/fs-policy';
import { openSessionDb } from '@hermes/session-db';
import { describe, expect, it, vi } from 'vitest';
import { count } from '../src/log.js';
import { RecoveryOrder } from '../src/ordering.js';
import { recoverPending } from '../src/index.js';
import { spoolDir, tempDir, writeSpoolFile } from './helpers.js';

const sweeps = vi.hoisted(() => ({ n: 0 }));
vi.mock('@hermes/fs-policy', async (importOriginal) => {
  const real = await importOriginal<typeof FsPolicy>();
  return {
    ...real,
    sweepTempFilesSync: (...args: Parameters<typeof real.sweepTempFilesSync>) => {
      sweeps.n++;
      return real.sweepTempFilesSync(...args);
    },
  };
});

const KEY = 'agent:main:telegram:dm:7';

function payload(i: number): string {
  return JSON.stringify({
    schema_version: 1, kind: 'overflow', session_key: KEY, reason: 'shutdown', ts: 1_700_000_000 + i, seq: i, index: i,
    pid: 1, process_id: 'cost', data: { text: `message ${String(i)}`, session_id: 'cost' },
  });
}

describe('recovery cost per file', () => {
  it('lists the spool once for the salvage when no temp file names a writer (no sweep), and sweeps when one does', () => {
    const home = path.join(tempDir(), 'home');
    for (let i = 0; i < 5; i++) writeSpoolFile(home, `pending-${i.toString(16).padStart(32, '0')}.json`, payload(i));
    const db = openSessionDb({ home });
    db.createSession({ id: 'cost', source: 'telegram', sessionKey: KEY, startedAt: 1_699_999_999 });
    sweeps.n = 0;
    const plain = recoverPending({ home, store: db });
    const plainSweeps = sweeps.n;
    // A Python mkstemp temp carries no pid: nothing to ask the sweep about either.
    fs.writeFileSync(path.join(spoolDir(home), `.pending-${'f'.repeat(32)}_xxxxxxxx.tmp`), '{"partial');
    sweeps.n = 0;
    const python = recoverPending({ home, store: db, salvage: { minAgeMs: 3_600_000 } });
    const pythonSweeps = sweeps.n;
    db.close();
    console.log(`recover-cost: inserted ${String(plain.inserted.length)}, sweeps without temps ${String(plainSweeps)}, with a pid-less temp ${String(pythonSweeps)}`);
    expect(plain.inserted).toHaveLength(5);
    expect(plain.errors).toEqual([]);
    expect(plainSweeps).toBe(0);
    expect(python.salvage?.scanned).toBe(1);
    expect(pythonSweeps).toBe(0);
  });

  it('keeps payload names as 16 bytes and gives every name back exactly, in (ts, seq, name) order', () => {
    const order = new RecoveryOrder(1024);
    const hex = `pending-${'0123456789abcdef'.repeat(2)}.json`;
    const upper = `pending-${'0123456789ABCDEF'.repeat(2)}.json`; // not this package's form: kept as UTF-8
    const other = 'é-notes.json';
    order.add(other, 5, 1, 'c');
    order.add(hex, 5, 1, 'a');
    order.add(upper, 1, 0, undefined);
    order.add('pending-0.json', 5, 0, 'b');
    const names = [...order.order()].map((i) => order.name(i));
    const texts = [...order.order()].map((i) => order.text(i));
    console.log(`recover-cost: ${String(order.size)} names, order ${names.join(' ')}`);
    expect(names).toEqual([upper, 'pending-0.json', hex, other]);
    expect(texts).toEqual([undefined, 'b', 'a', 'c']);
  });

  it('groups counts with commas, as en-US does', () => {
    const got = [0, 7, 999, 1000, 1998, 100_000, 1_234_567, -4321].map(count);
    console.log(`recover-cost: counts ${got.join(' ')}`);
    expect(got).toEqual(['0', '7', '999', '1,000', '1,998', '100,000', '1,234,567', '-4,321']);
  });
});
