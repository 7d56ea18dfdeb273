import { execFileSync, spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';

export type ScenarioId = 'S1' | 'S2' | 'S3' | 'S4' | 'S5';

export interface Scenario {
  readonly id: ScenarioId;
  readonly title: string;
  /** The umask the child process runs with. */
  readonly umask: number;
  readonly managed: boolean;
  /** HERMES_HOME_MODE, when the scenario sets it. */
  readonly homeMode: string | undefined;
  /** The mode the home itself is given before the child runs (S3/S4: 2770 setgid), or undefined (home absent). */
  readonly homeDirMode: number | undefined;
  /** S4: the artifact directory exists beforehand with this mode. */
  readonly preexistingDirMode: number | undefined;
}

export const SCENARIOS: readonly Scenario[] = [
  { id: 'S1', title: 'unmanaged, umask 022', umask: 0o022, managed: false, homeMode: undefined, homeDirMode: undefined, preexistingDirMode: undefined },
  { id: 'S2', title: 'unmanaged, umask 077', umask: 0o077, managed: false, homeMode: undefined, homeDirMode: undefined, preexistingDirMode: undefined },
  { id: 'S3', title: 'managed (nixos), umask 0007, home 2770, dir absent', umask: 0o007, managed: true, homeMode: undefined, homeDirMode: 0o2770, preexistingDirMode: undefined },
  { id: 'S4', title: 'managed, dir pre-existing 0750', umask: 0o007, managed: true, homeMode: undefined, homeDirMode: 0o2770, preexistingDirMode: 0o750 },
  { id: 'S5', title: 'unmanaged, HERMES_HOME_MODE=0701, umask 022', umask: 0o022, managed: false, homeMode: '0701', homeDirMode: undefined, preexistingDirMode: undefined },
];

export function scenario(id: ScenarioId): Scenario {
  const s = SCENARIOS.find((x) => x.id === id);
  if (s === undefined) throw new Error(`unknown scenario ${id}`);
  return s;
}

/** The environment variables a scenario's child runs with. */
export function scenarioEnv(s: Scenario, home: string): Record<string, string> {
  const env: Record<string, string> = { HERMES_HOME: home };
  if (s.managed) env.HERMES_MANAGED = 'nixos';
  if (s.homeMode !== undefined) env.HERMES_HOME_MODE = s.homeMode;
  return env;
}

const createdRoots = new Set<string>();
let cleanupInstalled = false;

/** Whether temp roots are kept for inspection (HERMES_KEEP_TEST_DIRS set). */
function keepTestDirs(): boolean {
  return process.env.HERMES_KEEP_TEST_DIRS !== undefined;
}

/**
 * A fresh parent directory for test homes (0755 so other test uids can traverse it). Removed when its test file
 * ends (the projects' setup file, `vitest-setup.ts`) or, outside vitest, when the process exits — unless
 * HERMES_KEEP_TEST_DIRS is set (to inspect a failure).
 */
export function tempRoot(prefix = 'hermes-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(dir, 0o755);
  createdRoots.add(dir);
  if (!cleanupInstalled && !keepTestDirs()) {
    cleanupInstalled = true;
    process.on('exit', () => removeTempRoots());
  }
  return dir;
}

/**
 * Removes every root {@link tempRoot} made in this process so far (nothing when HERMES_KEEP_TEST_DIRS is set).
 * Answers the roots that could not be removed (a mount still busy, say): they stay for the operator.
 */
export function removeTempRoots(): string[] {
  if (keepTestDirs()) return [];
  const left: string[] = [];
  for (const root of createdRoots) {
    try {
      fs.rmSync(root, { recursive: true, force: true });
    } catch {
      left.push(root);
    }
    createdRoots.delete(root);
  }
  return left;
}

/**
 * A temp home for `s`: S1/S2/S5 leave the home absent (the artifact call creates it); S3/S4 create it 2770
 * (as the NixOS tmpfiles rule does). `preexisting` lists directories (relative to the home) to create with
 * the scenario's pre-existing mode (S4).
 */
export function makeScenarioHome(s: Scenario, options: { preexisting?: readonly string[]; root?: string } = {}): string {
  const root = options.root ?? tempRoot();
  const home = path.join(root, 'home');
  if (s.homeDirMode !== undefined) {
    fs.mkdirSync(home);
    fs.chmodSync(home, s.homeDirMode);
  }
  if (s.preexistingDirMode !== undefined) {
    for (const rel of options.preexisting ?? []) {
      const dir = path.join(home, rel);
      fs.mkdirSync(dir, { recursive: true });
      fs.chmodSync(dir, s.preexistingDirMode);
    }
  }
  return home;
}

/** Permission bits (with setgid/setuid/sticky) as four-digit octal, from lstat. */
export function modeOf(p: string): string {
  return (fs.lstatSync(p).mode & 0o7777).toString(8).padStart(4, '0');
}

export interface RunOptions {
  umask?: number;
  env?: Readonly<Record<string, string | undefined>>;
  uid?: number;
  gid?: number;
  cwd?: string;
  input?: string;
  timeoutMs?: number;
}

export interface RunResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function baseEnv(extra: RunOptions['env']): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // A child must see exactly the scenario's variables, not whatever the test runner inherited.
  for (const k of ['HERMES_HOME', 'HERMES_MANAGED', 'HERMES_HOME_MODE', 'HERMES_UID', 'HERMES_GID', 'NODE_OPTIONS']) {
    env[k] = undefined;
  }
  for (const [k, v] of Object.entries(extra ?? {})) env[k] = v;
  return env;
}

