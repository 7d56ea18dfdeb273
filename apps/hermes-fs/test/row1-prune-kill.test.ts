/**
 * The gateway's round-3 audit, row 1: `hermes-fs pending prune --yes` deleted complete payloads a killed flush
 * left under temp names — files recovery's salvage adopts. Real child processes hand their messages to
 * `flushPending` and are SIGKILLed at varied points of the flush; what reached disk in any form (final names
 * and complete temps, counted before the prune) is then pruned with the built CLI and recovered into a real
 * state.db with the built CLI: every one of those messages must come back, exactly once.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseTempName } from '@hermes/fs-policy';
import { openSessionDb } from '@hermes/session-db';
import { spawnNode } from '@hermes/test-utils';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupHomes, cli, cliJson, fixture, freshHome } from './helpers.js';

afterAll(cleanupHomes);

const SESSION = 'sess-row1';
/** Messages each flush is handed. */
const PER_FLUSH = 200;
const MIN_RUNS = 10;
/** Runs go on until this many messages had reached disk, at most MAX_RUNS runs. */
const MIN_ON_DISK = 1000;
const MAX_RUNS = 80;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Starts the flush child and SIGKILLs it `delayMs` after it began flushing (`'done'`: once its flush is over);
 * resolves when it is gone, with how long it flushed.
 */
function killedFlush(home: string, run: number, delayMs: number | 'done'): Promise<{ signal: NodeJS.Signals | null; finished: boolean; ms: number }> {
  return new Promise((resolve, reject) => {
    const child = spawnNode(fixture('row1-flush-kill.mjs'), [String(PER_FLUSH), String(run)], { umask: 0o022, env: { HERMES_HOME: home } });
    let stdout = '';
    let stderr = '';
    let began = 0;
    let ended = 0;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`flush child hung: ${stdout} ${stderr}`));
    }, 60_000);
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (began === 0 && stdout.includes('FLUSHING\n')) {
        began = Date.now();
        if (delayMs !== 'done') void sleep(delayMs).then(() => child.kill('SIGKILL'));
      }
      if (ended === 0 && stdout.includes('DONE')) {
        ended = Date.now();
        if (delayMs === 'done') child.kill('SIGKILL');
      }
    });
    child.on('close', (_code, signal) => {
      clearTimeout(timer);
      resolve({ signal, finished: ended !== 0, ms: (ended === 0 ? Date.now() : ended) - began });
    });
  });
}

function textOf(bytes: Buffer): string | undefined {
  try {
    const p = JSON.parse(bytes.toString('utf8')) as { data?: { text?: unknown } };
    return typeof p.data?.text === 'string' ? p.data.text : undefined;
  } catch {
    return undefined;
  }
}

/** The messages on disk in any complete form, read independently of the code under test. */
function onDisk(home: string): { finals: Set<string>; completeTemps: Set<string>; partialTemps: number } {
  const dir = path.join(home, 'pending_messages');
  const out = { finals: new Set<string>(), completeTemps: new Set<string>(), partialTemps: 0 };
  for (const name of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    const text = textOf(fs.readFileSync(path.join(dir, name)));
    if (name.endsWith('.json')) {
      expect(text, `${name} is complete`).toBeDefined();
      out.finals.add(text ?? '');
    } else if (parseTempName(name) !== null) {
      if (text === undefined) out.partialTemps++;
      else out.completeTemps.add(text);
    }
  }
  return out;
}

/** Recovers the spool with the built CLI into state.db (the session created first) and returns the texts. */
function recoverWithCli(home: string): string[] {
  const db = openSessionDb({ home });
  if (db.getSession(SESSION) === undefined) db.createSession({ id: SESSION, source: 'telegram', startedAt: 1699999990 });
  db.close();
  const r = cli(['pending', 'recover', '--home', home]);
  expect([0, 1], r.stderr).toContain(r.status);
  const after = openSessionDb({ home });
  try {
    return (after.exportSession(SESSION)?.messages ?? []).map((m) => m.content as string);
  } finally {
    after.close();
  }
}

