/**
 * Codes raised by @hermes/session-db itself. SQLite failures keep their own `SQLITE_*` code (better-sqlite3's
 * `SqliteError`); file-system failures while preparing the database file are @hermes/fs-policy's
 * `FsPolicyError` and pass through unchanged.
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
  | 'ECLOSED';

export interface SessionDbErrorInit {
  code: SessionDbCode;
  message: string;
  /** The database file the error concerns. */
  path?: string;
  cause?: unknown;
}

/** The error type of @hermes/session-db: a stable `code`, the database `path`, and the underlying `cause`. */
export class SessionDbError extends Error {
  override readonly name = 'SessionDbError';
  readonly code: SessionDbCode;
  readonly path: string | undefined;

  constructor(init: SessionDbErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = init.code;
    this.path = init.path;
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