function shellArgs(script: string, args: readonly string[], umask: number | undefined): string[] {
  const mask = (umask ?? 0o022).toString(8).padStart(4, '0');
  return ['-c', `umask ${mask} && exec "$0" "$@"`, process.execPath, script, ...args];
}

/** Runs `node script args…` in a child process with its own umask (and uid/gid), synchronously. */
export function runNode(script: string, args: readonly string[] = [], options: RunOptions = {}): RunResult {
  const r: SpawnSyncReturns<string> = spawnSync('/bin/sh', shellArgs(script, args, options.umask), {
    env: baseEnv(options.env),
    encoding: 'utf8',
    cwd: options.cwd,
    input: options.input,
    timeout: options.timeoutMs ?? 60_000,
    ...(options.uid === undefined ? {} : { uid: options.uid }),
    ...(options.gid === undefined ? {} : { gid: options.gid }),
  });
  if (r.error) throw r.error;
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

/** Parses the last non-empty stdout line of a run as JSON; throws with the child's stderr when it failed. */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller states the shape it expects
export function lastJson<T = unknown>(r: RunResult): T {
  const line = r.stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line) as T;
  } catch {
    throw new Error(`child printed no JSON (status ${String(r.status)}):\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  }
}

/** Spawns `node script args…` asynchronously (for SIGTERM/SIGKILL tests); the umask as in runNode. */
export function spawnNode(script: string, args: readonly string[] = [], options: RunOptions = {}) {
  return spawn('/bin/sh', shellArgs(script, args, options.umask), {
    env: baseEnv(options.env),
    cwd: options.cwd,
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(options.uid === undefined ? {} : { uid: options.uid }),
    ...(options.gid === undefined ? {} : { gid: options.gid }),
  });
}

export const isRoot = typeof process.geteuid === 'function' && process.geteuid() === 0;
export const isLinux = process.platform === 'linux';

export interface TestUser {
  readonly name: string;
  readonly uid: number;
}

export interface TestUsers {
  readonly group: string;
  readonly gid: number;
  readonly users: readonly TestUser[];
  cleanup(): void;
}

let userCounter = 0;

/** Creates `count` real users sharing a fresh group (root only). `cleanup()` removes them and the group. */
export function createTestUsers(count: number): TestUsers {
  if (!isRoot) throw new Error('createTestUsers needs root');
  const tag = `${process.pid.toString(36)}${(userCounter++).toString(36)}${Math.floor(Math.random() * 1296).toString(36)}`;
  const group = `hmt${tag}`.slice(0, 30);
  execFileSync('groupadd', [group]);
  const gid = Number(execFileSync('getent', ['group', group], { encoding: 'utf8' }).split(':')[2]);
  const users: TestUser[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const name = `${group}u${i}`.slice(0, 31);
      execFileSync('useradd', ['-M', '-N', '-g', group, '-s', '/usr/sbin/nologin', name]);
      users.push({ name, uid: Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim()) });
    }
  } catch (err) {
    for (const u of users) spawnSync('userdel', [u.name]);
    spawnSync('groupdel', [group]);
    throw err;
  }
  return {
    group,
    gid,
    users,
    cleanup() {
      for (const u of users) spawnSync('userdel', [u.name]);
      spawnSync('groupdel', [group]);
    },
  };
}

/** A uid and the service group's gid, as a child process is run with. */
export interface Ids {
  readonly uid: number;
  readonly gid: number;
}

/** The world of an attack test: the service uid and a member of its group, and a tmpfs they both use. */
export interface AttackWorld {
  readonly users: TestUsers;
  /** The service: the first user, in the shared group. */
  readonly service: Ids;
  /** A plain member of the service group: the second user. */
  readonly attacker: Ids;
  /** A fresh tmpfs (fsync is cheap, so thousands of durable writes fit in a test; one filesystem for renames). */
  readonly mnt: string;
}

/**
 * Registers `beforeAll`/`afterAll` for an attack test (root only; call it inside `describeNeeds(['root', 'useradd',
 * 'mount'], …)`): two real users sharing a fresh group, and a tmpfs of `sizeMb` MiB mounted 0755. The returned object's
 * fields are set once `beforeAll` ran; the users and the mount are removed after the suite.
 */
export function attackWorld(sizeMb = 128): AttackWorld {
  const world = {} as { users: TestUsers; service: Ids; attacker: Ids; mnt: string };
  beforeAll(() => {
    world.users = createTestUsers(2);
    world.service = { uid: world.users.users[0]?.uid ?? -1, gid: world.users.gid };
    world.attacker = { uid: world.users.users[1]?.uid ?? -1, gid: world.users.gid };
    world.mnt = path.join(tempRoot(), 'fs');
    fs.mkdirSync(world.mnt);
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${String(sizeMb)}m,mode=0755`, 'tmpfs', world.mnt]);
  });
  afterAll(() => {
    spawnSync('umount', ['-l', world.mnt]);
    world.users.cleanup();
  });
  return world;
}

/** Whether a usable python3 with sqlite3 exists (for cross-implementation checks). */
/**
 * A preload (`NODE_OPTIONS=--import <it>`) that makes better-sqlite3's native binding fail to load the way a
 * broken install does (SQLITE_BREAK=missing, the default, or abi), without touching node_modules.
 */
export const SQLITE_UNLOADABLE = fileURLToPath(new URL('../fixtures/sqlite-unloadable.mjs', import.meta.url));

export function hasPython3(): boolean {
  const r = spawnSync('python3', ['-c', 'import sqlite3'], { encoding: 'utf8' });
  return r.status === 0;
}
export * from './needs.js';
export * from './attack.js';
