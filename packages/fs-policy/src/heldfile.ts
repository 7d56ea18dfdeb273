/**
 * Files inside a held directory, examined before anything reads them or hands their name to a library.
 *
 * An entry is taken with `O_PATH | O_NOFOLLOW` relative to the held directory's descriptor: that neither
 * follows a link, nor opens a FIFO or device for I/O (so nothing blocks and no driver sees an open), nor
 * needs read permission. Its `fstat` is then the whole truth about the entry, and the descriptor pins the
 * inode (its number cannot be given to another file while it is held), so a later identity comparison
 * cannot be fooled by inode reuse.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { HermesEnvironment } from './env.js';
import { currentUid, errnoCode, FsPolicyError, toPolicyError } from './errors.js';
import type { HeldDirectory } from './scan.js';
import { anchorMode, O_PATH } from './internal/anchor.js';

/** What an entry must be: who may own it, and whether more than one name may lead to it. */
export interface EntryRule {
  /** The uids whose file is accepted (see {@link trustedOwners}). */
  readonly owners: ReadonlySet<number>;
  /** Accept `nlink > 1` (default false: a second name is refused with EHARDLINK). */
  readonly allowHardLinks?: boolean;
  /** Words for messages: `open the session database`, `read the config file`. */
  readonly what: string;
}

/** A checked entry: its pinning descriptor and the `fstat` taken on it. */
export interface PinnedEntry {
  readonly path: string;
  /** An `O_PATH` descriptor in `procfd` mode; elsewhere a read-only one opened `O_NONBLOCK`. */
  readonly fd: number;
  readonly stat: fs.BigIntStats;
}

/**
 * How an entry is taken: `O_PATH | O_NOFOLLOW` where descriptors can be reopened through `/proc/self/fd`
 * (no I/O open at all); elsewhere `O_RDONLY | O_NOFOLLOW | O_NONBLOCK` (a FIFO still never blocks).
 */
export function pinFlags(): number {
  return anchorMode() === 'procfd' && O_PATH !== 0
    ? O_PATH | fs.constants.O_NOFOLLOW
    : fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;
}

/** The uid owning `dir` when it is the home itself (a held descriptor's `stat`), else undefined. */
export function homeOwnerOf(dir: HeldDirectory, env: Pick<HermesEnvironment, 'home'>): number | undefined {
  if (dir.path !== path.resolve(env.home)) return undefined;
  try {
    return fs.statSync(dir.self).uid;
  } catch (err) {
    throw toPolicyError(dir.explain(err), 'verify', dir.path, `stat of the home ${dir.path}`);
  }
}

/**
 * The owners trusted for a file in a home: this process's uid, root, the home's owner (when known) and the
 * extra uids given (HERMES_UID for kinds it applies to). Root and the home's owner can replace the home's
 * content anyway; a file of any other uid may have been planted by a member of the service group.
 */
export function trustedOwners(homeOwner: number | undefined, extra: readonly (number | undefined)[] = []): ReadonlySet<number> {
  const set = new Set<number>([currentUid(), 0]);
  if (homeOwner !== undefined) set.add(homeOwner);
  for (const u of extra) if (u !== undefined) set.add(u);
  set.delete(-1);
  return set;
}

function typeOf(st: fs.BigIntStats): string {
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

/**
 * Throws the typed refusal for an entry that is not a regular file of a trusted owner with one name:
 * ESYMLINK, EISDIR, ENOTREGULAR (FIFO, socket, device), EFOREIGN_OWNER, EHARDLINK.
 */
export function checkEntry(display: string, st: fs.BigIntStats, rule: EntryRule): void {
  const no = (code: string, why: string, hint: string): never => {
    throw new FsPolicyError({ code, step: 'verify', path: display, message: `refusing to ${rule.what} ${display}: ${why}`, hint });
  };
  const planted = `Hermes does not ${rule.what} it; remove it (it may have been planted by another uid) and let Hermes create the file again, or put the right file there.`;
  if (st.isSymbolicLink()) no('ESYMLINK', 'it is a symbolic link', `${display} is a symbolic link: ${planted}`);
  if (st.isDirectory()) no('EISDIR', 'it is a directory', `${display} is a directory: ${planted}`);
  if (!st.isFile()) no('ENOTREGULAR', `it is ${typeOf(st)}, not a regular file`, `${display} is ${typeOf(st)}: ${planted}`);
  const uid = Number(st.uid);
  if (!rule.owners.has(uid)) {
    no(
      'EFOREIGN_OWNER',
      `it is owned by uid ${String(uid)}, not by ${[...rule.owners].map(String).join(' or ')}`,
      `${display} belongs to uid ${String(uid)}, whom this process does not trust for it: ${planted} Or run as its owner.`,
    );
  }
  if (rule.allowHardLinks !== true && st.nlink !== 1n) {
    no(
      'EHARDLINK',
      `it has ${String(st.nlink)} hard links, so it is also reachable under another name`,
      `${display} has another name (a hard link): remove the extra name (find it with \`find -samefile\`), then retry.`,
    );
  }
}

/** Closes a descriptor this module opened; a failure is not expected and never hides the primary outcome. */
export function closeQuietly(fd: number): void {
  try {
    fs.closeSync(fd);
  } catch {
    // EBADF/EIO on close of a descriptor we own: nothing left to release.
  }
}

/** How often an entry removed between its open and its `fstat` is looked up again (see {@link pinEntrySync}). */
const VANISHED_RETRIES = 3;

/**
 * Takes the entry `name` of the held directory without following a link or opening it for I/O, and checks
 * it with {@link checkEntry}. Returns undefined when it does not exist (ENOENT) — also when it was removed
 * between the open and the check (no name left: SQLite removes a database's `-wal` when its last connection
 * closes, in another process as much as in this one), after looking again; the caller owns the returned
 * descriptor. Outside `procfd` mode (no `/proc/self/fd`) the lookup is by path, still with
 * `O_NOFOLLOW | O_NONBLOCK`, so a FIFO never blocks.
 */
export function pinEntrySync(dir: HeldDirectory, name: string, rule: EntryRule): PinnedEntry | undefined {
  for (let attempt = 0; ; attempt++) {
    const pin = pinOnce(dir, name, rule);
    if (pin !== 'vanished') return pin;
    if (attempt + 1 >= VANISHED_RETRIES) return undefined;
  }
}

function pinOnce(dir: HeldDirectory, name: string, rule: EntryRule): PinnedEntry | 'vanished' | undefined {
  const display = dir.display(name);
  let fd: number;
  try {
    fd = fs.openSync(dir.at(name), pinFlags());
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') {
      throw new FsPolicyError({ code: 'ESYMLINK', step: 'open', path: display, message: `refusing to ${rule.what} ${display}: it is a symbolic link`, cause: err });
    }
    if (code === 'ENXIO') {
      throw new FsPolicyError({ code: 'ENOTREGULAR', step: 'open', path: display, message: `refusing to ${rule.what} ${display}: it is a socket`, cause: err });
    }
    throw toPolicyError(dir.explain(err), 'open', display, `${rule.what}: open ${display}`);
  }
  try {
    const st = fs.fstatSync(fd, { bigint: true });
    if (st.nlink === 0n && st.isFile()) {
      // Removed since the open: not a second name, no name at all. Whatever has the name now is looked up again.
      closeQuietly(fd);
      return 'vanished';
    }
    checkEntry(display, st, rule);
    return { path: display, fd, stat: st };
  } catch (err) {
    closeQuietly(fd);
    throw err instanceof FsPolicyError ? err : toPolicyError(err, 'verify', display, `fstat ${display}`);
  }
}

