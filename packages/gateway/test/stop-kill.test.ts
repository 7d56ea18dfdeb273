/**
 * The stop contract when the process is killed: SIGKILL at random points of the flush followed by recovery
 * (every payload that reached disk completely is recovered exactly once), and state.db-wal deleted during a
 * recovery that is then killed (nothing lost).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openSessionDb } from '@hermes/session-db';
import { spawnNode } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import { fixture, spoolDir } from './helpers.js';
import { exactlyOnce, KEY, loopHome, onDisk, pool, recover, runChild, SESSION, sleep } from './stop-helpers.js';

describe('stop contract: SIGKILL', () => {
  it('SIGKILL at random points of the flush (50 runs): every payload that reached disk completely, final or temp, is recovered exactly once', async () => {
    // How long an uninterrupted flush takes here: the kills are spread over that span.
    const calibration = loopHome();
    let begun = 0;
    let span = 0;
    await runChild(calibration, 'hook', (child) => {
      begun = Date.now();
      child.kill('SIGTERM');
      child.on('exit', () => {
        span = Date.now() - begun;
      });
    });
    span = Math.max(span, 50);
    // Runs go on until 50 of them were killed mid-flush (a kill that comes after a quick flush finished is a
    // run of the other tests, not of this one).
    let midFlush = 0;
    const runs = (
      await pool(100, 4, async () => {
        if (midFlush >= 50) return undefined;
        const home = loopHome();
        const delay = Math.floor(Math.random() * span);
        const run = await runChild(home, 'hook', (child) => {
          child.kill('SIGTERM');
          void sleep(delay).then(() => child.kill('SIGKILL'));
        });
        const disk = onDisk(home);
        const recovered = recover(home);
        const after = fs.existsSync(spoolDir(home)) ? fs.readdirSync(spoolDir(home)) : [];
        const left = after.filter((n) => !n.endsWith('.partial'));
        const partials = after.filter((n) => n.endsWith('.partial')).length;
        if (run.signal === 'SIGKILL') midFlush++;
        return { delay, run, disk, recovered, left, partials };
      })
    ).filter((r) => r !== undefined);
    let killed = 0;
    let adopted = 0;
    let partial = 0;
    for (const { run, disk, recovered, left, partials } of runs) {
      if (run.signal === 'SIGKILL') killed++;
      const expected = [...disk.finals.keys(), ...disk.orphanTemps.values()];
      exactlyOnce(recovered.texts, expected);
      // The recovery line counts what was on disk: every complete payload, the temps among them.
      const temps = disk.orphanTemps.size;
      expect(recovered.summary).toMatch(
        new RegExp(`^pending-message recovery: ${expected.length.toLocaleString('en-US')} inserted${temps > 0 ? ` \\(${temps.toLocaleString('en-US')} adopted from temp files\\)` : ''}, `),
      );
      expect(recovered.report.salvage?.adopted.length ?? 0).toBe(temps);
      expect(recovered.report.salvage?.duplicates.length ?? 0).toBe(disk.redundantTemps);
      expect(recovered.report.salvage?.partial.length ?? 0).toBe(disk.partialTemps);
      // Nothing is left but the partial temps, moved aside and reported (never deleted).
      expect(left).toEqual([]);
      expect(partials).toBe(disk.partialTemps);
      adopted += temps;
      partial += disk.partialTemps;
    }
    expect(killed).toBeGreaterThanOrEqual(50);
    console.log(
      `SIGKILL: ${String(killed)} of ${String(runs.length)} runs killed mid-flush (flush span ${String(span)} ms); ` +
        `${String(adopted)} complete temp payloads adopted, ${String(partial)} partial temps moved aside`,
    );
  });

  it.each([
    ['checkpoint', 0],
    ['no-checkpoint', 2000],
  ])('state.db-wal deleted between batches, then SIGKILL during recovery (%s): %i messages lost', async (mode, lost) => {
    const home = loopHome();
    const dir = spoolDir(home);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const texts: string[] = [];
    for (let i = 0; i < 5000; i++) {
      const text = `w-${String(i).padStart(4, '0')}`;
      texts.push(text);
      const payload = { schema_version: 1, kind: 'overflow', session_key: KEY, reason: 'shutdown', ts: 1700000000 + i * 0.001, seq: i, index: i, data: { text, session_id: SESSION } };
      fs.writeFileSync(path.join(dir, `pending-${i.toString(16).padStart(32, '0')}.json`), JSON.stringify(payload), { mode: 0o600 });
    }
    const db = openSessionDb({ home });
    db.createSession({ id: SESSION, source: 'telegram', sessionKey: KEY, startedAt: 1699999990 });
    db.close();
    await new Promise<void>((resolve, reject) => {
      const child = spawnNode(fixture('recover-wal.mjs'), [mode], { umask: 0o022, env: { HERMES_HOME: home } });
      let stdout = '';
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
        if (stdout.includes('COMMITTED 5')) child.kill('SIGKILL');
      });
      child.on('exit', (_code, signal) => {
        if (signal === 'SIGKILL') resolve();
        else reject(new Error(`recovery was not killed: stdout=${stdout} stderr=${stderr}`));
      });
    });
    const again = recover(home);
    const missing = texts.filter((t) => !again.texts.includes(t));
    expect(new Set(again.texts).size).toBe(again.texts.length);
    expect(missing.length).toBe(lost);
    if (lost === 0) {
      exactlyOnce(again.texts, texts);
      expect(fs.readdirSync(dir)).toEqual([]);
    }
  });
});
