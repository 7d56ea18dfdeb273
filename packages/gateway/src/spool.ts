import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FsPolicyError, type HermesEnvironment, isErrnoException, kindDir, loadEnvironment } from '@hermes/fs-policy';

/** The artifact kind of the spool directory and its payload files in @hermes/fs-policy's registry. */
export const SPOOL_KIND = 'pending-messages';

export interface SpoolLocationOptions {
  /** The Hermes home (profile homes included). Defaults to `env.home`, else HERMES_HOME. */
  home?: string;
  /** The resolved fs-policy environment; loaded (for `home`) when omitted. */
  env?: HermesEnvironment;
}

export interface SpoolLocation {
  readonly env: HermesEnvironment;
  readonly home: string;
  /** `<home>/pending_messages`. */
  readonly dir: string;
}

export function spoolLocation(options: SpoolLocationOptions = {}): SpoolLocation {
  const env = options.env ?? loadEnvironment(options.home === undefined ? {} : { home: options.home });
  const home = path.resolve(options.home ?? env.home);
  return { env, home, dir: kindDir(SPOOL_KIND, { home }) };
}

/** True when `home` is `<root>/profiles/<name>` (a named profile). */
export function isProfileHome(home: string): boolean {
  return path.basename(path.dirname(home)) === 'profiles';
}

/**
 * Refuses to write into a home that is gone: a deleted named profile (`EPROFILE_MISSING`), or a managed home
 * the package manager has not created (`EMANAGED_MISSING`). Creating the spool directory there would
 * resurrect the profile or invent a managed home with the wrong owner. An unmanaged default home may be
 * created (with policy modes) by the spool write itself.
 */
export function assertHomeLive(home: string, env: HermesEnvironment): void {
  try {
    fs.statSync(home);
    return;
  } catch (err) {
    if (!isErrnoException(err) || err.code !== 'ENOENT') return; // EACCES etc.: let the write report it precisely
  }
  if (isProfileHome(home)) {
    throw new FsPolicyError({
      code: 'EPROFILE_MISSING',
      step: 'lstat',
      path: home,
      message: `Named profile home does not exist: ${home}; nothing was written`,
    });
  }
  if (env.managed.managed) {
    throw new FsPolicyError({
      code: 'EMANAGED_MISSING',
      step: 'lstat',
      path: home,
      message: `Required directory does not exist: ${home} (managed install: the package manager creates it); nothing was written`,
    });
  }
}

/** A fresh spool file path: `pending-<32 lowercase hex>.json` (128 random bits). */
export function newPayloadPath(dir: string): string {
  return path.join(dir, `pending-${randomBytes(16).toString('hex')}.json`);
}

function dirSyncError(dir: string, err: unknown): FsPolicyError {
  const code = isErrnoException(err) && err.code !== undefined ? err.code : 'EUNKNOWN';
  return new FsPolicyError({
    code,
    step: 'fsync-dir',
    path: dir,
    message: `fsync of directory ${dir} failed: ${err instanceof Error ? err.message : String(err)}`,
    ...(isErrnoException(err) && err.errno !== undefined ? { errno: err.errno } : {}),
    cause: err,
  });
}

/**
 * fsync of a directory, so the files renamed into it survive a power loss. (@hermes/fs-policy fsyncs the
 * directory inside each atomic write; a batch writes with `durable: 'file'` and syncs the directory once.)
 * The directory is opened read-only: no mode is involved.
 */
export function fsyncDirSync(dir: string): void {
  let fd: number;
  try {
    fd = fs.openSync(dir, 'r');
  } catch (err) {
    throw dirSyncError(dir, err);
  }
  try {
    fs.fsyncSync(fd);
  } catch (err) {
    throw dirSyncError(dir, err);
  } finally {
    fs.closeSync(fd);
  }
}

/** Asynchronous form of {@link fsyncDirSync}. */
export async function fsyncDir(dir: string): Promise<void> {
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(dir, 'r');
  } catch (err) {
    throw dirSyncError(dir, err);
  }
  try {
    await handle.sync();
  } catch (err) {
    throw dirSyncError(dir, err);
  } finally {
    await handle.close();
  }
}