describe('row 1: prune never deletes a deliverable message', () => {
  it(`killed flushes (${String(PER_FLUSH)} messages each), then pending prune --older-than 0 --yes, then recovery: 0 lost`, async () => {
    // How long an uninterrupted flush takes here: the kills are spread over that span.
    const whole = await killedFlush(freshHome(), 0, 'done');
    expect(whole.finished).toBe(true);
    // The span the kills are spread over follows the machine: a run killed with less than a quarter of its flush on
    // disk (the machine slowed down since the span was measured) lengthens it, one that finished shortens it.
    let span = Math.max(whole.ms, 20);
    let runs = 0;
    let onDiskTotal = 0;
    let completeTemps = 0;
    let partialTemps = 0;
    let lost = 0;
    let duplicated = 0;
    let killedMidFlush = 0;
    while ((runs < MIN_RUNS || onDiskTotal < MIN_ON_DISK) && runs < MAX_RUNS) {
      runs++;
      const home = freshHome();
      // The home exists before the flush starts: a kill that lands before the flush created it (a fast machine,
      // a short delay) would leave nothing for prune to act on but an error about the missing home.
      fs.mkdirSync(home, { mode: 0o700 });
      // Varied delays over the flush's span, weighted to its middle, where temps are being written.
      const delay = Math.floor(span * (0.15 + 0.7 * ((runs * 0.618) % 1)));
      const run = await killedFlush(home, runs, delay);
      expect(run.signal).toBe('SIGKILL');
      if (!run.finished) killedMidFlush++;
      const disk = onDisk(home);
      const expected = new Set([...disk.finals, ...disk.completeTemps]);
      onDiskTotal += expected.size;
      if (run.finished) span = Math.max(20, Math.floor(span * 0.8));
      else if (expected.size < PER_FLUSH / 4) span = Math.min(Math.ceil(span * 1.5), 20 * Math.max(whole.ms, 20));
      completeTemps += [...disk.completeTemps].filter((t) => !disk.finals.has(t)).length;
      partialTemps += disk.partialTemps;
      const pruned = cli(['pending', 'prune', '--older-than', '0', '--yes', '--home', home]);
      expect(pruned.status, pruned.stderr).toBe(0);
      const texts = recoverWithCli(home);
      const got = new Set(texts);
      duplicated += texts.length - got.size;
      lost += [...expected].filter((t) => !got.has(t)).length;
      // Nothing recovered that was not on disk, and nothing left in the spool but what prune may not delete.
      expect([...got].filter((t) => !expected.has(t))).toEqual([]);
    }
    console.log(
      `row 1 prune after SIGKILL: ${String(runs)} killed flushes (${String(killedMidFlush)} mid-flush, span ${String(whole.ms)} ms measured, ${String(span)} ms at the end), ` +
        `${String(onDiskTotal)} messages on disk before prune (${String(completeTemps)} only as complete temps, ${String(partialTemps)} partial temps), ` +
        `${String(lost)} lost, ${String(duplicated)} duplicated after prune --older-than 0 --yes and recovery`,
    );
    expect(runs).toBeGreaterThanOrEqual(MIN_RUNS);
    expect(onDiskTotal).toBeGreaterThanOrEqual(MIN_ON_DISK);
    expect(completeTemps).toBeGreaterThan(0);
    expect(lost).toBe(0);
    expect(duplicated).toBe(0);
  }, 300_000);

  it('a complete temp 31 days old under the default retention (30 days) is adopted, never deleted: 1 of 1 recovered', () => {
    const home = freshHome();
    const dir = path.join(home, 'pending_messages');
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const target = `pending-${'ab'.repeat(16)}.json`;
    const payload = { schema_version: 1, kind: 'pending', ts: 1700000000, seq: 0, pid: 4194305, process_id: '0123456789abcdef', session_key: 'agent:main:telegram:dm:row1-old', reason: 'shutdown', data: { text: 'thirty-one days under a temp name', session_id: SESSION } };
    // A writer killed between its fsync and its rename (pid above any pid_max: dead).
    const temp = path.join(dir, `.${target}.4194305.0123456789ab.tmp`);
    fs.writeFileSync(temp, `${JSON.stringify(payload, null, 2)}\n`, { mode: 0o600 });
    const old = new Date(Date.now() - 31 * 86_400_000);
    fs.utimesSync(temp, old, old);
    const dry = cliJson<{ matched: { path: string }[]; salvaged: { temp: string; path: string }[]; kept: { path: string; reason: string }[] }>(['pending', 'prune', '--home', home]);
    expect(dry.run.status, dry.run.stderr).toBe(0);
    expect(dry.json.matched).toEqual([]);
    expect(dry.json.salvaged.map((s) => [path.basename(s.temp), path.basename(s.path)])).toEqual([[path.basename(temp), target]]);
    expect(dry.json.kept.map((k) => [path.basename(k.path), k.reason])).toEqual([[path.basename(temp), 'complete-payload']]);
    expect(fs.readdirSync(dir)).toEqual([path.basename(temp)]); // a dry run changes nothing
    const real = cli(['pending', 'prune', '--yes', '--home', home], { env: { NO_COLOR: '1' } });
    expect(real.status, real.stderr).toBe(0);
    expect(real.stdout).toContain(`adopted ${path.basename(temp)} as ${target}`);
    expect(fs.readdirSync(dir)).toEqual([target]);
    const texts = recoverWithCli(home);
    const recovered = texts.filter((t) => t === 'thirty-one days under a temp name').length;
    console.log(`row 1 default retention: a 31-day-old complete temp, ${String(recovered)} of 1 recovered after pending prune --yes`);
    expect(recovered).toBe(1);
  });
});
