import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Codes raised by @hermes/session-db itself, plus the SQLite result codes (`SQLITE_READONLY`,
 * `SQLITE_CANTOPEN`, `SQLITE_BUSY`, `SQLITE_FULL`, …) of a database failure, which keep their name. File-system
 * failures while preparing the database file are @hermes/fs-policy's `FsPolicyError` and pass through unchanged.
 */
export type SessionDbCode =
  /** The database records a schema version newer than this code knows; nothing was changed. */
  | 'ESCHEMA_NEWER'
  /** An existing `sessions`/`messages` table lacks a required column that cannot be added. */
  | 'ESCHEMA_INCOMPATIBLE'
  /** A read-only handle was asked to write, or the schema needs a migration a read-only handle cannot run. */
  | 'EREADONLY'
  /** The message refers to a session id that has no row in `sessions`. */
  | 'ESESSION_MISSING'
  /** `createSession` with an id that already exists. */
  | 'ESESSION_EXISTS'
  /** A value cannot be stored in the column it is meant for (wrong type, empty role, bad JSON, …). */
  | 'EINVALID_ROW'
  /** The handle was closed. */
  | 'ECLOSED'
  /** An option of `openSessionDb` has a value it cannot take (the message names it); nothing was opened. */
  | 'EINVALID_OPTION'
  /**
   * better-sqlite3's native module cannot be loaded in this process: missing (its install script never ran, as
   * after a pnpm 10 install that did not approve it) or built for another Node.js (`NODE_MODULE_VERSION`).
   * Nothing was opened or created.
   */
  | 'ESQLITE_UNAVAILABLE'
  /**
   * SQLite reported a full disk or an I/O error (`SQLITE_FULL`, `SQLITE_IOERR_*`) and the filesystem holding
   * the database has (almost) no space left: the real cause. The SQLite code is kept in `sqliteCode`.
   */
  | 'ENOSPC'
  /** A failure of the database itself (open, write, checkpoint): SQLite's extended result code. */
  | `SQLITE_${string}`;

export interface SessionDbErrorInit {
  code: SessionDbCode;
  message: string;
  /** The database file the error concerns. */
  path?: string;
  /** The fix, in one line; derived from the code when omitted. */
  hint?: string;
  /** The SQLite result code when `code` names another cause (`ENOSPC`). */
  sqliteCode?: string;
  cause?: unknown;
}

/**
 * The fix for a native module that does not load, for every package manager: the build is run (approved, for
 * pnpm 10) and redone for this Node.js.
 */
export const SQLITE_UNAVAILABLE_FIX =
  'build better-sqlite3 for this Node.js where it is installed — npm: `npm rebuild better-sqlite3`; ' +
  'pnpm 10 builds it only once approved: `pnpm approve-builds -g` (global install) or `pnpm approve-builds` (project), ' +
  'or install with `pnpm add <package> --allow-build=better-sqlite3`; after a Node.js upgrade: `pnpm rebuild better-sqlite3`. ' +
  'Without a prebuilt binary for this Node.js the build compiles it (python3, make and a C++ compiler).';

function euid(): number {
  return typeof process.geteuid === 'function' ? process.geteuid() : -1;
}

function egid(): number {
  return typeof process.getegid === 'function' ? process.getegid() : -1;
}

/**
 * The fix for a database failure, in one line, naming the database file and the uid. `SQLITE_READONLY` and
 * `SQLITE_CANTOPEN` name state.db (and its `-wal`/`-shm`), never a directory the caller happened to work on.
 */
