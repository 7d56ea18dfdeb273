/**
 * The unnamed temp file of an atomic write. Where the native layer is in force, the new content is written into
 * a file that has no name (`open(dir, O_TMPFILE)`); it gets one only once every byte, the mode and the owner are
 * in and fsynced — a link of the open file (the addon's `linkFd`: `linkat(AT_EMPTY_PATH)` where permitted, else
 * `/proc/self/fd/<fd>` followed). A crash before that link leaves nothing behind; after it, at most a complete
 * temp file. Without the native layer, or when the unnamed temp cannot be made or named ({@link endsTheWrite}),
 * the temp is named from its creation on; the checks of the write are the same either way.
 */
import { errnoCode } from './errors.js';
import { O } from './internal/io.js';
import { nativeBinding } from './native.js';

/** How an atomic write made its temp file: `tmpfile` (unnamed until complete and fsynced) or `named`. */
export type TempKind = 'tmpfile' | 'named';

/**
 * Whether a failed step of the unnamed temp ends the write. Only `EEXIST` from the link that names it does (the
 * target, or the temp name, exists: never replaced — as with the named temp's exclusive open and link). Any
 * other failure of its open or of that link, before anything was named, hands the write to the named protocol,
 * run from the start: a filesystem without unnamed files (`EOPNOTSUPP`; `EISDIR` or `EINVAL` from a kernel
 * that does not know the flag), a file that cannot be named (`ENOENT`: neither `AT_EMPTY_PATH` nor
 * `/proc/self/fd`; `EPERM`: no hard links), and every other error, which the named protocol then answers exactly
 * as it does on its own (a directory removed meanwhile is `ENOENT` there, where `O_TMPFILE` says `EPERM`).
 */
export function endsTheWrite(err: unknown): boolean {
  return errnoCode(err) === 'EEXIST';
}

/**
 * The open flags of an unnamed temp (`O_WRONLY | O_TMPFILE`) when the native layer is in force, else undefined:
 * only the addon can give an open file a name, so without it the temp is named from the start. Whether the
 * filesystem supports it is asked of the filesystem at each write (an unsupported open fails at once, in about
 * a microsecond, next to the milliseconds of the fsync).
 */
export function tmpfileFlags(): number | undefined {
  const b = nativeBinding();
  return b === undefined ? undefined : O.WRONLY | b.constants.O_TMPFILE;
}
