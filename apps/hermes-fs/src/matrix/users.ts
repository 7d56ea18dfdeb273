/**
 * Real throwaway users for the cross-uid rows (root only): one fresh group and two members created with
 * groupadd/useradd, removed with userdel/groupdel when the matrix ends — also on failure or when it is
 * interrupted. The names are fixed before anything is created, so a cleanup that runs at any moment knows
 * every account that may exist. The account tools run in their own session: a Ctrl-C on the terminal reaches
 * the matrix (which then cleans up), never a half-done useradd holding /etc/passwd's lock.
 */
import { execFileSync, spawnSync, type SpawnSyncOptionsWithStringEncoding, type SpawnSyncReturns } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';

export interface ThrowawayUser {
  readonly name: string;
  readonly uid: number;
}

/** The accounts a set of throwaway users consists of, named before any is created. */
export interface PlannedAccounts {
  readonly group: string;
  readonly users: readonly string[];
}

export interface ThrowawayUsers {
  readonly group: string;
  readonly gid: number;
  readonly users: readonly ThrowawayUser[];
}

/** Exit status of useradd/userdel/groupadd/groupdel when the password or group file is locked or busy. */
const LOCKED = new Set([1, 10]);
/** userdel/groupdel: the account does not exist (already gone). */
const NO_SUCH_ACCOUNT = 6;

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs an account tool in its own session (a terminal's Ctrl-C does not interrupt it half-way). */
function tool(cmd: string, args: readonly string[]): SpawnSyncReturns<string> {
  // `detached` (setsid) is honoured by spawnSync as by spawn; @types/node only declares it for spawn.
  const options: SpawnSyncOptionsWithStringEncoding & { detached: boolean } = {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
    timeout: 30_000,
  };
  return spawnSync(cmd, args, options);
}

/** Runs a creating tool, retrying while another process holds the password files' lock; throws on failure. */
function create(cmd: string, args: readonly string[]): void {
  let last: SpawnSyncReturns<string> | undefined;
  for (let attempt = 0; attempt < 8; attempt++) {
    last = tool(cmd, args);
    if (last.error !== undefined) throw last.error;
    if (last.status === 0) return;
    if (!LOCKED.has(last.status ?? -1)) break;
    sleepSync(50 * (attempt + 1));
  }
  throw new Error(`${cmd} ${args.join(' ')} failed (exit ${String(last?.status)}): ${last?.stderr.trim() ?? ''}`);
}

function idOf(args: string[]): number {
  return Number(execFileSync('id', args, { encoding: 'utf8' }).trim());
}

function nologinShell(): string {
  for (const s of ['/usr/sbin/nologin', '/sbin/nologin', '/bin/false']) if (fs.existsSync(s)) return s;
  return '/bin/false';
}

/** Fresh names for a group and `count` members (`hfsx<8 hex>`, members `…a`, `…b`, …). */
export function planAccounts(count: number): PlannedAccounts {
  const group = `hfsx${randomBytes(4).toString('hex')}`;
  return { group, users: Array.from({ length: count }, (_, i) => `${group}${String.fromCharCode(97 + i)}`) };
}

/**
 * Creates the planned group and users. On failure, what was created is removed before the error is thrown
 * (the caller's cleanup, which knows the plan, removes it again if that failed too).
 */
export async function createAccounts(plan: PlannedAccounts): Promise<ThrowawayUsers> {
  try {
    create('groupadd', [plan.group]);
    const gid = Number(execFileSync('getent', ['group', plan.group], { encoding: 'utf8' }).split(':')[2]);
    const shell = nologinShell();
    const users: ThrowawayUser[] = [];
    for (const name of plan.users) {
      create('useradd', ['-M', '-N', '-g', plan.group, '-s', shell, name]);
      users.push({ name, uid: idOf(['-u', name]) });
    }
    return { group: plan.group, gid, users };
  } catch (err) {
    await removeAccounts(plan);
    throw err;
  }
}

function exists(database: 'passwd' | 'group', name: string): boolean {
  return spawnSync('getent', [database, name], { stdio: 'ignore' }).status === 0;
}

/**
 * Removes the planned users, then the group, retrying while the password files are locked or a user still
 * owns a running process (the caller kills and waits for its children first). An account that does not
 * exist counts as removed. Returns what is left, as `user NAME` / `group NAME` (empty when all are gone).
 */
export async function removeAccounts(plan: PlannedAccounts, options: { attempts?: number } = {}): Promise<string[]> {
  const users = new Set(plan.users);
  let group = true;
  const attempts = options.attempts ?? 10;
  for (let attempt = 0; attempt < attempts && (users.size > 0 || group); attempt++) {
    if (attempt > 0) await sleep(Math.min(1000, 100 * attempt));
    for (const name of [...users]) {
      const r = tool('userdel', [name]);
      if (r.status === 0 || r.status === NO_SUCH_ACCOUNT) users.delete(name);
    }
    if (users.size === 0) {
      const r = tool('groupdel', [plan.group]);
      if (r.status === 0 || r.status === NO_SUCH_ACCOUNT) group = false;
    }
  }
  const left: string[] = [];
  for (const name of plan.users) if (exists('passwd', name)) left.push(`user ${name}`);
  if (exists('group', plan.group)) left.push(`group ${plan.group}`);
  return left;
}
