import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ChildTask } from './protocol.js';

/** The child entry point, next to this module in dist/. */
export const CHILD_SCRIPT = fileURLToPath(new URL('./child.js', import.meta.url));

export interface ChildRun {
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/** Variables a child must never inherit from the operator's shell: the scenario sets its own. */
const SCRUBBED = ['HERMES_HOME', 'HERMES_MANAGED', 'HERMES_HOME_MODE', 'HERMES_UID', 'HERMES_GID', 'NODE_OPTIONS'];

export interface SpawnOptions {
  readonly umask: number;
  readonly env: Readonly<Record<string, string>>;
  readonly uid?: number;
  readonly gid?: number;
  readonly timeoutMs?: number;
  /** Once aborted, no further child is started (the matrix was interrupted). */
  readonly signal?: AbortSignal;
}

/** Every matrix child still running, so an interrupted matrix can stop them before it removes their users. */
const live = new Set<ChildProcess>();

/** Sends `signal` to every running matrix child; returns how many there were. */
export function killChildren(signal: NodeJS.Signals): number {
  for (const child of live) child.kill(signal);
  return live.size;
}

/** Resolves true once every matrix child has exited, false after `timeoutMs` with some still running. */
export async function waitForChildren(timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (live.size > 0 && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  return live.size === 0;
}

/**
 * Stops every matrix child: SIGTERM, then SIGKILL for any still running after `graceMs`, and waits for them to
 * exit (a user that still owns a process cannot be removed). True when none is left.
 */
export async function stopChildren(graceMs = 1500): Promise<boolean> {
  if (live.size === 0) return true;
  killChildren('SIGTERM');
  if (await waitForChildren(graceMs)) return true;
  killChildren('SIGKILL');
  return waitForChildren(5000);
}

/**
 * Runs the child under `/bin/sh -c 'umask NNNN && exec node child.js TASK'`: the umask is a property of the
 * process, so each scenario gets its own process and the CLI itself never touches its umask.
 */
export function runChild(task: ChildTask, options: SpawnOptions): Promise<ChildRun> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of SCRUBBED) env[k] = undefined;
  Object.assign(env, options.env);
  const mask = options.umask.toString(8).padStart(4, '0');
  const started = performance.now();
  return new Promise((resolve, reject) => {
    if (options.signal?.aborted === true) {
      reject(new Error('the matrix was interrupted: no further child is started'));
      return;
    }
    const child = spawn(
      '/bin/sh',
      ['-c', `umask ${mask} && exec "$0" "$@"`, process.execPath, CHILD_SCRIPT, JSON.stringify(task)],
      {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
        ...(options.uid === undefined ? {} : { uid: options.uid }),
        ...(options.gid === undefined ? {} : { gid: options.gid }),
      },
    );
    live.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d: string) => (stdout += d));
    child.stderr.on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.on('error', (err) => {
      live.delete(child);
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (status, signal) => {
      live.delete(child);
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr, ms: Math.round(performance.now() - started) });
    });
  });
}

/** The last non-empty stdout line of a child, parsed as JSON. */
export function childJson(run: ChildRun): unknown {
  const line = run.stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line) as unknown;
  } catch {
    const why = run.signal !== null ? `killed by ${run.signal}` : `exit ${String(run.status)}`;
    const err = run.stderr.trim().split('\n').slice(-3).join(' | ');
    throw new Error(`matrix child printed no result (${why})${err === '' ? '' : `: ${err}`}`);
  }
}
