/**
 * An unusable SQLite binding (#25 item 3): the doctor reports `sqlite-unavailable` (an error, exit 1) with the
 * fix for npm and pnpm, and `pending recover` and `save` print the same one-line error and fix — no "Tried:"
 * path dump, no "run again with --debug". The break is real and local to the child: a preload makes the real
 * `bindings` package find no better_sqlite3.node (or makes the load fail with dlopen's ABI text).
 */
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SQLITE_UNLOADABLE } from '@hermes/test-utils';
import { cleanupHomes, cli, cliJson, freshHome, seedHome, type SeedResult } from './helpers.js';

afterAll(cleanupHomes);

const PRELOAD = SQLITE_UNLOADABLE;
const LOCATION = path.dirname(createRequire(createRequire(import.meta.resolve('@hermes/session-db')).resolve('better-sqlite3')).resolve('better-sqlite3/package.json'));
const FIX =
  'build better-sqlite3 for this Node.js where it is installed — npm: `npm rebuild better-sqlite3`; ' +
  'pnpm 10 builds it only once approved: `pnpm approve-builds -g` (global install) or `pnpm approve-builds` (project), ' +
  'or install with `pnpm add <package> --allow-build=better-sqlite3`; after a Node.js upgrade: `pnpm rebuild better-sqlite3`. ' +
  'Without a prebuilt binary for this Node.js the build compiles it (python3, make and a C++ compiler).';
const MISSING =
  `SQLite is unavailable: better-sqlite3 (${LOCATION}) cannot be loaded; its compiled module (better_sqlite3.node) is missing: ` +
  'the install did not run its build (pnpm 10 skips unapproved builds)';
const ABI =
  `SQLite is unavailable: better-sqlite3 (${LOCATION}) cannot be loaded; its compiled module was built for another Node.js ` +
  `(NODE_MODULE_VERSION 108; Node.js ${process.versions.node} needs ${process.versions.modules})`;

function broken(mode: 'missing' | 'abi' = 'missing'): Record<string, string> {
  return { NODE_OPTIONS: `--import ${PRELOAD}`, SQLITE_BREAK: mode, NO_COLOR: '1' };
}

interface DoctorJson {
  findings: { type: string; severity: string; path: string; problem: string; fix: string; fixable: boolean }[];
  summary: { errors: number };
}

describe('an unloadable better-sqlite3', () => {
  let home: string;
  let seed: SeedResult;

  beforeAll(() => {
    home = freshHome();
    seed = seedHome(home);
  });

  it('doctor: a sqlite-unavailable error finding with the npm and pnpm fix, exit 1; none when the binding loads', () => {
    const { run, json } = cliJson<DoctorJson>(['doctor', '--home', home], { env: broken() });
    const found = json.findings.filter((f) => f.type === 'sqlite-unavailable');
    const healthy = cliJson<DoctorJson>(['doctor', '--home', home]);
    const healthyFound = healthy.json.findings.filter((f) => f.type === 'sqlite-unavailable').length;
    console.log(`doctor: exit ${String(run.status)}, sqlite-unavailable findings ${String(found.length)} (binding loads: ${String(healthyFound)}, exit ${String(healthy.run.status)})`);
    expect(run.status, run.stderr).toBe(1);
    expect(found).toEqual([
      {
        type: 'sqlite-unavailable',
        severity: 'error',
        path: LOCATION,
        kind: null,
        problem: `${MISSING}: hermes-fs save, pending recover and the gateway's recovery cannot open state.db`,
        fix: FIX,
        fixable: false,
      },
    ]);
    expect(healthyFound).toBe(0);
    const text = cli(['doctor', '--home', home], { env: broken() });
    expect(text.status, text.stderr).toBe(1);
    expect(text.stdout).toContain('ERROR   sqlite-unavailable');
    expect(text.stdout).toContain('`pnpm approve-builds -g`');
  });

  it('pending recover: one error line and the fix, exit 2, nothing created (missing build and ABI mismatch)', () => {
    for (const [mode, message] of [
      ['missing', MISSING],
      ['abi', ABI],
    ] as const) {
      const r = cli(['pending', 'recover', '--home', home], { env: broken(mode) });
      const lines = r.stderr.trimEnd().split('\n');
      console.log(`recover (${mode}): exit ${String(r.status)}, stderr lines ${String(lines.length)}, ${String(r.stderr.length)} bytes`);
      expect(r.status, r.stderr).toBe(2);
      expect(lines).toEqual([`hermes-fs: error: ${message} (ESQLITE_UNAVAILABLE)`, `hint: ${FIX}`]);
    }
    const empty = freshHome();
    fs.mkdirSync(empty, { mode: 0o700 });
    fs.mkdirSync(path.join(empty, 'pending_messages'), { mode: 0o700 });
    fs.copyFileSync(seed.payload, path.join(empty, 'pending_messages', path.basename(seed.payload)));
    const create = cliJson<{ ok: boolean; exitCode: number; error: { code: string; message: string; hint: string } }>(['pending', 'recover', '--create-db', '--home', empty], { env: broken() });
    expect(create.run.status, create.run.stderr).toBe(2);
    expect(create.json.error).toEqual({ code: 'ESQLITE_UNAVAILABLE', message: `${MISSING} (ESQLITE_UNAVAILABLE)`, path: LOCATION, hint: FIX });
    expect(fs.existsSync(path.join(empty, 'state.db'))).toBe(false);
  });

  it('save: the same line and fix, exit 1', () => {
    const r = cli(['save', '--session', seed.sessionId, '--home', home], { env: broken() });
    const lines = r.stderr.trimEnd().split('\n');
    console.log(`save: exit ${String(r.status)}, stderr lines ${String(lines.length)}, ${String(r.stderr.length)} bytes`);
    expect(r.status, r.stderr).toBe(1);
    expect(lines).toEqual([`(x_x) Failed to save: ${MISSING}`, `hint: ${FIX}`]);
    expect(r.stderr).not.toContain('Tried');
    expect(r.stderr).not.toContain('--debug');
  });
});
