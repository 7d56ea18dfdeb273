/**
 * #24 row 7: a live writer's temps are never taken over, frozen or not. A real writer flushing 2,000 messages
 * is stopped (SIGSTOP, as a paused VM) with temps on disk; a second process starts up with a clock two minutes
 * ahead (every temp is past the salvage's minute) and runs its recovery. The writer resumes and must report
 * every message truthfully; the next recovery finds 2,000, none moved aside, none stranded.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseTempName } from '@hermes/fs-policy';
import { runNode, spawnNode } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import { fixture, spoolDir, tempDir } from './helpers.js';
import { ALL, exactlyOnce, recover } from './stop-helpers.js';

const WRITER = fixture('row7-writer.mjs');

function temps(dir: string): { name: string; ino: number; size: number; mtimeMs: number }[] {
  let list: string[];
  try {
    list = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const out: { name: string; ino: number; size: number; mtimeMs: number }[] = [];
  for (const name of list) {
    if (parseTempName(name) === null) continue;
    try {
      const st = fs.lstatSync(path.join(dir, name));
      out.push({ name, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs });
    } catch {
      // renamed meanwhile
    }
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : 1));
}

function finals(dir: string): number {
  try {
    return fs.readdirSync(dir).filter((n) => n.endsWith('.json')).length;
  } catch {
    return 0;
  }
}

function stateOf(pid: number): string {
  const text = fs.readFileSync(`/proc/${String(pid)}/stat`, 'latin1');
  return text.slice(text.lastIndexOf(')') + 2).split(' ')[0] ?? '';
}

describe('a frozen writer and a second gateway (real processes, 2,000 messages)', () => {
  it('the stopped writer keeps its temps; resumed, it writes 2,000 of 2,000; recovery finds 2,000, 0 .partial, 0 stranded', async () => {
    const home = path.join(tempDir(), 'home');
    const dir = spoolDir(home);
    const writer = spawnNode(WRITER, ['writer', '2000'], { env: { HERMES_HOME: home } });
    const pid = writer.pid ?? 0;
    let stdout = '';
    let stderr = '';
    writer.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    writer.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const closed = new Promise<number | null>((resolve) => writer.on('close', resolve));
    while (!stdout.includes('READY\n')) await new Promise((r) => setTimeout(r, 10));
    writer.stdin.write('go\n');

    // Stop it while temps are on disk (a flush that completed without one seen is a failed attempt).
    let frozen: ReturnType<typeof temps> = [];
    for (let tries = 0; frozen.length === 0; tries++) {
      if (stdout.includes('"written"')) throw new Error(`the flush finished before a temp was seen (${String(tries)} polls)`);
      if (temps(dir).length > 0 && finals(dir) >= 300) {
        process.kill(pid, 'SIGSTOP');
        await new Promise((r) => setTimeout(r, 100));
        frozen = temps(dir);
        if (frozen.length === 0) process.kill(pid, 'SIGCONT');
      } else {
        await new Promise((r) => setImmediate(r));
      }
    }
    expect(stateOf(pid)).toBe('T');
    const finalsBefore = finals(dir);

    // A second gateway starts, its clock two minutes ahead of every temp: salvage and recovery run.
    const second = runNode(WRITER, ['recover'], { env: { HERMES_HOME: home } });
    const seen = JSON.parse(second.stdout.trim().split('\n').pop() ?? '{}') as { inserted: number; adopted: number; partial: number; left: string[]; errors: string[] };
    const frozenAfter = temps(dir);

    process.kill(pid, 'SIGCONT');
    const code = await closed;
    const result = JSON.parse(stdout.split('\n').find((l) => l.includes('"written"')) ?? '{}') as { written: number; failed: number; codes: string[] };
    const after = recover(home);
    const left = fs.readdirSync(dir);
    const partials = left.filter((n) => n.endsWith('.partial')).length;
    const stranded = left.filter((n) => parseTempName(n) !== null).length;
    const texts = after.texts;
    console.log(
      `row7 frozen writer: ${String(frozen.length)} temp(s) on disk when stopped (${String(finalsBefore)} payloads renamed); second start: ` +
        `${String(seen.adopted)} adopted, ${String(seen.partial)} moved aside, ${String(seen.left.filter((r) => r === 'writer-alive').length)} left (writer-alive), ` +
        `${String(seen.inserted)} inserted; resumed writer: ${String(result.written)} of 2000 written, ${String(result.failed)} failed ${JSON.stringify(result.codes)}; ` +
        `final recovery: ${String(texts.length)} of 2000 in state.db, ${String(partials)} .partial, ${String(stranded)} stranded temp(s)`,
    );
    expect(second.status, second.stderr).toBe(0);
    expect([seen.adopted, seen.partial, seen.errors]).toEqual([0, 0, []]);
    expect(seen.left).toEqual(frozen.map(() => 'writer-alive'));
    // Untouched: the same names, the same inodes, the same sizes.
    expect(frozenAfter).toEqual(frozen);
    expect([code, stderr]).toEqual([0, '']);
    expect([result.written, result.failed]).toEqual([2000, 0]);
    exactlyOnce(texts, ALL);
    expect([partials, stranded]).toEqual([0, 0]);
  }, 120_000);
});
