import * as path from 'node:path';
import { lastJson, modeOf, runNode, spawnNode } from '@hermes/test-utils';
import { describe, expect, it } from 'vitest';
import type { RecoveryReport } from '../src/index.js';
import { fixture, names, readJson, spoolDir, tempDir } from './helpers.js';

const BASE = 1700000000;

describe('SIGTERM with 500 undelivered messages', () => {
  it('all 500 reach disk, the process exits 143, and a fresh process recovers them in chronological order', async () => {
    const home = path.join(tempDir(), 'home');
    const child = spawnNode(fixture('sigterm.mjs'), [String(BASE)], { umask: 0o022, env: { HERMES_HOME: home } });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.on('exit', (code, signal) => {
        resolve({ code, signal });
      });
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`child never got ready; stderr=${stderr}`));
      }, 30_000);
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
        if (stdout.includes('READY\n')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    child.kill('SIGTERM');
    const { code, signal } = await exited;
    // One line, the last on stderr: what reached disk (all of it, hence 143).
    expect(stderr).toBe('hermes fs-policy warning: pending flush: 500 of 500 written signal="SIGTERM" exitCode=143\n');
    expect(signal).toBeNull();
    expect(code).toBe(143);
    const outcome = JSON.parse(stdout.trim().split('\n').pop() ?? '') as unknown;
    expect(outcome).toEqual({ exitCode: 143, timedOut: false, written: 500, failed: 0 });

    const files = names(spoolDir(home));
    expect(files).toHaveLength(500);
    for (const f of files) {
      expect(f).toMatch(/^pending-[0-9a-f]{32}\.json$/);
      expect(modeOf(path.join(spoolDir(home), f))).toBe('0600');
    }
    const texts = files.map((f) => ((readJson(path.join(spoolDir(home), f)) as { data: { text: string } }).data.text)).sort();
    expect(texts[0]).toBe('m-000');
    expect(texts[499]).toBe('m-499');
    expect(new Set(texts).size).toBe(500);

    const r = runNode(
      fixture('recover.mjs'),
      [JSON.stringify({ session: { id: 'sess-500', source: 'telegram', sessionKey: 'agent:main:telegram:dm:500', startedAt: BASE - 10 } })],
      { umask: 0o022, env: { HERMES_HOME: home } },
    );
    const { report, messages } = lastJson<{ report: RecoveryReport; messages: { id: number; content: string; timestamp: number }[] }>(r);
    expect(report.inserted).toHaveLength(500);
    expect(report.kept).toEqual([]);
    expect(report.errors).toEqual([]);
    expect(names(spoolDir(home))).toEqual([]);
    const expected = Array.from({ length: 500 }, (_, i) => `m-${String(i).padStart(3, '0')}`);
    // Row ids follow arrival order (file names are random, so this is the (ts, seq) ordering at work).
    expect([...messages].sort((a, b) => a.id - b.id).map((m) => m.content)).toEqual(expected);
    expect(messages.map((m) => m.content)).toEqual(expected);
    expect(messages[0]?.timestamp).toBe(BASE);
  });
});
