/**
 * The gateway's round-3 audit, row 1: prune deleted complete payloads killed writers left under temp names. Now
 * a real run salvages first (exactly as recovery does), a dry run changes nothing and says what would be adopted,
 * a temp whose bytes are a complete payload is never deleted, and incomplete temps follow the retention as
 * `.partial` files.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { prune } from '../src/index.js';
import { memoryLogger, names, spoolDir, tempDir, writeSpoolFile } from './helpers.js';

const NOW_MS = Date.now();
const DAY_MS = 86_400_000;
const DEAD = 4194305; // above any pid_max: a writer that is gone
const hex = (n: number): string => n.toString(16).padStart(32, '0');
const payload = (n: number): string =>
  `${JSON.stringify({ schema_version: 1, kind: 'pending', ts: NOW_MS / 1000 - 40 * 86_400, seq: n, pid: DEAD, process_id: '0123456789abcdef', session_key: `k-${String(n)}`, reason: 'shutdown', data: { text: `m-${String(n)}` } }, null, 2)}\n`;

function pidTag(): string {
  try {
    const m = /^pid:\[(\d+)\]$/.exec(fs.readlinkSync('/proc/self/ns/pid'));
    return m?.[1] === undefined ? String(process.pid) : `${String(process.pid)}-${m[1]}`;
  } catch {
    return String(process.pid);
  }
}

const NAMES = {
  completeOld: `.pending-${hex(1)}.json.${String(DEAD)}.0123456789a1.tmp`,
  cutShort: `.pending-${hex(2)}.json.${String(DEAD)}.0123456789a2.tmp`,
  partial: `pending-${hex(3)}.json.${String(DEAD)}.0123456789a3.tmp.partial`,
  liveWriter: `.pending-${hex(4)}.json.${pidTag()}.0123456789a4.tmp`,
  notPayload: `.pending-${hex(5)}.json.${String(DEAD)}.0123456789a5.tmp`,
};

/** A spool holding only what killed (and one live) writers left; all but the live writer's 40 days old. */
function setup(): string {
  const home = path.join(tempDir(), 'home');
  const old = new Date(NOW_MS - 40 * DAY_MS);
  const put = (name: string, content: string, aged = true): void => {
    const p = writeSpoolFile(home, name, content);
    if (aged) fs.utimesSync(p, old, old);
  };
  put(NAMES.completeOld, payload(1));
  put(NAMES.cutShort, payload(2).slice(0, 30));
  put(NAMES.partial, '{"schema_version');
  put(NAMES.liveWriter, payload(4), false);
  put(NAMES.notPayload, '{"x": 1}');
  return home;
}

const base = (p: string): string => path.basename(p);

describe('row 1: prune salvages before it considers age', () => {
  it('a dry run changes nothing, lists the complete temps as adopted (kept), the incomplete ones by the retention', () => {
    const home = setup();
    const before = names(spoolDir(home)).map((n) => [n, fs.statSync(path.join(spoolDir(home), n)).mtimeMs]);
    const report = prune({ home, olderThanDays: 30, include: ['bad', 'snapshots', 'partial', 'temp'], now: NOW_MS, logger: memoryLogger() });
    expect(report.dryRun).toBe(true);
    expect(report.salvage).toBeNull();
    expect(report.salvaged.map((s) => [base(s.temp), base(s.path)])).toEqual([[NAMES.completeOld, `pending-${hex(1)}.json`]]);
    expect(report.kept.map((k) => [base(k.path), k.reason]).sort()).toEqual([
      [NAMES.completeOld, 'complete-payload'],
      [NAMES.liveWriter, 'writer-alive'],
    ]);
    expect(report.matched.map((m) => [base(m.path), m.category])).toEqual([
      [NAMES.cutShort, 'partial'],
      [NAMES.notPayload, 'temp'],
      [NAMES.partial, 'partial'],
    ]);
    expect(report.removed).toEqual([]);
    expect(names(spoolDir(home)).map((n) => [n, fs.statSync(path.join(spoolDir(home), n)).mtimeMs])).toEqual(before);
  });

  it('a real run adopts the complete temp, keeps the live writer\'s, and prunes only what holds no message', () => {
    const home = setup();
    const report = prune({ home, olderThanDays: 30, dryRun: false, include: ['bad', 'snapshots', 'partial', 'temp'], now: NOW_MS, logger: memoryLogger() });
    expect(report.errors).toEqual([]);
    expect(report.salvaged.map((s) => [base(s.temp), base(s.path)])).toEqual([[NAMES.completeOld, `pending-${hex(1)}.json`]]);
    expect(report.kept.map((k) => [base(k.path), k.reason])).toEqual([[NAMES.liveWriter, 'writer-alive']]);
    expect(report.removed.map(base)).toEqual([
      NAMES.notPayload,
      `${NAMES.cutShort.slice(1)}.partial`, // moved aside by the salvage, then 40 days old
      NAMES.partial,
    ]);
    const left = names(spoolDir(home));
    expect(left).toEqual([NAMES.liveWriter, `pending-${hex(1)}.json`]);
    expect(fs.readFileSync(path.join(spoolDir(home), `pending-${hex(1)}.json`), 'utf8')).toBe(payload(1));
    console.log(
      `row 1 prune (library): ${String(report.salvaged.length)} adopted, ${String(report.kept.length)} kept (${report.kept.map((k) => k.reason).join(', ')}), ` +
        `${String(report.removed.length)} removed, complete payloads lost 0 of 2 (${String(left.length)} files left)`,
    );
  });

  it('a real run with the default categories salvages too; no complete payload under a temp name is ever matched', () => {
    const home = setup();
    const report = prune({ home, olderThanDays: 0, dryRun: false, now: NOW_MS, logger: memoryLogger() });
    expect(report.salvaged.map((s) => base(s.temp))).toEqual([NAMES.completeOld]);
    expect(report.matched).toEqual([]);
    expect(names(spoolDir(home))).toContain(`pending-${hex(1)}.json`);
    expect(names(spoolDir(home))).toContain(NAMES.liveWriter);
  });
});