/** True when both describe the same inode. */
export function sameInode(a: { dev: bigint; ino: bigint }, b: { dev: bigint; ino: bigint }): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/** The real path of the object a descriptor holds (`readlink /proc/self/fd/<fd>`), or undefined without procfs. */
export function realPathOfFd(fd: number): string | undefined {
  if (anchorMode() !== 'procfd') return undefined;
  try {
    return fs.readlinkSync(`/proc/self/fd/${String(fd)}`);
  } catch {
    return undefined;
  }
}

/** Options of {@link readPinnedSync}. */
export interface ReadPinnedOptions {
  /** Refuse more than this many bytes (ETOO_LARGE) without returning any of them. */
  readonly maxBytes: number;
}

/**
 * Reads the file a pinned entry holds. In `procfd` mode the `O_PATH` descriptor is reopened through
 * `/proc/self/fd/<fd>` — that reaches exactly the pinned inode, whatever now sits at its name — with
 * `O_NONBLOCK`; elsewhere the pin is already a read descriptor. Size is checked on `fstat` before any read
 * and again while reading.
 */
export function readPinnedSync(pin: PinnedEntry, options: ReadPinnedOptions): Buffer {
  if (pin.stat.size > BigInt(options.maxBytes)) {
    throw new FsPolicyError({ code: 'ETOO_LARGE', step: 'read', path: pin.path, message: `${pin.path} is ${String(pin.stat.size)} bytes, more than the ${String(options.maxBytes)} read for it` });
  }
  let fd = pin.fd;
  let own = false;
  if (anchorMode() === 'procfd' && O_PATH !== 0) {
    try {
      fd = fs.openSync(`/proc/self/fd/${String(pin.fd)}`, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
      own = true;
    } catch (err) {
      throw toPolicyError(err, 'open', pin.path, `open ${pin.path} for reading`);
    }
  }
  try {
    const st = fs.fstatSync(fd, { bigint: true });
    if (!sameInode(st, pin.stat) || !st.isFile()) {
      throw new FsPolicyError({ code: 'ERACE', step: 'verify', path: pin.path, message: `${pin.path} changed between its check and its read` });
    }
    // Up to one byte past the limit: a file that grew since fstat is still caught.
    const buf = Buffer.allocUnsafe(Math.min(options.maxBytes + 1, Math.max(Number(st.size) + 1, 4096)));
    let total = 0;
    for (;;) {
      if (total === buf.length) break;
      const n = fs.readSync(fd, buf, total, buf.length - total, null);
      if (n === 0) break;
      total += n;
    }
    if (total === buf.length && total <= options.maxBytes) {
      throw new FsPolicyError({ code: 'ERACE', step: 'read', path: pin.path, message: `${pin.path} grew while it was read` });
    }
    if (total > options.maxBytes) {
      throw new FsPolicyError({ code: 'ETOO_LARGE', step: 'read', path: pin.path, message: `${pin.path} grew past ${String(options.maxBytes)} bytes while it was read` });
    }
    return Buffer.from(buf.subarray(0, total));
  } catch (err) {
    throw err instanceof FsPolicyError ? err : toPolicyError(err, 'read', pin.path, `read ${pin.path}`);
  } finally {
    if (own) closeQuietly(fd);
  }
}