export function sqliteHint(code: string, file: string | undefined, uid: number = euid(), gid: number = egid()): string {
  const db = file ?? 'state.db';
  const base = code.startsWith('SQLITE_') ? code.replace(/^(SQLITE_[A-Z]+).*$/, '$1') : code;
  switch (base) {
    case 'SQLITE_READONLY':
    case 'SQLITE_PERM':
    case 'SQLITE_AUTH':
      return (
        `${db} (or its -wal/-shm, or the directory holding them) is not writable by uid ${uid} (gid ${gid}). ` +
        `On a managed install state.db is group-writable (0660) for the service group: run \`hermes-fs doctor --fix\`. ` +
        `Otherwise run as the owner of ${db}, or give this uid its own HERMES_HOME.`
      );
    case 'SQLITE_CANTOPEN':
      return (
        `uid ${uid} (gid ${gid}) cannot open ${db}: the file or the directory holding it is missing or not accessible ` +
        `(SQLite must also be able to create ${db}-wal and ${db}-shm beside it). Create the Hermes home first, or ` +
        `make its directory writable for this uid (managed install: \`hermes-fs doctor --fix\`).`
      );
    case 'SQLITE_BUSY':
    case 'SQLITE_LOCKED':
      return `another process held the write lock of ${db} longer than the busy timeout; retry, and if it persists find the process that keeps ${db} locked.`;
    case 'ENOSPC':
    case 'SQLITE_FULL':
      return `the filesystem holding ${db} is full (or over quota): free space there (\`df ${path.dirname(db)}\`) and retry. The statement that failed was rolled back; what was committed before it stays committed.`;
    case 'SQLITE_IOERR':
      return `the disk or filesystem holding ${db} reported an I/O error; check the device (dmesg) and its free space, and retry.`;
    case 'SQLITE_CORRUPT':
    case 'SQLITE_NOTADB':
      return `SQLite reported ${code} for ${db}; nothing was changed. Keep the spool (pending_messages/) and run \`sqlite3 ${db} 'PRAGMA integrity_check'\`: only when it reports errors is ${db} damaged (then restore or repair it, e.g. \`sqlite3 ${db} .recover\`).`;
    case 'ESCHEMA_NEWER':
      return `upgrade @hermes/session-db; ${db} was left unchanged.`;
    case 'EREADONLY':
      return `open ${db} without \`readonly: true\` to write to it.`;
    case 'ESCHEMA_INCOMPATIBLE':
      return `${db} is not a Hermes session database; point HERMES_HOME (or \`path\`) at the right file.`;
    case 'EINVALID_ROW':
      return `pass a value of the column's type (timestamps are epoch seconds); nothing was written.`;
    case 'ESESSION_MISSING':
      return `create the session first (createSession), or pass the id of an existing one; nothing was written.`;
    case 'ESESSION_EXISTS':
      return `choose another session id, or omit it to get a random one.`;
    case 'ECLOSED':
      return `open the database again (openSessionDb) before using it.`;
    case 'EINVALID_OPTION':
      return `pass the option as its documentation says, or omit it for the default; ${db} was not opened.`;
    case 'ESQLITE_UNAVAILABLE':
      return SQLITE_UNAVAILABLE_FIX;
    default:
      return `see the SQLite error above for ${db}; retry once the cause is fixed.`;
  }
}

/**
 * The error type of @hermes/session-db: a stable `code`, the database `path`, the uid/gid the process ran as,
 * a one-line `hint` (the fix) and the underlying `cause`.
 */
export class SessionDbError extends Error {
  override readonly name = 'SessionDbError';
  readonly code: SessionDbCode;
  readonly path: string | undefined;
  readonly uid: number;
  readonly gid: number;
  readonly hint: string;
  /** The SQLite result code when `code` names the real cause instead (`ENOSPC`). */
  readonly sqliteCode: string | undefined;

  constructor(init: SessionDbErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = init.code;
    this.sqliteCode = init.sqliteCode;
    this.path = init.path;
    this.uid = euid();
    this.gid = egid();
    this.hint = init.hint ?? sqliteHint(init.code, init.path, this.uid, this.gid);
  }

  /** The whole story in one line: the code and the file first, then what happened, as whom, and the fix. */
  toLine(): string {
    return `${this.code} at ${this.path ?? 'the session database'} (uid ${this.uid}): ${this.message} — fix: ${this.hint}`;
  }
}

/** True for errors that describe one bad row rather than a broken or unavailable database. */
export function isRowRejection(err: unknown): boolean {
  if (err instanceof SessionDbError) return err.code === 'EINVALID_ROW' || err.code === 'ESESSION_MISSING';
  if (err instanceof TypeError || err instanceof RangeError) return true; // better-sqlite3 binding errors
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return code.startsWith('SQLITE_CONSTRAINT') || code === 'SQLITE_MISMATCH' || code === 'SQLITE_TOOBIG';
}

/**
 * `; state.db is owned by uid 0 gid 0, mode 0600` (or that it is missing): what an access failure turns on.
 * Metadata for a message only, taken with `lstat` (a link is described, never followed) after the open
 * failed; nothing is opened or acted on through this path.
 */
function fileFacts(file: string): string {
  try {
    const st = fs.lstatSync(file);
    return `; ${path.basename(file)} is owned by uid ${String(st.uid)} gid ${String(st.gid)}, mode ${(st.mode & 0o7777).toString(8).padStart(4, '0')}`;
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code;
    return `; ${path.basename(file)} cannot be examined (${typeof code === 'string' ? code : 'unknown error'})`;
  }
}

