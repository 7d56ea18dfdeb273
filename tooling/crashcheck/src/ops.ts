/**
 * The recorded run: every syscall a protocol made (with its arguments and result), and the operations the
 * persistence model replays, each pointing back at the syscall that produced it.
 */

/** One syscall as it was made: what the port (or `node:fs`) was asked, and what came back. */
export interface Syscall {
  readonly seq: number;
  readonly op: string;
  /** The fs-policy step label, or `fs` for a call made through `node:fs` directly. */
  readonly step: string;
  /** The path the request concerns, as the caller named it (a logical path, never a /proc alias when it came through the port). */
  readonly path: string;
  /** The arguments, printable (buffers as byte counts, flags and modes in octal). */
  readonly args: string;
  /** The result (an fd, a byte count…) or the error code. */
  readonly result: string;
}

interface Base {
  /** The syscall this operation came from (index into the syscall log), or -1 for a mark or a store event. */
  readonly sys: number;
}

/** A new directory entry naming a new directory (mkdir). */
export interface MkdirOp extends Base {
  readonly kind: 'mkdir';
  readonly parent: number;
  readonly name: string;
  readonly ino: number;
  readonly mode: number;
}

/** A new directory entry naming a new, empty regular file (open with O_CREAT that created it). */
export interface CreateOp extends Base {
  readonly kind: 'create';
  readonly parent: number;
  readonly name: string;
  readonly ino: number;
  readonly mode: number;
}

/**
 * A new, empty regular file with no directory entry (open with O_TMPFILE in the directory `dir`): it holds data
 * but no name reaches it until a `link` names it; a crash before that persists nothing a reboot could find.
 */
export interface TmpfileOp extends Base {
  readonly kind: 'tmpfile';
  readonly dir: number;
  readonly ino: number;
  readonly mode: number;
}

/** Bytes written at `offset` (always the end of the file: the model refuses in-place overwrites). */
export interface WriteOp extends Base {
  readonly kind: 'write';
  readonly ino: number;
  readonly offset: number;
  readonly data: Buffer;
}

export interface TruncateOp extends Base {
  readonly kind: 'truncate';
  readonly ino: number;
  readonly length: number;
}

export interface ChmodOp extends Base {
  readonly kind: 'chmod';
  readonly ino: number;
  readonly mode: number;
}

export interface LinkOp extends Base {
  readonly kind: 'link';
  readonly ino: number;
  readonly parent: number;
  readonly name: string;
}

export interface RenameOp extends Base {
  readonly kind: 'rename';
  readonly ino: number;
  readonly fromParent: number;
  readonly fromName: string;
  readonly toParent: number;
  readonly toName: string;
  /** The inode the destination named before (replaced), if any. */
  readonly replaced: number | undefined;
}

export interface UnlinkOp extends Base {
  readonly kind: 'unlink';
  readonly ino: number;
  readonly parent: number;
  readonly name: string;
}

/** fsync (or fdatasync) of a file or a directory. */
export interface FsyncOp extends Base {
  readonly kind: 'fsync';
  readonly ino: number;
  readonly dir: boolean;
}

/** A database transaction handed to the store (SQLite's own I/O is not recorded: its commit is one event). */
export interface DbBeginOp extends Base {
  readonly kind: 'db-begin';
  readonly id: number;
}

/** The store returned from the commit: durable from here on (`synchronous = FULL`). */
export interface DbCommitOp extends Base {
  readonly kind: 'db-commit';
  readonly id: number;
  /** What the scenario needs to rebuild this commit in a crash state (the store's entries). */
  readonly payload: unknown;
}

/** The store was asked to checkpoint (no effect in the model: under `synchronous = FULL` a commit is durable already). */
export interface DbCheckpointOp extends Base {
  readonly kind: 'db-checkpoint';
  readonly complete: boolean;
}

/** A promise the protocol made to its caller at this point (a call returned, a report said "written"). */
export interface MarkOp extends Base {
  readonly kind: 'mark';
  readonly label: string;
  readonly data: unknown;
}

export type MetaOp = MkdirOp | CreateOp | TmpfileOp | TruncateOp | ChmodOp | LinkOp | RenameOp | UnlinkOp;
export type ModelOp = MetaOp | WriteOp | FsyncOp | DbBeginOp | DbCommitOp | DbCheckpointOp | MarkOp;

export function isMeta(op: ModelOp): op is MetaOp {
  return (
    op.kind === 'mkdir' ||
    op.kind === 'create' ||
    op.kind === 'tmpfile' ||
    op.kind === 'truncate' ||
    op.kind === 'chmod' ||
    op.kind === 'link' ||
    op.kind === 'rename' ||
    op.kind === 'unlink'
  );
}

/** True for the operations that change a directory's entries (the ones a directory fsync makes durable). */
export function isEntryOp(op: ModelOp): op is MkdirOp | CreateOp | LinkOp | RenameOp | UnlinkOp {
  return op.kind === 'mkdir' || op.kind === 'create' || op.kind === 'link' || op.kind === 'rename' || op.kind === 'unlink';
}

/** How reports name the inode of a `tmpfile` operation until a link names it. */
export function unnamedName(dir: string): string {
  return `<unnamed file in ${dir}>`;
}

/** The directories whose entries an operation changes. */
export function parentsOf(op: ModelOp): number[] {
  switch (op.kind) {
    case 'mkdir':
    case 'create':
    case 'link':
    case 'unlink':
      return [op.parent];
    case 'rename':
      return op.fromParent === op.toParent ? [op.fromParent] : [op.fromParent, op.toParent];
    default:
      return [];
  }
}

/** A one-line account of an operation, for reports (names resolved by the caller's `nameOf`). */
export function describeOp(op: ModelOp, nameOf: (ino: number) => string): string {
  const at = (parent: number, name: string): string => (nameOf(parent) === '.' ? name : `${nameOf(parent)}/${name}`);
  switch (op.kind) {
    case 'mkdir':
      return `mkdir ${at(op.parent, op.name)} (mode ${op.mode.toString(8)})`;
    case 'create':
      return `create ${at(op.parent, op.name)} (mode ${op.mode.toString(8)})`;
    case 'tmpfile':
      return `create ${unnamedName(nameOf(op.dir))} (O_TMPFILE, mode ${op.mode.toString(8)})`;
    case 'write':
      return `write ${String(op.data.length)} bytes at ${String(op.offset)} to ${nameOf(op.ino)}`;
    case 'truncate':
      return `truncate ${nameOf(op.ino)} to ${String(op.length)}`;
    case 'chmod':
      return `chmod ${nameOf(op.ino)} ${op.mode.toString(8).padStart(4, '0')}`;
    case 'link':
      return `link ${nameOf(op.ino)} as ${at(op.parent, op.name)}`;
    case 'rename':
      return `rename ${at(op.fromParent, op.fromName)} -> ${at(op.toParent, op.toName)}`;
    case 'unlink':
      return `unlink ${at(op.parent, op.name)}`;
    case 'fsync':
      return `fsync ${op.dir ? 'directory ' : ''}${nameOf(op.ino)}`;
    case 'db-begin':
      return `database transaction ${String(op.id)} begins`;
    case 'db-commit':
      return `database transaction ${String(op.id)} committed (returned)`;
    case 'db-checkpoint':
      return `database checkpoint (${op.complete ? 'complete' : 'incomplete'})`;
    case 'mark':
      return `[promise] ${op.label}`;
  }
}
