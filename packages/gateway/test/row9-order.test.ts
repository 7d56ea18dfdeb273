/**
 * #24 row 9: recovery and a live flush never interleave, so per-session order holds. A real gateway process
 * holds the home's lock and flushes 5,000 messages of 5 sessions in bursts while another process runs
 * `recoverPending` over and over; afterwards the gateway recovers. In state.db, the rows of each session in id
 * order must be in arrival (timestamp) order: 0 inverted pairs, 0 lost, 0 duplicated.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openSessionDb } from '@hermes/session-db';
import { spawnNode } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import { fixture, tempDir } from './helpers.js';

const FIXTURE = fixture('row9-gateway.mjs');
const N = 5000;
const SESSIONS = 5;

function started(args: string[], home: string): { lines: Promise<string[]>; ready: Promise<void>; send: (l: string) => void; code: Promise<number | null> } {
  const child = spawnNode(FIXTURE, args, { env: { HERMES_HOME: home } });
  let stdout = '';
  let stderr = '';
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((r) => {
    onReady = r;
  });
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    if (stdout.includes('READY\n')) onReady();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const code = new Promise<number | null>((resolve) => child.on('close', resolve));
  const lines = code.then((c) => {
    if (c !== 0) throw new Error(`${args[0] ?? ''} exited ${String(c)}: ${stderr}`);
    return stdout.split('\n').filter((l) => l.startsWith('{'));
  });
  return { lines, ready, code, send: (l) => child.stdin.write(`${l}\n`) };
}

/** Pairs (a, b) of one session with id(a) < id(b) and ts(a) > ts(b). */
function inversions(rows: readonly { id: number; timestamp: number }[]): number {
  const byId = [...rows].sort((a, b) => a.id - b.id);
  let n = 0;
  for (let i = 0; i < byId.length; i++) {
    const ti = byId[i]?.timestamp ?? 0;
    for (let j = i + 1; j < byId.length; j++) if (ti > (byId[j]?.timestamp ?? 0)) n++;
  }
  return n;
}

describe('recovery while a live gateway flushes into the same home (real processes)', () => {
  it(`${String(N)} messages in bursts, another process recovering meanwhile: 0 inverted (id, ts) pairs, 0 lost, 0 duplicated`, async () => {
    const home = path.join(tempDir(), 'home');
    const db = openSessionDb({ home });
    for (let s = 0; s < SESSIONS; s++) db.createSession({ id: `sess-${String(s)}`, source: 'telegram', sessionKey: `agent:main:telegram:dm:${String(s)}`, startedAt: 1699999990 });
    db.close();
    const stop = path.join(tempDir(), 'stop');

    const gateway = started(['gateway', String(N), String(SESSIONS), '100'], home);
    await gateway.ready;
    const recoverer = started(['recoverer', stop], home);
    await recoverer.ready;
    gateway.send('go');
    const g = JSON.parse((await gateway.lines).pop() ?? '{}') as { written: number; failed: number; inserted: number; errors: string[] };
    fs.writeFileSync(stop, '');
    const r = JSON.parse((await recoverer.lines).pop() ?? '{}') as { passes: number; inserted: number; locked: number; errors: string[] };

    const check = openSessionDb({ home });
    let inverted = 0;
    const texts: string[] = [];
    for (let s = 0; s < SESSIONS; s++) {
      const messages = check.exportSession(`sess-${String(s)}`)?.messages ?? [];
      inverted += inversions(messages.map((m) => ({ id: m.id, timestamp: m.timestamp })));
      for (const m of messages) texts.push(m.content as string);
    }
    check.close();
    const unique = new Set(texts).size;
    console.log(
      `row9 order: ${String(texts.length)} rows of ${String(N)} (${String(unique)} distinct), ${String(inverted)} inverted (id, ts) pairs; ` +
        `gateway: ${String(g.written)} written, ${String(g.inserted)} recovered by it; other process: ${String(r.passes)} passes, ` +
        `${String(r.locked)} refused ELOCKED, ${String(r.inserted)} inserted`,
    );
    expect([g.written, g.failed, g.errors]).toEqual([N, 0, []]);
    expect([texts.length, unique, inverted]).toEqual([N, N, 0]);
    expect(r.errors).toEqual([]);
    // Passes before the first flush (no spool yet) and after the gateway released its lock find nothing to do.
    expect(r.locked).toBeGreaterThan(0);
    expect(r.inserted).toBe(0);
  }, 300_000);
});
