/**
 * Handing a database file to a library that opens it by name (SQLite), without letting a member of the
 * service group redirect that open.
 *
 * What SQLite really does with `/proc/self/fd/<dirfd>/state.db` (measured with strace, better-sqlite3 12 /
 * SQLite 3.5x): its unix VFS makes every name absolute and resolves each component with `lstat`/`readlink`,
 * so the magic link is turned back into the directory's textual path (`/var/lib/hermes/state.db`)
 * and the database is opened by that text (`O_RDWR | O_NOFOLLOW`), later `-wal`/`-shm`/`-journal` by the same
 * text plus a suffix (`O_CREAT | O_NOFOLLOW`). Handing it the descriptor path still pins *which directory*
 * the text names (the one held, wherever it is now), but it cannot make SQLite's own lookups descriptor
 * relative. The protection is therefore built around SQLite's open, not inside it:
 *
 * 1. before: the entry is taken through the held directory with `O_PATH | O_NOFOLLOW` (no I/O open, nothing
 *    blocks) and must be a regular file of a trusted owner with one name; the descriptor stays open, pinning
 *    the inode; existing `-wal`/`-shm`/`-journal` are checked the same way;
 * 2. after: the process's descriptor table is compared with the one taken just before the library's open:
 *    the library must have gained a descriptor on exactly the pinned inode (or, when SQLite reuses a
 *    descriptor it pooled for this process, this process must already hold that inode and no pooled
 *    descriptor of another file may exist), and the name the library reports must be the held directory's
 *    real path plus the entry's name — otherwise the library is closed and the open refused (`ERACE`);
 * 3. after the first statements: every descriptor the library gained on the home's filesystem (its WAL and
 *    shared-memory files) must be a regular file of a trusted owner with one name;
 * 4. throughout the open and the first statements ({@link HeldDatabaseFile.guard}): the FIFO watchdog
 *    completes an open SQLite makes by name that blocks on a FIFO renamed into place.
 *
 * What this cannot prevent, only detect: a member who swaps an entry in the instant between a check and the
 * library's own open makes the library open that entry; nothing is read or written before the refusal
 * except what SQLite does on open itself (for a `-wal`/`-journal` it creates as root, an `fchown` to the
 * database's owner). Running as the home's owner rather than root removes that last lever.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { currentUid, FsPolicyError, toPolicyError } from './errors.js';
import { type HermesEnvironment, loadEnvironment } from './env.js';
import { type HeldDirectory, holdDirectorySync } from './scan.js';
import { checkEntry, closeQuietly, type EntryRule, type PinnedEntry, pinEntrySync, homeOwnerOf, realPathOfFd, sameInode, trustedOwners } from './heldfile.js';
import { withFifoWatchdog } from './fifo-watchdog.js';
import { anchorMode } from './internal/anchor.js';
import { getLogger } from './logger.js';

export { checkEntry, pinEntrySync, readPinnedSync, trustedOwners, type EntryRule, type PinnedEntry, type ReadPinnedOptions } from './heldfile.js';
export { readHomeFileSync, type HomeFile, type ReadHomeFileOptions } from './homefile.js';
export { fifoUnblocks, KILL_AFTER_MS } from './fifo-watchdog.js';

/** The identity of every descriptor of this process at one moment (`fd` → `fstat`). */
export type DescriptorSnapshot = ReadonlyMap<number, fs.BigIntStats>;

/** Options of {@link holdDatabaseFileSync}. */
export interface HoldDatabaseFileOptions {
  readonly env?: HermesEnvironment;
  /** The library only reads (decides what fallback mode refuses). */
  readonly readonly?: boolean;
  /** Companion names checked when present, as suffixes of the file's name (default `-wal`, `-shm`, `-journal`). */
  readonly companions?: readonly string[];
}

/** A database file checked and pinned for a library open (see {@link holdDatabaseFileSync}). */
export interface HeldDatabaseFile {
  /** The logical path (for messages). */
  readonly path: string;
  /** The name to hand the library: the entry relative to the held directory's descriptor. */
  readonly libraryPath: string;
  /** `fstat` of the checked inode. */
  readonly stat: fs.BigIntStats;
  /** False without `/proc/self/fd` (no descriptor table to compare): only the checks before the open hold. */
  readonly verifiable: boolean;
  /** The descriptor table now: take it immediately before the library's open and before its first statements. */
  snapshot(): DescriptorSnapshot;
  /**
   * After the library's open: refuses (`ERACE`, logged) unless the library holds the checked inode and the
   * name it reports is `<held directory's real path>/<name>`. The caller closes the library on a throw.
   */
  verifyOpened(before: DescriptorSnapshot, reportedPath: string | undefined): void;
  /** After the first statements: every descriptor gained on the home's filesystem must pass the file rule. */
  verifyCompanions(before: DescriptorSnapshot): void;
  /**
   * Runs `fn` — the library's open and its first statements — with the FIFO watchdog armed over the held
   * directory (see `fifo-watchdog.ts`): an open SQLite makes by name that blocks on a FIFO renamed into place
   * is completed (and then fails), never left hanging.
   */
  guard<T>(fn: () => T): T;
  /** Releases the pin and the directory; call after the library closed its connection. Idempotent. */
  close(): void;
}

