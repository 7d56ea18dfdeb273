/**
 * Salvage of the temp files a killed writer leaves: real temp files, made by a real write that a child process
 * was killed in the middle of (fs-policy's names, whatever their format), and the Python reference's
 * `mkstemp` names written by hand.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseTempName } from '@hermes/fs-policy';
import { openSessionDb } from '@hermes/session-db';
import { spawnNode } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import { recoverPending, salvageTemps } from '../src/index.js';
import { fixture, memoryLogger, names, spoolDir, tempDir } from './helpers.js';

interface Left {
  home: string;
  dir: string;
  /** The payload file the interrupted write was for. */
  target: string;
  /** The temp file it left. */
  temp: string;
  kill(): Promise<void>;
}

/** Runs leave-temp.mjs until it blocks inside the write of payload `k` (of `n`); the caller kills it. */
async function interrupted(step: 'rename' | 'write', n = 5, k = 2): Promise<Left> {
  const home = path.join(tempDir(), 'home');
  const dir = spoolDir(home);
  // Only the named temp can be left incomplete: with fs-policy's native layer the temp has no name (O_TMPFILE)
  // until it is complete and fsynced, so a writer killed at 'write' writes without it (HERMES_FS_ANCHOR=procfd).
  const env = { HERMES_HOME: home, ...(step === 'write' ? { HERMES_FS_ANCHOR: 'procfd' } : {}) };
  const child = spawnNode(fixture('leave-temp.mjs'), [step, String(n), String(k)], { umask: 0o022, env });
  const exited = new Promise<void>((resolve) => child.on('close', () => { resolve(); }));
  const target = await new Promise<string>((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /BLOCKED (\S+)\n/.exec(out);
      if (m?.[1] !== undefined) resolve(m[1]);
    });
    child.on('exit', () => { reject(new Error(`child ended without blocking: ${out} ${err}`)); });
  });
  const temps = names(dir).filter((x) => parseTempName(x)?.target === path.basename(target));
  expect(temps).toHaveLength(1);
  return {
    home,
    dir,
    target,
    temp: path.join(dir, temps[0] ?? ''),
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

function recoverAll(home: string): { texts: string[]; inserted: number; already: number } {
  const db = openSessionDb({ home });
  try {
    if (db.getSession('sess-t') === undefined) db.createSession({ id: 'sess-t', source: 'cli', startedAt: 1700000000 });
    const r = recoverPending({ home, store: db, logger: memoryLogger() });
    return { texts: (db.exportSession('sess-t')?.messages ?? []).map((m) => m.content as string), inserted: r.inserted.length, already: r.alreadyCommitted.length };
  } finally {
    db.close();
  }
}

describe('salvageTemps', () => {
  it('a complete, fsynced payload under a temp name is adopted under its own name, once', async () => {
    const left = await interrupted('rename');
    // While its writer is alive, the temp is a write in progress: left alone.
    const early = salvageTemps({ home: left.home, logger: memoryLogger() });
    expect(early.left.map((l) => [l.temp, l.reason])).toEqual([[left.temp, 'writer-alive']]);
    expect(fs.existsSync(left.temp)).toBe(true);
    await left.kill();
    const bytes = fs.readFileSync(left.temp);
    const logger = memoryLogger();
    const report = salvageTemps({ home: left.home, logger });
    expect(report).toMatchObject({ scanned: 1, adopted: [{ temp: left.temp, path: left.target, bytes: bytes.length }], duplicates: [], partial: [], left: [], errors: [], durable: true });
    expect(fs.existsSync(left.temp)).toBe(false);
    expect(fs.readFileSync(left.target).equals(bytes)).toBe(true);
    expect(logger.lines.map((l) => [l.level, l.message])).toEqual([
      ['warn', 'pending salvage: 1 complete payload(s) adopted from temp files, 0 redundant temp copy(ies) removed, 0 incomplete temp file(s) moved aside as .partial'],
    ]);
    expect(recoverAll(left.home)).toEqual({ texts: ['t-0', 't-1', 't-2'], inserted: 3, already: 0 });

    // The same temp again (a copy that survived somewhere): adopted, but its receipt is committed — no duplicate.
    fs.writeFileSync(left.temp, bytes, { mode: 0o600 });
    expect(salvageTemps({ home: left.home, logger: memoryLogger() }).adopted).toHaveLength(1);
    expect(recoverAll(left.home)).toEqual({ texts: ['t-0', 't-1', 't-2'], inserted: 0, already: 1 });
    expect(names(left.dir)).toEqual([]);
  });

  it('recoverPending salvages first: the interrupted payload is recovered with the others', async () => {
    const left = await interrupted('rename', 4, 3);
    await left.kill();
    const db = openSessionDb({ home: left.home });
    db.createSession({ id: 'sess-t', source: 'cli', startedAt: 1700000000 });
    const report = recoverPending({ home: left.home, store: db, logger: memoryLogger() });
    expect(report.salvage?.adopted.map((a) => a.path)).toEqual([left.target]);
    expect(report.inserted.map((i) => i.path)).toContain(left.target);
    expect(db.exportSession('sess-t')?.messages.map((m) => m.content)).toEqual(['t-0', 't-1', 't-2', 't-3']);
    db.close();
  });

  it('an empty temp (killed before its first byte) and a truncated one are moved aside as .partial, never deleted', async () => {
    const empty = await interrupted('write');
    await empty.kill();
    const cut = await interrupted('rename', 3, 1);
    await cut.kill();
    const full = fs.readFileSync(cut.temp);
    fs.writeFileSync(cut.temp, full.subarray(0, Math.floor(full.length / 2)));
    for (const left of [empty, cut]) {
      const before = fs.readFileSync(left.temp);
      const report = salvageTemps({ home: left.home, logger: memoryLogger() });
      const partialPath = path.join(left.dir, `${path.basename(left.temp).slice(1)}.partial`);
      expect(report.partial).toEqual([
        { temp: left.temp, partialPath, bytes: before.length, detail: expect.stringMatching(left === empty ? /^empty$/ : /^not complete JSON/) as string },
      ]);
      expect(report.adopted).toEqual([]);
      expect(fs.existsSync(left.temp)).toBe(false);
      expect(fs.readFileSync(partialPath).equals(before)).toBe(true);
      expect(fs.existsSync(left.target)).toBe(false);
    }
  });

  it('a temp whose final name holds the same bytes is a redundant copy (removed, reported); different bytes: both left', async () => {
    const same = await interrupted('rename');
    await same.kill();
    fs.copyFileSync(same.temp, same.target);
    const r1 = salvageTemps({ home: same.home, logger: memoryLogger() });
    expect(r1.duplicates).toEqual([{ temp: same.temp, path: same.target }]);
    expect(fs.existsSync(same.temp)).toBe(false);

    const other = await interrupted('rename');
    await other.kill();
    fs.writeFileSync(other.target, '{"session_key": "k", "data": {"text": "someone else"}}');
    const logger = memoryLogger();
    const r2 = salvageTemps({ home: other.home, logger });
    expect(r2.left.map((l) => [l.temp, l.reason])).toEqual([[other.temp, 'conflict']]);
    expect(fs.existsSync(other.temp)).toBe(true);
    expect(fs.readFileSync(other.target, 'utf8')).toContain('someone else');
    expect(logger.lines.map((l) => l.level)).toEqual(['warn']);
  });

  it("the Python reference's mkstemp names: adopted once old enough, partial moved aside, foreign JSON and links left", () => {
    const home = path.join(tempDir(), 'home');
    const dir = spoolDir(home);
    fs.mkdirSync(dir, { recursive: true });
    const id = '0123456789abcdef0123456789abcdef';
    const complete = path.join(dir, `.pending-${id}_a1b_c9zq.tmp`);
    const partial = path.join(dir, `.pending-${'f'.repeat(32)}_xxxxxxxx.tmp`);
    const notPayload = path.join(dir, `.pending-${'e'.repeat(32)}_yyyyyyyy.tmp`);
    const link = path.join(dir, `.pending-${'d'.repeat(32)}_zzzzzzzz.tmp`);
    const outside = path.join(tempDir(), 'outside.json');
    fs.writeFileSync(outside, '{"session_key": "k", "reason": "shutdown", "data": {"text": "not mine"}}');
    fs.writeFileSync(complete, `{\n  "session_key": "agent:main:telegram:dm:1",\n  "reason": "shutdown",\n  "ts": 1700000000,\n  "data": {\n    "text": "from python"\n  }\n}`);
    fs.writeFileSync(partial, '{\n  "session_key": "agent:main:tel');
    fs.writeFileSync(notPayload, '{"some": "other json"}');
    fs.symlinkSync(outside, link);
    // Fresh: no pid in the name, so the writer cannot be proven dead — left for now.
    const fresh = salvageTemps({ home, logger: memoryLogger() });
    expect(fresh.left.map((l) => [path.basename(l.temp), l.reason]).sort()).toEqual(
      [
        [path.basename(complete), 'too-recent'],
        [path.basename(link), 'not-a-regular-file'],
        [path.basename(notPayload), 'too-recent'],
        [path.basename(partial), 'too-recent'],
      ].sort(),
    );
    const later = salvageTemps({ home, logger: memoryLogger(), now: Date.now() + 120_000 });
    expect(later.adopted).toEqual([{ temp: complete, path: path.join(dir, `pending-${id}.json`), bytes: fs.statSync(path.join(dir, `pending-${id}.json`)).size }]);
    expect(later.partial.map((p) => p.partialPath)).toEqual([path.join(dir, `${path.basename(partial).slice(1)}.partial`)]);
    expect(later.left.map((l) => [path.basename(l.temp), l.reason]).sort()).toEqual(
      [
        [path.basename(link), 'not-a-regular-file'],
        [path.basename(notPayload), 'not-a-payload'],
      ].sort(),
    );
    // The link was never followed: its target is untouched.
    expect(fs.readFileSync(outside, 'utf8')).toContain('not mine');
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
  });

  it('names that are no temp of a payload writer are not touched', () => {
    const home = path.join(tempDir(), 'home');
    const dir = spoolDir(home);
    fs.mkdirSync(dir, { recursive: true });
    for (const n of ['.hidden', '.pending-x.tmp', 'pending-1.json.tmp', '.pending-abc_TOOLONGXX.tmp', 'notes.txt']) fs.writeFileSync(path.join(dir, n), 'x');
    const report = salvageTemps({ home, logger: memoryLogger(), now: Date.now() + 3_600_000 });
    expect(report).toMatchObject({ scanned: 0, adopted: [], partial: [], left: [], errors: [] });
    expect(names(dir)).toHaveLength(5);
  });
});