/** Below this many available bytes, a filesystem is full for SQLite (a WAL frame, a 32 KiB -shm chunk). */
export const FULL_BELOW_BYTES = 64 * 1024;

/**
 * The space left to this uid on the filesystem holding `file` (`statfs` of its directory), or undefined when
 * it cannot be measured.
 */
function availableBytes(file: string): number | undefined {
  try {
    const st = fs.statfsSync(path.dirname(file));
    return st.bavail * st.bsize;
  } catch {
    return undefined;
  }
}

/** What `PRAGMA integrity_check` found: `ok`, the first problem it names, or why it could not run. */
export type IntegrityVerdict = { readonly ok: true } | { readonly ok: false; readonly problem: string } | { readonly ok: undefined; readonly why: string };

/**
 * Runs `PRAGMA integrity_check(1)` on an open connection: whether a database SQLite called corrupt is damaged.
 * Never throws.
 */
export function integrityCheck(run: () => unknown): IntegrityVerdict {
  try {
    const rows = run() as { integrity_check?: unknown }[];
    const first = rows[0]?.integrity_check;
    if (rows.length === 1 && first === 'ok') return { ok: true };
    return { ok: false, problem: typeof first === 'string' ? first : JSON.stringify(rows[0]) };
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code;
    return { ok: undefined, why: `${typeof code === 'string' ? `${code}: ` : ''}${err instanceof Error ? err.message : String(err)}` };
  }
}

/**
 * A database failure (an error that is not one bad row) as a {@link SessionDbError} that keeps SQLite's code
 * and names the database file, the uid and the fix. A SessionDbError, a row rejection and anything without a
 * `SQLITE_*` code are returned unchanged. The code names the real cause where SQLite's does not:
 * - `SQLITE_FULL` or `SQLITE_IOERR_*` while the filesystem holding the file has less than 64 KiB available is
 *   `ENOSPC` (SQLite's code in `sqliteCode` and the message), whatever part of SQLite ran out (a `-shm` that
 *   could not grow says `SQLITE_IOERR_SHMSIZE`);
 * - `SQLITE_CORRUPT`/`SQLITE_NOTADB` say the file is damaged only when `integrity` (an `integrity_check` of it)
 *   found a problem; when the check passes, they say so.
 */
export function databaseError(err: unknown, file: string, what: string, integrity?: () => IntegrityVerdict): unknown {
  if (err instanceof SessionDbError || isRowRejection(err)) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return err;
  let detail = err instanceof Error ? err.message : String(err);
  if (/^SQLITE_(READONLY|CANTOPEN|PERM|AUTH)/.test(code)) detail += fileFacts(file);
  if (/^SQLITE_(FULL|IOERR)/.test(code)) {
    const avail = availableBytes(file);
    if (avail !== undefined && avail < FULL_BELOW_BYTES) {
      return new SessionDbError({
        code: 'ENOSPC',
        sqliteCode: code,
        path: file,
        message: `${what}: the filesystem holding ${path.basename(file)} is full (${String(avail)} bytes available); SQLite reported ${code}: ${detail}`,
        cause: err,
      });
    }
  }
  if (/^SQLITE_(CORRUPT|NOTADB)/.test(code) && integrity !== undefined) {
    const v = integrity();
    const db = file;
    if (v.ok === true) {
      return new SessionDbError({
        code: code as SessionDbCode,
        path: file,
        message: `${what}: ${detail}; PRAGMA integrity_check passes, so ${path.basename(file)} is not damaged`,
        hint: `SQLite reported ${code} for ${db} while its integrity_check passes: nothing was changed; retry, and if it persists check the disk (dmesg) and whether another program rewrote ${db}, its -wal or -shm. Keep the spool (pending_messages/).`,
        cause: err,
      });
    }
    if (v.ok === false) {
      return new SessionDbError({
        code: code as SessionDbCode,
        path: file,
        message: `${what}: ${detail}; PRAGMA integrity_check fails (${v.problem}): ${path.basename(file)} is damaged`,
        hint: `${db} is damaged; nothing was changed. Keep the spool (pending_messages/) and restore or repair ${db} (e.g. \`sqlite3 ${db} .recover\`).`,
        cause: err,
      });
    }
    detail += `; PRAGMA integrity_check could not run (${v.why})`;
  }
  return new SessionDbError({ code: code as SessionDbCode, path: file, message: `${what}: ${detail}`, cause: err });
}
