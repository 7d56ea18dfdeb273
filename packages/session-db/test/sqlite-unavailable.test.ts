/**
 * A better-sqlite3 whose native module does not load (missing build, other Node.js ABI) is one typed error,
 * ESQLITE_UNAVAILABLE, in one line with the fix for npm and pnpm — and nothing is created before it.
 * The break is real: a preload makes the real `bindings` package find no `better_sqlite3.node` (or makes the
 * load fail with dlopen's ABI text); node_modules is not touched.
 */
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { lastJson, runNode, SQLITE_UNLOADABLE } from '@hermes/test-utils';
import { expect, it } from 'vitest';
import { tempDir } from './helpers.js';

const OPEN = fileURLToPath(new URL('./fixtures/open-fail.mjs', import.meta.url));
const PRELOAD = SQLITE_UNLOADABLE;
const LOCATION = path.dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json'));
const FIX =
  'build better-sqlite3 for this Node.js where it is installed — npm: `npm rebuild better-sqlite3`; ' +
  'pnpm 10 builds it only once approved: `pnpm approve-builds -g` (global install) or `pnpm approve-builds` (project), ' +
  'or install with `pnpm add <package> --allow-build=better-sqlite3`; after a Node.js upgrade: `pnpm rebuild better-sqlite3`. ' +
  'Without a prebuilt binary for this Node.js the build compiles it (python3, make and a C++ compiler).';

interface Failure {
  ok: boolean;
  code?: string;
  path?: string;
  message?: string;
  hint?: string;
  line?: string;
}

function openBroken(mode: 'missing' | 'abi'): { r: Failure; created: boolean } {
  const home = path.join(tempDir(), 'home');
  fs.mkdirSync(home, { mode: 0o700 });
  const r = lastJson<Failure>(runNode(OPEN, [], { env: { HERMES_HOME: home, NODE_OPTIONS: `--import ${PRELOAD}`, SQLITE_BREAK: mode } }));
  return { r, created: fs.existsSync(path.join(home, 'state.db')) };
}

it('a missing native module is ESQLITE_UNAVAILABLE, one line with the npm and pnpm fix; state.db is not created', () => {
  const { r, created } = openBroken('missing');
  const message =
    `SQLite is unavailable: better-sqlite3 (${LOCATION}) cannot be loaded; its compiled module (better_sqlite3.node) is missing: ` +
    'the install did not run its build (pnpm 10 skips unapproved builds)';
  console.log(`missing binding: code ${String(r.code)}, message ${String(r.message?.length)} chars, lines ${String(r.line?.split('\n').length)}, state.db created ${String(created)}`);
  expect(r).toMatchObject({ ok: false, code: 'ESQLITE_UNAVAILABLE', path: LOCATION, message, hint: FIX });
  expect(r.line).toBe(`ESQLITE_UNAVAILABLE at ${LOCATION} (uid ${String(process.geteuid?.())}): ${message} — fix: ${FIX}`);
  expect(r.line).not.toContain('Tried');
  expect(created).toBe(false);
});

it('a module built for another Node.js names both ABI versions', () => {
  const { r, created } = openBroken('abi');
  const message =
    `SQLite is unavailable: better-sqlite3 (${LOCATION}) cannot be loaded; its compiled module was built for another Node.js ` +
    `(NODE_MODULE_VERSION 108; Node.js ${process.versions.node} needs ${process.versions.modules})`;
  console.log(`ABI mismatch: code ${String(r.code)}, message ${String(r.message?.length)} chars, state.db created ${String(created)}`);
  expect(r).toMatchObject({ ok: false, code: 'ESQLITE_UNAVAILABLE', message, hint: FIX });
  expect(created).toBe(false);
});

it('a loadable binding opens as before (the check is silent)', () => {
  const home = path.join(tempDir(), 'home');
  fs.mkdirSync(home, { mode: 0o700 });
  const r = lastJson<Failure>(runNode(OPEN, [], { env: { HERMES_HOME: home } }));
  console.log(`working binding: ok ${String(r.ok)}`);
  expect(r).toEqual({ ok: true });
});
