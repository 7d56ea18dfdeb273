/** Opening state.db so that SQLite cannot be led to another file (see the README's "Opening state.db"). */
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { ensureFileSync, holdDatabaseFileSync, loadEnvironment, type HeldDatabaseFile } from '@hermes/fs-policy';
import { SessionDb } from './db.js';
import { databaseError, integrityCheck, SessionDbError } from './errors.js';
import { assertSqliteAvailable, sqliteUnavailableError } from './runtime.js';
import { migrate, newerSchemaError, readSchemaVersion, SCHEMA_VERSION } from './schema.js';
import { DEFAULT_BUSY_TIMEOUT_MS, DEFAULT_CACHE_SIZE_KIB, MAX_BUSY_TIMEOUT_MS, type OpenSessionDbOptions, STATE_DB_FILE } from './types.js';

/** The file SQLite says it opened for `main` (its own absolute, link-resolved name). */
function mainFileOf(db: Database.Database): string | undefined {
  const rows = db.pragma('database_list') as { name: string; file: string }[];
  return rows.find((r) => r.name === 'main')?.file;
}

/**
 * Opens (creating when needed) the session database of a Hermes home.
 *
 * - First, better-sqlite3's native module must load (an in-memory connection, once per process): when it is
 *   missing or built for another Node.js, nothing is created or opened and the error is `ESQLITE_UNAVAILABLE`
 *   (one line, with the rebuild for npm and pnpm as its hint).
 * - A missing `state.db` is created through @hermes/fs-policy (`ensureFileSync`, kind `state-db`): 0600 on an
 *   unmanaged install, umask-derived (0660 under `UMask=0007`) on a managed one; SQLite never creates it
 *   (`fileMustExist`). SQLite then creates `-wal` and `-shm` with the database file's mode.
 * - Before SQLite sees the file, the directory holding it is held and `state.db` (and `-wal`, `-shm`,
 *   `-journal` when present) is checked through that descriptor: a link (`ESYMLINK`), FIFO, socket or device
 *   (`ENOTREGULAR`), a file owned by anyone but this uid, root, the home's owner or HERMES_UID
 *   (`EFOREIGN_OWNER`), a second name (`EHARDLINK`) are refused without opening it for I/O (nothing blocks).
 * - SQLite is handed `/proc/self/fd/<dirfd>/state.db`; after its open, the descriptor it gained must be the
 *   inode that was checked and the name it resolved must be the held directory's, and after the first
 *   statements every file it opened beside it must pass the same checks — otherwise the connection is closed
 *   and the open refused (`ERACE`, or the check's code). The directory stays held until {@link SessionDb.close}.
 * - A database whose session-db schema is newer than this code is refused (`ESCHEMA_NEWER`) before anything is
 *   written; an older one is migrated forward. `readonly` opens get the same checks and write nothing.
 *
 * Refusals are @hermes/fs-policy `FsPolicyError`s (logged with path, code and fix); failures of the database
 * itself are {@link SessionDbError}s.
 */
export function openSessionDb(options: OpenSessionDbOptions = {}): SessionDb {
  const env = options.env ?? loadEnvironment(options.home === undefined ? {} : { home: options.home });
  const home = path.resolve(options.home ?? env.home);
  const file = path.resolve(options.path ?? path.join(home, STATE_DB_FILE));
  const readonly = options.readonly === true;
  const timeout = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  const cacheKiB = options.cacheSizeKiB ?? DEFAULT_CACHE_SIZE_KIB;
  if (!Number.isSafeInteger(cacheKiB) || cacheKiB <= 0) {
    throw new SessionDbError({ code: 'EINVALID_OPTION', path: file, message: `cacheSizeKiB must be a positive integer (KiB), got ${String(cacheKiB)}` });
  }
  // SQLite's busy handler takes a C int of milliseconds: 0 (fail at once on a lock) up to 2^31 - 1.
  if (!Number.isSafeInteger(timeout) || timeout < 0 || timeout > MAX_BUSY_TIMEOUT_MS) {
    throw new SessionDbError({
      code: 'EINVALID_OPTION',
      path: file,
      message: `busyTimeoutMs must be an integer from 0 to ${String(MAX_BUSY_TIMEOUT_MS)} (milliseconds), got ${String(timeout)}`,
    });
  }

  assertSqliteAvailable();
  if (!readonly) ensureFileSync(file, { kind: 'state-db', env });
  const held: HeldDatabaseFile = holdDatabaseFileSync(file, { env, readonly });
  // The open and the first statements are the moments SQLite opens files by name: the FIFO watchdog is armed.
  return held.guard(() => {
    let db: Database.Database;
    const beforeOpen = held.snapshot();
    try {
      db = new Database(held.libraryPath, { readonly, fileMustExist: true, timeout });
    } catch (err) {
      held.close();
      throw sqliteUnavailableError(err) ?? databaseError(err, file, `cannot open ${file}`);
    }
    try {
      held.verifyOpened(beforeOpen, mainFileOf(db));
      const beforeUse = held.snapshot();
      // Negative: a size in KiB, whatever the page size. A connection-local setting, nothing is written.
      db.pragma(`cache_size = -${String(cacheKiB)}`);
      const found = readSchemaVersion(db);
      if (found > SCHEMA_VERSION) throw newerSchemaError(found, file);
      let version = found;
      if (!readonly) {
        db.pragma('journal_mode = WAL');
        db.pragma('synchronous = FULL');
        db.pragma('foreign_keys = ON');
        version = migrate(db, file);
      }
      held.verifyCompanions(beforeUse);
      return new SessionDb(db, file, readonly, version, () => {
        held.close();
      });
    } catch (err) {
      const failure = databaseError(err, file, `cannot prepare ${file}`, () => integrityCheck(() => db.pragma('integrity_check(1)')));
      try {
        db.close();
      } finally {
        held.close();
      }
      throw failure;
    }
  });
}