/**
 * Descriptors SQLite may still hold for a closed connection (its unix VFS pools a closed connection's
 * descriptor while another connection of this process holds locks on the inode, and reuses it for the next
 * open of that inode): `fd` → the identity verified when it was first opened.
 */
const pooled = new Map<number, fs.BigIntStats>();

function snapshotNow(): Map<number, fs.BigIntStats> {
  const out = new Map<number, fs.BigIntStats>();
  for (const name of fs.readdirSync('/proc/self/fd')) {
    const fd = Number(name);
    if (!Number.isInteger(fd)) continue;
    try {
      out.set(fd, fs.fstatSync(fd, { bigint: true }));
    } catch {
      // The descriptor readdir itself used, or one another thread closed meanwhile.
    }
  }
  return out;
}

function changedSince(before: DescriptorSnapshot, after: DescriptorSnapshot): [number, fs.BigIntStats][] {
  const out: [number, fs.BigIntStats][] = [];
  for (const [fd, st] of after) {
    const was = before.get(fd);
    if (was === undefined || !sameInode(was, st)) out.push([fd, st]);
  }
  return out;
}

function refuse(display: string, message: string): never {
  const err = new FsPolicyError({ code: 'ERACE', step: 'verify', path: display, message });
  getLogger().error(`refused: ${err.detail}`, { path: display, code: err.code, errno: null, fix: err.hint });
  throw err;
}

/**
 * Without `/proc/self/fd` the descriptor table cannot be compared after the library's open, so only the checks
 * before it hold. That is refused (`EUNSAFE_FALLBACK`) for a privileged actor (root, or HERMES_UID/HERMES_GID
 * set) and for a writer in a home others can write (managed, or group/other-writable and not sticky), unless
 * the environment carries the explicit path-fallback opt-in (logged).
 */
function refuseUnverifiable(target: string, env: HermesEnvironment, dirStat: fs.BigIntStats, readonly: boolean): void {
  const mode = Number(dirStat.mode);
  const why =
    currentUid() === 0
      ? 'the process runs as root'
      : env.uid !== undefined || env.gid !== undefined
        ? 'HERMES_UID/HERMES_GID is set'
        : !readonly && (env.managed.managed || ((mode & 0o022) !== 0 && (mode & 0o1000) === 0))
          ? 'the home is shared with other uids'
          : undefined;
  if (why === undefined) return;
  const message = `refusing to hand ${target} to the database library: without /proc/self/fd its open cannot be verified, and ${why}`;
  if ((env as { readonly allowPathFallback?: boolean }).allowPathFallback === true) {
    getLogger().warn(`${message}; allowed by the explicit path-fallback opt-in`, { path: target });
    return;
  }
  const err = new FsPolicyError({ code: 'EUNSAFE_FALLBACK', step: 'verify', path: target, message });
  getLogger().error(`refused: ${err.detail}`, { path: target, code: err.code, errno: null, fix: err.hint });
  throw err;
}

/**
 * Holds the directory of `file` (the home: by path, and through descriptors below it, as every primitive
 * reaches its directory), checks `file` there before any library sees it — a link (ESYMLINK), FIFO, socket
 * or device (ENOTREGULAR), directory (EISDIR), a file owned by anyone but this uid, root, the home's owner or
 * HERMES_UID (EFOREIGN_OWNER), a file with a second name (EHARDLINK) are refused, a missing one is ENOENT —
 * checks its companions the same way when present, and pins the inode until {@link HeldDatabaseFile.close}.
 * Nothing is opened for I/O, so a FIFO never blocks. Refusals are logged with path, code and fix.
 */
