/**
 * Preconditions of tests that need the machine to provide something (root, real users, a tmpfs mount,
 * python3, Chromium, …). Outside CI a missing precondition skips the test, with the reason in its title.
 * Under CI (`CI=true`) a missing precondition is a **failure** that names what is missing: a CI run must
 * never report a green summary over tests that silently did not run.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { isMainThread } from 'node:worker_threads';
import { describe, it } from 'vitest';

export type Precondition =
  | 'root'
  | 'non-root'
  | 'linux'
  | 'useradd'
  | 'mount'
  | 'unshare'
  | 'python3'
  | 'chromium'
  | 'git'
  | 'script'
  | 'systemd-tmpfiles'
  | 'systemd-analyze'
  /** The test file runs on its process's main thread (vitest's `forks` pool): `process.seteuid` is refused in workers. */
  | 'main-thread';

/** True under CI (`CI=true` or `CI=1`). */
export const inCI = process.env.CI === 'true' || process.env.CI === '1';

/** The absolute path of an executable found on PATH, or undefined. */
export function findExecutable(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

const isRootUser = typeof process.geteuid === 'function' && process.geteuid() === 0;

function python3HasSqlite(): boolean {
  const py = findExecutable('python3');
  if (py === undefined) return false;
  // Probed lazily, once per process (see missingFor): spawning python costs ~30 ms.
  return spawnSync(py, ['-c', 'import sqlite3'], { stdio: 'ignore' }).status === 0;
}

const probes: Record<Precondition, () => string | undefined> = {
  root: () => (isRootUser ? undefined : 'root (run as uid 0)'),
  'non-root': () => (isRootUser ? 'a non-root uid' : undefined),
  linux: () => (process.platform === 'linux' ? undefined : 'Linux'),
  useradd: () => {
    const missing = ['useradd', 'userdel', 'groupadd', 'groupdel', 'getent'].filter((c) => findExecutable(c) === undefined);
    return missing.length === 0 ? undefined : `${missing.join(', ')} on PATH (package: passwd)`;
  },
  mount: () => (isRootUser && findExecutable('mount') !== undefined ? undefined : 'mount rights (root and mount on PATH)'),
  unshare: () => (findExecutable('unshare') !== undefined ? undefined : 'unshare on PATH (package: util-linux)'),
  python3: () => (python3HasSqlite() ? undefined : 'python3 with the sqlite3 module'),
  chromium: () => (chromiumPath() !== undefined ? undefined : 'Chromium (package: chromium)'),
  git: () => (findExecutable('git') !== undefined ? undefined : 'git on PATH'),
  script: () => (findExecutable('script') !== undefined ? undefined : 'script on PATH, for a pseudo-terminal (package: bsdutils)'),
  'systemd-tmpfiles': () =>
    findExecutable('systemd-tmpfiles') !== undefined ? undefined : 'systemd-tmpfiles on PATH (package: systemd)',
  'systemd-analyze': () =>
    findExecutable('systemd-analyze') !== undefined ? undefined : 'systemd-analyze on PATH (package: systemd)',
  'main-thread': () => (isMainThread ? undefined : "the process's main thread (vitest pool \"forks\"; process.seteuid is refused in worker threads)"),
};

/** Chromium's executable (Debian's `chromium`), or undefined. */
export function chromiumPath(): string | undefined {
  for (const name of ['chromium', 'chromium-browser', 'google-chrome']) {
    const p = findExecutable(name);
    if (p !== undefined) return p;
  }
  return undefined;
}

const cache = new Map<Precondition, string | undefined>();

/** What is missing for `pre`, as human-readable reasons (empty when everything is there). */
export function missingFor(pre: readonly Precondition[]): string[] {
  const out: string[] = [];
  for (const p of pre) {
    if (!cache.has(p)) cache.set(p, probes[p]());
    const why = cache.get(p);
    if (why !== undefined) out.push(why);
  }
  return out;
}

function failure(title: string, missing: readonly string[]): Error {
  return new Error(`${title}: precondition missing under CI: ${missing.join('; ')}. Install it in .ci/run, or fix the machine.`);
}

/**
 * `describe` that needs `pre`. All there: a normal describe. Missing outside CI: skipped, the reason in the
 * title. Missing under CI: one failing test that names what is missing.
 */
export function describeNeeds(pre: readonly Precondition[], title: string, fn: () => void): void {
  const missing = missingFor(pre);
  if (missing.length === 0) {
    describe(title, fn);
  } else if (inCI) {
    describe(title, () => {
      it('has its preconditions', () => {
        throw failure(title, missing);
      });
    });
  } else {
    describe.skip(`${title} [skipped: needs ${missing.join('; ')}]`, fn);
  }
}

/** `it` that needs `pre`; the same rules as {@link describeNeeds}. */
export function itNeeds(
  pre: readonly Precondition[],
  title: string,
  fn: () => unknown,
  timeout?: number,
): void {
  const missing = missingFor(pre);
  if (missing.length === 0) {
    it(title, fn as () => Promise<void>, timeout);
  } else if (inCI) {
    it(title, () => {
      throw failure(title, missing);
    });
  } else {
    it.skip(`${title} [skipped: needs ${missing.join('; ')}]`, fn as () => Promise<void>);
  }
}
