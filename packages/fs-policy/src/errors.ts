/** The step of an operation at which a failure happened; named in every error and log line. */
export type FsStep =
  | 'resolve'
  | 'serialize'
  | 'lstat'
  | 'mkdir'
  | 'open'
  | 'write'
  | 'short-write'
  | 'fchmod'
  | 'fchown'
  | 'fsync'
  | 'close'
  | 'link'
  | 'rename'
  | 'fsync-dir'
  | 'unlink'
  | 'readdir'
  | 'read'
  | 'verify'
  | 'release';

/** Codes this package raises on its own (in addition to system errno codes such as EACCES or ENOSPC). */
export type PolicyCode =
  | 'ESERIALIZE'
  | 'ESHORT_WRITE'
  | 'EDANGLING_LINK'
  | 'ESYMLINK_ESCAPE'
  | 'ESYMLINK'
  | 'ENOTREGULAR'
  | 'EMANAGED_MISSING'
  | 'EPROFILE_MISSING'
  | 'EINVALID_PATH'
  | 'EINVALID_DATA'
  | 'EFOREIGN_OWNER'
  | 'EHARDLINK'
  | 'EMODE_TOO_WIDE'
  | 'EDANGEROUS_HOME'
  | 'EUNSAFE_PATH'
  | 'EUNSAFE_FALLBACK'
  | 'ERACE'
  | 'ETORN_RECORD'
  | 'ETOO_LARGE'
  | 'ECLOSED';

export interface FsPolicyErrorInit {
  code: string;
  path: string;
  step: FsStep;
  message: string;
  hint?: string;
  errno?: number;
  cause?: unknown;
  /** For atomic writes: true when the failure happened after the new content was committed by rename. */
  committed?: boolean;
  /** Files the failed operation created and could not remove (logical paths); named in the message too. */
  leftovers?: readonly string[];
}

/**
 * The one error type of @hermes/fs-policy. It always names the path, the failing step, the errno code,
 * the uid/gid the process ran as, and a one-line hint saying how to fix it.
 */
export class FsPolicyError extends Error {
  override readonly name = 'FsPolicyError';
  readonly code: string;
  readonly errno: number | undefined;
  readonly path: string;
  readonly step: FsStep;
  readonly hint: string;
  readonly uid: number;
  readonly gid: number;
  readonly committed: boolean;
  /**
   * Every file the failed operation created and could not remove again (temp or rollback files), by logical
   * path; empty when nothing was left behind. The message names them as well.
   */
  readonly leftovers: readonly string[];
  /** What happened, in words, without the `[code at step: path]` suffix that `message` carries. */
  readonly detail: string;

  constructor(init: FsPolicyErrorInit) {
    super(`${init.message} [${init.code} at ${init.step}: ${init.path}]`, { cause: init.cause });
    this.code = init.code;
    this.errno = init.errno;
    this.path = init.path;
    this.step = init.step;
    this.uid = currentUid();
    this.gid = currentGid();
    this.committed = init.committed ?? false;
    this.leftovers = [...(init.leftovers ?? [])];
    this.detail = init.message;
    this.hint = init.hint ?? hintFor(init.code, init.path, this.uid, this.gid);
  }

  /** A single line for logs and CLIs: what failed, where, as whom, and the fix. */
  toLine(): string {
    return `${this.message} (uid ${this.uid}, gid ${this.gid}). Fix: ${this.hint}`;
  }
}

export function currentUid(): number {
  return typeof process.geteuid === 'function' ? process.geteuid() : -1;
}

export function currentGid(): number {
  return typeof process.getegid === 'function' ? process.getegid() : -1;
}

/** True for Node system errors (they carry a string `code`). */
export function isErrnoException(err: unknown): err is NodeJS.ErrnoException {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string';
}

export function errnoCode(err: unknown): string | undefined {
  return isErrnoException(err) ? err.code : undefined;
}

/** Wraps any thrown value into an FsPolicyError for `step` at `path` (an FsPolicyError passes through). */
export function toPolicyError(err: unknown, step: FsStep, path: string, what: string): FsPolicyError {
  if (err instanceof FsPolicyError) return err;
  const code = errnoCode(err) ?? 'EUNKNOWN';
  const errno = isErrnoException(err) ? err.errno : undefined;
  const detail = err instanceof Error ? withoutProcPath(err.message) : String(err);
  return new FsPolicyError({
    code,
    step,
    path,
    message: `${what} failed: ${detail}`,
    ...(errno === undefined ? {} : { errno }),
    cause: err,
  });
}

/**
 * Node's system error messages end with the syscall and the path it was given (`…, open '/proc/self/fd/9/x'`);
 * a descriptor-relative path means nothing to a reader, and the logical path is in the error already.
 */
