/**
 * Reading a small file of the home (config.yaml) the way every other artifact is read: through the held
 * home, never through a link a member of the service group planted, never a file such a member owns.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { errnoCode, FsPolicyError, toPolicyError } from './errors.js';
import { type HermesEnvironment, loadEnvironment } from './env.js';
import { type HeldDirectory, holdDirectorySync } from './scan.js';
import { checkEntry, closeQuietly, type EntryRule, type PinnedEntry, pinFlags, homeOwnerOf, readPinnedSync, realPathOfFd, trustedOwners } from './heldfile.js';
import { anchorMode, O_PATH } from './internal/anchor.js';
import { getLogger } from './logger.js';

/** Options of {@link readHomeFileSync}. */
export interface ReadHomeFileOptions {
  /** The environment (its `home` decides whose files are trusted). Loaded when omitted. */
  readonly env?: HermesEnvironment;
  /** Refuse a file larger than this (ETOO_LARGE) without returning any of it. */
  readonly maxBytes: number;
  /**
   * Directories a link may lead into (its real path, after every link, must lie below one of them), e.g.
   * `['/nix/store']`, where NixOS links config.yaml. Default none: every link is refused with ESYMLINK.
   */
  readonly linkPrefixes?: readonly string[];
}

/** What {@link readHomeFileSync} read. */
export interface HomeFile {
  readonly path: string;
  readonly data: Buffer;
  /** For a link into an allowed prefix: the real path that was read. */
  readonly via?: string;
}

function under(real: string, prefixes: readonly string[]): boolean {
  return prefixes.some((p) => {
    const prefix = path.resolve(p);
    return prefix !== '/' && real.startsWith(`${prefix}/`);
  });
}

/**
 * A link whose target, after every link, lies below an allowed prefix: the target is held with `O_PATH`
 * (followed, but opened for no I/O), its real path is read from that descriptor and compared, and only then
 * is it checked and read. Whatever the link said, what is read is what the descriptor holds.
 */
function pinLinkTarget(dir: HeldDirectory, name: string, display: string, rule: EntryRule, prefixes: readonly string[]): PinnedEntry & { readonly real: string } {
  const refuse = (): never => {
    throw new FsPolicyError({
      code: 'ESYMLINK',
      step: 'verify',
      path: display,
      message:
        prefixes.length === 0
          ? `refusing to ${rule.what} ${display}: it is a symbolic link`
          : `refusing to ${rule.what} ${display}: it is a symbolic link that does not lead into ${prefixes.join(' or ')}`,
      hint: `${display} is a symbolic link and is not read through (it may have been planted by another uid): replace it with a regular file${prefixes.length === 0 ? '' : `, or a link into ${prefixes.join(' or ')}`}.`,
    });
  };
  if (prefixes.length === 0 || anchorMode() !== 'procfd') return refuse();
  let text: string;
  try {
    text = fs.readlinkSync(dir.at(name));
  } catch (err) {
    throw toPolicyError(dir.explain(err), 'verify', display, `readlink ${display}`);
  }
  if (!path.isAbsolute(text)) return refuse();
  let fd: number;
  try {
    fd = fs.openSync(text, O_PATH);
  } catch {
    return refuse(); // dangling, or a target this uid cannot reach: never said which
  }
  try {
    const real = realPathOfFd(fd);
    if (real === undefined || !under(real, prefixes)) return refuse();
    const st = fs.fstatSync(fd, { bigint: true });
    // A store file may carry several names (store optimisation); only root writes the store.
    checkEntry(display, st, { ...rule, allowHardLinks: true });
    return { path: display, fd, stat: st, real };
  } catch (err) {
    closeQuietly(fd);
    throw err instanceof FsPolicyError ? err : toPolicyError(err, 'verify', display, `fstat ${display}`);
  }
}

/**
 * Reads `file` (a small file of the home, e.g. config.yaml) through the held directory that contains it,
 * or returns undefined when it or its directory does not exist. Guarantees: a link is never read through
 * (ESYMLINK) unless its real path lies below one of `linkPrefixes`; a FIFO, socket or device is refused
 * (ENOTREGULAR) without being opened for I/O, so nothing blocks; a file owned by anyone but this uid, root
 * or the home's owner is refused (EFOREIGN_OWNER) before a byte of it is read, and so is a file with a
 * second name (EHARDLINK); a file over `maxBytes` is refused (ETOO_LARGE). Refusals are logged with path,
 * code and fix; the file's content never appears in an error.
 */
export function readHomeFileSync(file: string, options: ReadHomeFileOptions): HomeFile | undefined {
  const target = path.resolve(file);
  const env = options.env ?? loadEnvironment();
  const name = path.basename(target);
  let dir: HeldDirectory;
  try {
    dir = holdDirectorySync(path.dirname(target), { env });
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || (err instanceof FsPolicyError && err.code === 'ENOENT')) return undefined;
    throw err;
  }
  try {
    const rule: EntryRule = { owners: trustedOwners(homeOwnerOf(dir, env)), what: 'read' };
    const readLink = (): HomeFile => {
      const pin = pinLinkTarget(dir, name, target, rule, options.linkPrefixes ?? []);
      try {
        return { path: target, data: readPinnedSync(pin, options), via: pin.real };
      } finally {
        closeQuietly(pin.fd);
      }
    };
    let fd: number;
    try {
      fd = fs.openSync(dir.at(name), pinFlags());
    } catch (err) {
      const code = errnoCode(err);
      if (code === 'ENOENT') return undefined;
      if (code === 'ELOOP') return readLink(); // without O_PATH, O_NOFOLLOW refuses the link itself
      if (code === 'ENXIO') {
        throw new FsPolicyError({ code: 'ENOTREGULAR', step: 'open', path: target, message: `refusing to read ${target}: it is a socket`, cause: err });
      }
      throw toPolicyError(dir.explain(err), 'open', target, `open ${target}`);
    }
    try {
      const st = fs.fstatSync(fd, { bigint: true });
      if (st.isSymbolicLink()) return readLink();
      checkEntry(target, st, rule);
      return { path: target, data: readPinnedSync({ path: target, fd, stat: st }, options) };
    } finally {
      closeQuietly(fd);
    }
  } catch (err) {
    if (err instanceof FsPolicyError) {
      getLogger().warn(`not read: ${err.detail}`, { path: err.path, code: err.code, errno: err.errno ?? null, fix: err.hint });
    }
    throw err;
  } finally {
    dir.close();
  }
}
