import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { describeNeeds } from '@hermes/test-utils';
import { expect, it } from 'vitest';
import { BIN } from './helpers.js';

/** The matrix's throwaway accounts in /etc/passwd and /etc/group (`user NAME`, `group NAME`). */
function accounts(): string[] {
  const names = (file: string): string[] =>
    fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('hfsx'))
      .map((l) => l.split(':')[0] ?? '');
  return [...names('/etc/passwd').map((n) => `user ${n}`), ...names('/etc/group').map((n) => `group ${n}`)];
}

function tempHomes(): string[] {
  return fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith('hermes-fs-matrix-') || n.startsWith('hermes-fs-xuid-'));
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Ended {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderr: string;
}

function ended(child: ChildProcess, stderr: () => string): Promise<Ended> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the interrupted matrix did not exit within 60 s:\n${stderr()}`));
    }, 60_000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stderr: stderr() });
    });
  });
}

/** Waits until accounts that are not in `allowed` are gone (another process's matrix may be mid-run), up to 15 s. */
async function strayAccounts(allowed: readonly string[]): Promise<string[]> {
  let stray = accounts().filter((a) => !allowed.includes(a));
  for (let i = 0; i < 30 && stray.length > 0; i++) {
    await sleep(500);
    stray = accounts().filter((a) => !allowed.includes(a));
  }
  return stray;
}

describeNeeds(['root', 'useradd', 'linux'], 'hermes-fs matrix interrupted (real throwaway users)', () => {
  it('SIGINT to the process group (Ctrl-C) and SIGTERM at random moments, 12 runs: no user, group or temp home is left', async () => {
    const before = accounts();
    const tempsBefore = tempHomes();
    const runs: { signal: string; delayMs: number; code: number | null; killedBy: NodeJS.Signals | null; removed: string[] }[] = [];
    for (let i = 0; i < 12; i++) {
      const signal: NodeJS.Signals = i % 2 === 0 ? 'SIGINT' : 'SIGTERM';
      const delayMs = 100 + Math.floor(Math.random() * 2400);
      // Its own process group, so a SIGINT to the group reaches the CLI and its children, as a terminal's Ctrl-C does.
      const child = spawn(process.execPath, [BIN, 'matrix', '--cross-uid', '--json'], {
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, NO_COLOR: '1', HERMES_HOME: undefined },
      });
      let stderr = '';
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (d: string) => (stderr += d));
      child.stdout.resume();
      const done = ended(child, () => stderr);
      await sleep(delayMs);
      const pid = child.pid ?? 0;
      try {
        if (signal === 'SIGINT') process.kill(-pid, 'SIGINT');
        else process.kill(pid, 'SIGTERM');
        // Runs 2 and 8: a second Ctrl-C while it cleans up must not abandon the cleanup.
        if (i === 2 || i === 8) {
          await sleep(30);
          process.kill(-pid, 'SIGINT');
        }
      } catch {
        // it had already finished
      }
      const end = await done;
      const removed = /throwaway accounts removed: (.*)$/m.exec(end.stderr)?.[1]?.split(', ') ?? [];
      runs.push({ signal, delayMs, code: end.code, killedBy: end.signal, removed });
      // Interrupted: 130 (SIGINT) / 143 (SIGTERM) after its cleanup; or it had finished first: 0; or the signal
      // came before the matrix started (Node still loading, nothing created yet) or after it ended (all removed).
      if (end.code === null) expect(end.signal).toBe(signal);
      else expect([0, signal === 'SIGINT' ? 130 : 143], end.stderr).toContain(end.code);
      expect(end.stderr).not.toContain('could not remove');
      const now = accounts();
      for (const a of removed) expect(now, `run ${i}`).not.toContain(a);
      expect(await strayAccounts(before), `run ${i}: ${end.stderr}`).toEqual([]);
    }
    console.log(
      `matrix interrupts: ${runs.map((r) => `${r.signal}@${r.delayMs}ms→${r.killedBy ?? String(r.code)}${r.removed.length > 0 ? ` (removed ${r.removed.length})` : ''}`).join(', ')}`,
    );
    // The runs must have hit the window in which the throwaway users exist, or this test proves nothing.
    expect(runs.filter((r) => r.removed.some((a) => a.startsWith('user '))).length).toBeGreaterThanOrEqual(3);
    expect(tempHomes().filter((n) => !tempsBefore.includes(n))).toEqual([]);
  }, 600_000);
});