export function holdDatabaseFileSync(file: string, options: HoldDatabaseFileOptions = {}): HeldDatabaseFile {
  const env = options.env ?? loadEnvironment();
  const target = path.resolve(file);
  const name = path.basename(target);
  const dir = holdDirectorySync(path.dirname(target), { env });
  let pin: PinnedEntry | undefined;
  try {
    const rule: EntryRule = { owners: trustedOwners(homeOwnerOf(dir, env), [env.uid]), what: 'open the database' };
    pin = pinEntrySync(dir, name, rule);
    if (pin === undefined) {
      throw new FsPolicyError({ code: 'ENOENT', step: 'open', path: target, message: `${target} does not exist` });
    }
    for (const suffix of options.companions ?? ['-wal', '-shm', '-journal']) {
      const companion = pinEntrySync(dir, `${name}${suffix}`, { ...rule, what: 'let the database use' });
      if (companion !== undefined) closeQuietly(companion.fd);
    }
    const verifiable = anchorMode() === 'procfd';
    const dirStat = fs.statSync(dir.self, { bigint: true });
    if (!verifiable) refuseUnverifiable(target, env, dirStat, options.readonly === true);
    return makeHeld(dir, pin, rule, dirStat, verifiable, name);
  } catch (err) {
    if (pin !== undefined) closeQuietly(pin.fd);
    dir.close();
    if (err instanceof FsPolicyError) {
      getLogger().error(`refused: ${err.detail}`, { path: err.path, code: err.code, errno: err.errno ?? null, fix: err.hint });
    }
    throw err;
  }
}

function makeHeld(dir: HeldDirectory, pin: PinnedEntry, rule: EntryRule, dirStat: fs.BigIntStats, verifiable: boolean, name: string): HeldDatabaseFile {
  let libraryFd: number | undefined;
  let closed = false;
  const display = pin.path;
  return {
    path: display,
    libraryPath: dir.at(name),
    stat: pin.stat,
    verifiable,
    snapshot() {
      return verifiable ? snapshotNow() : new Map();
    },
    verifyOpened(before, reportedPath) {
      if (!verifiable) return;
      let dirReal: string;
      try {
        dirReal = fs.readlinkSync(dir.self);
      } catch (err) {
        throw toPolicyError(dir.explain(err), 'verify', dir.path, `readlink of the held ${dir.path}`);
      }
      const after = snapshotNow();
      const changed = changedSince(before, after);
      const mine = changed.find(([, st]) => sameInode(st, pin.stat));
      if (mine !== undefined) {
        libraryFd = mine[0];
      } else {
        // No new descriptor on the checked inode. Either the library opened something else…
        // (The FIFO watchdog's own short-lived descriptors — /proc files, directories — are not candidates.)
        const opened = changed.filter(([fd, st]) => !st.isDirectory() && realPathOfFd(fd)?.startsWith('/proc/') !== true && realPathOfFd(fd)?.startsWith('/') === true);
        if (opened.length > 0) {
          refuse(display, `the database library opened another file than the ${display} that was checked (it was replaced meanwhile)`);
        }
        // …or SQLite reused a descriptor it pooled: acceptable only when nothing but the checked inode is pooled.
        const holders = [...after].filter(([fd, st]) => fd !== pin.fd && sameInode(st, pin.stat));
        const foreign = [...pooled].filter(([fd, st]) => {
          const now = after.get(fd);
          return now !== undefined && sameInode(now, st) && !sameInode(st, pin.stat);
        });
        if (holders.length === 0 || foreign.length > 0) {
          refuse(display, `cannot tell which file the database library opened for ${display} (no new descriptor on the checked inode)`);
        }
      }
      if (reportedPath !== undefined && reportedPath !== path.join(dirReal, name)) {
        refuse(display, `the database library resolved ${display} through a link (it names another file than the one checked)`);
      }
    },
    guard(fn) {
      const fd = Number(/^\/proc\/self\/fd\/(\d+)$/.exec(dir.self)?.[1] ?? Number.NaN);
      return Number.isInteger(fd) ? withFifoWatchdog(fd, dir.path, fn) : fn();
    },
    verifyCompanions(before) {
      if (!verifiable) return;
      for (const [fd, st] of changedSince(before, snapshotNow())) {
        if (st.dev !== dirStat.dev || st.isDirectory()) continue;
        try {
          checkEntry(realPathOfFd(fd) ?? `${display} (a file the database opened)`, st, { ...rule, what: 'let the database use' });
        } catch (err) {
          if (err instanceof FsPolicyError) {
            getLogger().error(`refused: ${err.detail}`, { path: err.path, code: err.code, errno: null, fix: err.hint });
          }
          throw err;
        }
      }
    },
    close() {
      if (closed) return;
      closed = true;
      if (libraryFd !== undefined) {
        try {
          const st = fs.fstatSync(libraryFd, { bigint: true });
          if (sameInode(st, pin.stat)) pooled.set(libraryFd, st);
        } catch {
          pooled.delete(libraryFd); // closed with its connection: nothing pooled
        }
      }
      for (const [fd, st] of pooled) {
        try {
          if (!sameInode(fs.fstatSync(fd, { bigint: true }), st)) pooled.delete(fd);
        } catch {
          pooled.delete(fd);
        }
      }
      closeQuietly(pin.fd);
      dir.close();
    },
  };
}