function withoutProcPath(message: string): string {
  return message.replace(/, \w+ '\/proc\/self\/fd\/[^']*'(?: -> '[^']*')?$/, '');
}

/** The fix, in one line, for the codes operators meet in practice. */
export function hintFor(code: string, path: string, uid: number, gid: number): string {
  switch (code) {
    case 'EACCES':
    case 'EPERM':
      return (
        `uid ${uid} (gid ${gid}) may not write to ${path}. On a managed install the directory must be group-writable ` +
        `for the service group (2770, setgid): run \`hermes-fs doctor --fix\`. On a single-user install another uid ` +
        `cannot share this home: run as its owner, or give this uid its own HERMES_HOME.`
      );
    case 'ENOSPC':
    case 'EDQUOT':
      return `the filesystem holding ${path} is full (or over quota); free space and retry. The previous content is intact.`;
    case 'EROFS':
      return `${path} is on a read-only filesystem; point HERMES_HOME at writable storage.`;
    case 'ENOENT':
      return `a directory on the way to ${path} does not exist; create the Hermes home (or the named profile) first.`;
    case 'ENOTDIR':
      return `a component of ${path} is not a directory; move the file that is in the way.`;
    case 'EISDIR':
      return `${path} is a directory, not a file; choose another file name.`;
    case 'ELOOP':
    case 'ESYMLINK':
      return `${path} is a symbolic link; this artifact is never written through a link. Replace the link with a regular file.`;
    case 'ESYMLINK_ESCAPE':
      return `${path} is a symbolic link that leads outside the allowed root; remove the link or point it inside the Hermes home.`;
    case 'EDANGLING_LINK':
      return `restore the mount or repair the link target of ${path}; Hermes does not create a missing link target.`;
    case 'ESERIALIZE':
      return `the value could not be serialised to JSON (a circular reference, a BigInt, or a value JSON cannot represent); nothing was written.`;
    case 'ESHORT_WRITE':
      return `the device accepted only part of the data for ${path}; check free space and the filesystem, then retry.`;
    case 'EMANAGED_MISSING':
      return `on a managed install the package manager creates ${path} (NixOS: systemd-tmpfiles / activation); re-run the activation or create it with the service group and mode 2770.`;
    case 'EPROFILE_MISSING':
      return `the named profile home ${path} does not exist; create the profile explicitly before using it.`;
    case 'ENOTREGULAR':
      return `${path} is not a regular file (device, FIFO or socket); remove it or choose another name.`;
    case 'EINVALID_DATA':
      return `pass a string or a Uint8Array (Buffer); other values are refused before any I/O, so nothing was written.`;
    case 'EFOREIGN_OWNER':
      return `${path} belongs to another uid; Hermes never writes into or replaces a file someone else created. Remove it (it may have been planted), or run as its owner.`;
    case 'EHARDLINK':
      return `${path} has more than one hard link, so its content is visible under another name; Hermes refuses to append to it. Remove the extra link (or the file) and retry.`;
    case 'EMODE_TOO_WIDE':
      return `${path} grants write access to group or others beyond what its kind allows; tighten it (\`hermes-fs doctor --fix\`) or remove it.`;
    case 'EDANGEROUS_HOME':
      return `point HERMES_HOME at a directory of its own (e.g. /var/lib/hermes), never at / or a shared system directory.`;
    case 'EUNSAFE_PATH':
      return `a directory on the way to ${path} can be changed by a uid other than root and the home's owner; make it root-owned and not group/world-writable (chmod go-w), or move the home, before running as root.`;
    case 'EUNSAFE_FALLBACK':
      return `descriptor-relative resolution (/proc/self/fd) is unavailable, so ${path} could only be reached by path, which a concurrent rename can redirect. Mount procfs (or run where /proc/self/fd works); or run as the home's owner, without HERMES_UID/HERMES_GID, on a home only that uid can write; or accept the risk: HERMES_ALLOW_PATH_FALLBACK=1 together with loadEnvironment({ allowPathFallback: true }).`;
    case 'ERACE':
      return `${path} kept changing while Hermes was using it (another process is renaming or replacing entries there); stop that process and retry.`;
    case 'ETORN_RECORD':
      return `the filesystem holding ${path} refused part of a record; the fragment was terminated so other lines still parse. Free space and retry.`;
    case 'ECLOSED':
      return `the append handle for ${path} was closed (or its close had begun) before this call; open a new handle for further records.`;
    case 'ETOO_LARGE':
      return `${path} is larger than Hermes reads for this purpose; inspect and shrink or remove it.`;
    case 'EMFILE':
    case 'ENFILE':
      return `too many open files; raise the file-descriptor limit (ulimit -n) or reduce concurrency.`;
    default:
      return `check that ${path} is on healthy, writable storage and retry.`;
  }
}
