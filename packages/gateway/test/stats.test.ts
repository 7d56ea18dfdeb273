import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { prune, spoolStats } from '../src/index.js';
import { memoryLogger, names, spoolDir, tempDir, writeSpoolFile } from './helpers.js';

const NOW_MS = Date.UTC(2024, 0, 31); // 2024-01-31T00:00:00Z
const DAY = 86_400;

function setup(): string {
  const home = path.join(tempDir(), 'home');
  const nowS = NOW_MS / 1000;
  writeSpoolFile(home, 'pending-00000000000000000000000000000001.json', JSON.stringify({ kind: 'pending', session_key: 'k', reason: 'shutdown', ts: nowS - 3 * DAY, seq: 0, data: { text: 'a' } }));
  writeSpoolFile(home, 'pending-00000000000000000000000000000002.json', JSON.stringify({ session_key: 'k', reason: 'adapter_shutdown', ts: nowS - DAY, seq: 4, data: { text: 'b' } }));
  writeSpoolFile(home, 'pending-00000000000000000000000000000003.json', JSON.stringify({ session_key: 's', reason: 'transcript_cap_drop', ts: nowS - 2 * DAY, seq: 1, data: { session_id: 's', message: {} } }));
  writeSpoolFile(home, 'pending-00000000000000000000000000000004.json', JSON.stringify({ reason: 'shutdown-with-unpersisted-agent-history', issue: '#72680', session_id: 's', count: 0, messages: [], ts: nowS - 40 * DAY }));
  writeSpoolFile(home, 'pending-00000000000000000000000000000005.json', JSON.stringify({ reason: 'shutdown-with-unpersisted-agent-history', issue: '#72680', session_id: 's', count: 0, messages: [], ts: nowS - 2 * DAY }));
  writeSpoolFile(home, 'pending-00000000000000000000000000000006.json', '{ broken');
  const oldBad = writeSpoolFile(home, 'pending-00000000000000000000000000000007.json.bad', '{}');
  const newBad = writeSpoolFile(home, 'pending-00000000000000000000000000000008.json.bad', '{}');
  // A temp file left by a writer that died (pid 2^22+1 is above Linux's pid_max default range for live tests).
  const tmp = writeSpoolFile(home, '.pending-00000000000000000000000000000009.json.4194305.abcdefabcdef.tmp', '{"par');
  const old = new Date(NOW_MS - 45 * DAY * 1000);
  fs.utimesSync(oldBad, old, old);
  fs.utimesSync(tmp, old, old);
  const recent = new Date(NOW_MS - 1000);
  fs.utimesSync(newBad, recent, recent);
  return home;
}

describe('spoolStats', () => {
  it('counts payloads, bytes, age, kinds, reasons, .bad files and leftover temp files', () => {
    const home = setup();
    const stats = spoolStats({ home, now: NOW_MS });
    const sizeOf = (n: string): number => fs.statSync(path.join(spoolDir(home), n)).size;
    const jsonBytes = names(spoolDir(home))
      .filter((n) => n.endsWith('.json'))
      .reduce((sum, n) => sum + sizeOf(n), 0);
    const snapshotNames = ['pending-00000000000000000000000000000004.json', 'pending-00000000000000000000000000000005.json'];
    const snapshotMtime = Math.min(...snapshotNames.map((n) => fs.statSync(path.join(spoolDir(home), n)).mtimeMs));
    expect(stats).toEqual({
      dir: spoolDir(home),
      exists: true,
      count: 6,
      bytes: jsonBytes,
      oldestTs: NOW_MS / 1000 - 40 * DAY,
      newestTs: NOW_MS / 1000 - DAY,
      byReason: {
        shutdown: 1,
        adapter_shutdown: 1,
        transcript_cap_drop: 1,
        'shutdown-with-unpersisted-agent-history': 2,
      },
      byKind: { pending: 1, overflow: 1, transcript_cap_drop: 1, agent_history: 2 },
      snapshots: 2,
      // Snapshots age by ts (40 days), as prune sees them; .bad files by mtime (45 days).
      snapshotFiles: {
        count: 2,
        bytes: snapshotNames.reduce((sum, n) => sum + sizeOf(n), 0),
        oldestTs: NOW_MS / 1000 - 40 * DAY,
        oldestMtime: snapshotMtime,
        oldestAgeMs: 40 * DAY * 1000,
      },
      unparseable: 1,
      bad: { count: 2, bytes: 4, oldestMtime: NOW_MS - 45 * DAY * 1000, oldestAgeMs: 45 * DAY * 1000 },
      foreign: [],
      tempFiles: { count: 1, stale: 1, bytes: 5 },
      errors: [],
    });
  });

  it('a home without a spool is empty, not an error', () => {
    const stats = spoolStats(path.join(tempDir(), 'home'));
    expect(stats).toMatchObject({ exists: false, count: 0, bytes: 0, oldestTs: null, errors: [] });
    expect(stats.bad).toEqual({ count: 0, bytes: 0, oldestMtime: null, oldestAgeMs: null });
    expect(stats.snapshotFiles).toEqual({ count: 0, bytes: 0, oldestTs: null, oldestMtime: null, oldestAgeMs: null });
  });
});

describe('prune (explicit, dry-run by default)', () => {
  it('dry run lists old .bad files and snapshots and deletes nothing', () => {
    const home = setup();
    const before = names(spoolDir(home));
    const report = prune({ home, olderThanDays: 30, now: NOW_MS, logger: memoryLogger() });
    expect(report.dryRun).toBe(true);
    expect(report.matched.map((m) => [path.basename(m.path), m.category, Math.round(m.ageDays)])).toEqual([
      ['pending-00000000000000000000000000000004.json', 'snapshots', 40],
      ['pending-00000000000000000000000000000007.json.bad', 'bad', 45],
    ]);
    expect(report.removed).toEqual([]);
    expect(names(spoolDir(home))).toEqual(before);
  });

  it('a real run salvages first, then deletes only what matched; recoverable payloads are never touched', () => {
    const home = setup();
    const report = prune({ home, olderThanDays: 30, dryRun: false, include: ['bad', 'snapshots', 'partial', 'temp'], now: NOW_MS, logger: memoryLogger() });
    // The temp cut short was moved aside as .partial by the salvage, and the .partial file (45 days) went with the retention.
    expect(report.salvage?.partial.map((p) => path.basename(p.partialPath))).toEqual(['pending-00000000000000000000000000000009.json.4194305.abcdefabcdef.tmp.partial']);
    expect(report.removed.map((p) => path.basename(p))).toEqual([
      'pending-00000000000000000000000000000004.json',
      'pending-00000000000000000000000000000007.json.bad',
      'pending-00000000000000000000000000000009.json.4194305.abcdefabcdef.tmp.partial',
    ]);
    expect(report.salvaged).toEqual([]);
    expect(report.kept).toEqual([]);
    expect(names(spoolDir(home))).toEqual([
      'pending-00000000000000000000000000000001.json',
      'pending-00000000000000000000000000000002.json',
      'pending-00000000000000000000000000000003.json',
      'pending-00000000000000000000000000000005.json',
      'pending-00000000000000000000000000000006.json',
      'pending-00000000000000000000000000000008.json.bad',
    ]);
  });

  it('refuses a nonsensical age', () => {
    expect(() => prune({ home: tempDir(), olderThanDays: -1 })).toThrow(RangeError);
  });
});
