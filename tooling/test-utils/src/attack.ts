/**
 * Infrastructure of the attack tests: an adversary (a member of the service group) run as its own uid in its
 * own process, racing in a tight loop, and helpers to run victims and measure what changed.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The attacker script (modes: swap, relink, plant, fifo; see its header). */
export const ATTACKER = fileURLToPath(new URL('../fixtures/attacker.mjs', import.meta.url));

export interface Proc {
  readonly stdout: string;
  readonly stderr: string;
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** The variables a child of an attack test inherits beyond PATH: the anchor mode and the ASan run's settings. */
const PASSED_THROUGH = ['HERMES_FS_ANCHOR', 'HERMES_FS_NATIVE_PATH', 'LD_PRELOAD', 'ASAN_OPTIONS', 'UBSAN_OPTIONS'] as const;

function passedThrough(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of PASSED_THROUGH) {
    const value = process.env[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/**
 * Runs `node script args` as `uid`/`gid` under umask 0007 (a managed service's), resolving when it exits;
 * rejects (after SIGKILL) when it runs past `timeoutMs` — a hang is a failure, never a stuck test.
 */
export function runAs(
  script: string,
  args: readonly string[],
  as: { uid: number; gid: number },
  env: Readonly<Record<string, string>>,
  timeoutMs: number,
): Promise<Proc> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', 'umask 0007 && exec "$0" "$@"', process.execPath, script, ...args], {
      uid: as.uid,
      gid: as.gid,
      // The anchor mode and the sanitizer run's settings pass through: a suite run in one anchor mode, or under
      // AddressSanitizer (tooling/scripts/asan-test.sh), runs its victims and attackers the same way.
      env: { PATH: process.env.PATH, ...passedThrough(), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${path.basename(script)} ${args[0] ?? ''} hung: killed after ${String(timeoutMs)} ms\n${stderr}`));
    }, timeoutMs);
    child.on('exit', (status, signal) => {
      clearTimeout(timer);
      resolve({ stdout, stderr, status, signal });
    });
  });
}

/**
 * Starts the attacker (`mode` and its arguments) as `as`, runs `victim()` while it races, then stops it.
 * Returns the victim's result and the attacker's round count.
 */
export async function race<T>(
  stopFile: string,
  attack: readonly string[],
  as: { uid: number; gid: number },
  victim: () => Promise<T>,
): Promise<{ victim: T; rounds: number }> {
  const attacker = runAs(ATTACKER, [attack[0] ?? '', stopFile, '300000', ...attack.slice(1)], as, {}, 330_000);
  await new Promise((r) => setTimeout(r, 50)); // let the attacker get going
  let result: T;
  try {
    result = await victim();
  } finally {
    fs.writeFileSync(stopFile, '');
  }
  const done = await attacker;
  const line = done.stdout.trim().split('\n').pop() ?? '';
  const rounds = (JSON.parse(line) as { rounds: number }).rounds;
  return { victim: result, rounds };
}

/** Every path below `dir`, relative, sorted (links not followed). */
export function tree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`;
      out.push(r);
      if (e.isDirectory()) walk(path.join(d, e.name), r);
    }
  };
  walk(dir, '');
  return out.sort();
}

/** Mode, owner and ctime of every path below (and including) `dir`: what "nothing changed" is measured on. */
export function metadata(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const rel of ['', ...tree(dir)]) {
    const st = fs.lstatSync(path.join(dir, rel));
    out[rel === '' ? '.' : rel] = `${(st.mode & 0o7777).toString(8)} ${String(st.uid)}:${String(st.gid)} ${String(st.ctimeMs)}`;
  }
  return out;
}

/**
 * Runs `node script args` without descriptors: in a new mount namespace whose /proc is a tmpfs (procfs masked), with
 * TMPDIR=/nonexistent, umask 0007 and, for a uid other than 0, the privileges dropped to `as` by setpriv.
 * Rejects after SIGKILL when it runs past `timeoutMs`.
 */
export function runMasked(script: string, args: readonly string[], as: { uid: number; gid: number }, env: Readonly<Record<string, string>>, timeoutMs: number): Promise<Proc> {
  const drop = as.uid === 0 ? '' : `setpriv --reuid=${String(as.uid)} --regid=${String(as.gid)} --clear-groups -- `;
  return new Promise((resolve, reject) => {
    const child = spawn(
      'unshare',
      ['--mount', '--propagation', 'private', '--', '/bin/sh', '-c', `mount -t tmpfs none /proc && umask 0007 && exec ${drop}"$0" "$@"`, process.execPath, script, ...args],
      { env: { PATH: process.env.PATH, TMPDIR: '/nonexistent', ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${path.basename(script)} hung: killed after ${String(timeoutMs)} ms\n${stderr}`));
    }, timeoutMs);
    child.on('exit', (status, signal) => {
      clearTimeout(timer);
      resolve({ stdout, stderr, status, signal });
    });
  });
}
