/**
 * Whether SQLite can run in this process at all: better-sqlite3 loads its native module on the first
 * connection, and a module that is missing (an install whose build never ran) or built for another Node.js
 * fails there with a multi-line text. Here that becomes one typed error, `ESQLITE_UNAVAILABLE`, with the fix.
 */
import { createRequire } from 'node:module';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { SessionDbError } from './errors.js';

/** What {@link checkSqliteRuntime} found: SQLite's version, or why the binding does not load. */
export type SqliteRuntime =
  | { readonly ok: true; readonly sqliteVersion: string; readonly location: string | undefined }
  | { readonly ok: false; readonly error: SessionDbError };

/** The directory better-sqlite3 is installed in (where the rebuild runs), when it can be resolved. */
function bindingLocation(): string | undefined {
  try {
    return path.dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json'));
  } catch {
    return undefined;
  }
}

/** Why the native module did not load, in a few words; undefined when `err` is not a failed load of it. */
function loadFailure(err: unknown): string | undefined {
  if (!(err instanceof Error)) return undefined;
  const text = err.message;
  const code = (err as NodeJS.ErrnoException).code;
  if (/Could not locate the bindings file|Could not find module root/.test(text)) {
    return 'its compiled module (better_sqlite3.node) is missing: the install did not run its build (pnpm 10 skips unapproved builds)';
  }
  const abi = /NODE_MODULE_VERSION (\d+)\.[\s\S]*NODE_MODULE_VERSION (\d+)/.exec(text);
  if (abi !== null) {
    return `its compiled module was built for another Node.js (NODE_MODULE_VERSION ${abi[1] ?? '?'}; Node.js ${process.versions.node} needs ${abi[2] ?? process.versions.modules})`;
  }
  if (code === 'ERR_DLOPEN_FAILED' || text.includes('better_sqlite3.node')) {
    const first = (text.split('\n')[0] ?? text).replace(/\s+/g, ' ').trim();
    return `its compiled module does not load in Node.js ${process.versions.node} (${first})`;
  }
  return undefined;
}

/**
 * `err` as an `ESQLITE_UNAVAILABLE` {@link SessionDbError} when it is a failed load of better-sqlite3's
 * native module (one line: what failed, where better-sqlite3 is installed; the cause kept in `cause`), else
 * undefined.
 */
export function sqliteUnavailableError(err: unknown): SessionDbError | undefined {
  const why = loadFailure(err);
  if (why === undefined) return undefined;
  const location = bindingLocation();
  return new SessionDbError({
    code: 'ESQLITE_UNAVAILABLE',
    ...(location === undefined ? {} : { path: location }),
    message: `SQLite is unavailable: better-sqlite3${location === undefined ? '' : ` (${location})`} cannot be loaded; ${why}`,
    cause: err,
  });
}

let verified: string | undefined;

/**
 * Loads better-sqlite3's native module with an in-memory connection (no file is opened or created) and
 * reports SQLite's version, or the `ESQLITE_UNAVAILABLE` error. A success is remembered for the process.
 * Never throws for a failed load; other failures are thrown as they are.
 */
export function checkSqliteRuntime(): SqliteRuntime {
  if (verified !== undefined) return { ok: true, sqliteVersion: verified, location: bindingLocation() };
  let db: Database.Database;
  try {
    db = new Database(':memory:');
  } catch (err) {
    const error = sqliteUnavailableError(err);
    if (error === undefined) throw err;
    return { ok: false, error };
  }
  try {
    verified = String((db.prepare('SELECT sqlite_version() AS v').get() as { v: unknown }).v);
  } finally {
    db.close();
  }
  return { ok: true, sqliteVersion: verified, location: bindingLocation() };
}

/** Throws the `ESQLITE_UNAVAILABLE` {@link SessionDbError} when better-sqlite3's native module does not load. */
export function assertSqliteAvailable(): void {
  const r = checkSqliteRuntime();
  if (!r.ok) throw r.error;
}
