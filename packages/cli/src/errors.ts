import { FsPolicyError } from '@hermes/fs-policy';

/**
 * Codes this package raises on its own. Failures that come from the filesystem keep the code of the
 * underlying `FsPolicyError` (`EACCES`, `ENOSPC`, `ESYMLINK_ESCAPE`, `EEXIST`, …).
 */
export type SaveErrorCode =
  | 'EEMPTY'
  | 'EINVALID_INPUT'
  | 'EINVALID_OPTIONS'
  | 'EINVALID_FORMAT'
  | 'EINVALID_FILENAME'
  | 'EPATH_ESCAPE'
  | 'ESERIALIZE'
  | 'ENAMES_EXHAUSTED';

export interface SaveErrorInit {
  readonly code: string;
  readonly reason: string;
  /** The snapshot path concerned, when one was chosen. */
  readonly path?: string;
  readonly cause?: unknown;
}

/**
 * The one error of `@hermes/cli`. `reason` is the one-line explanation shown to the operator; `code` is the
 * package's own code or, for filesystem failures, the `FsPolicyError`'s code, whose instance is the `cause`.
 */
export class SaveError extends Error {
  override readonly name = 'SaveError';
  readonly code: string;
  readonly reason: string;
  readonly path: string | undefined;

  constructor(init: SaveErrorInit) {
    super(init.reason, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = init.code;
    this.reason = init.reason;
    this.path = init.path;
  }

  /** The fix for a filesystem failure (fs-policy's one-line hint), when there is one. */
  get hint(): string | undefined {
    return this.cause instanceof FsPolicyError ? this.cause.hint : undefined;
  }
}

/** Wraps a failure of a filesystem step into a SaveError that keeps the FsPolicyError and its code. */
export function fromFsError(err: unknown, path: string | undefined): SaveError {
  if (err instanceof SaveError) return err;
  if (err instanceof FsPolicyError) {
    // fs-policy's one line names what failed, where, as which uid, and the fix; it may name only the temp
    // file, so the snapshot's own path goes first when the line does not already hold it.
    const line = err.toLine();
    const reason = path !== undefined && !err.message.includes(path) ? `${path}: ${line}` : line;
    return new SaveError({ code: err.code, reason, path: path ?? err.path, cause: err });
  }
  const message = err instanceof Error ? err.message : String(err);
  return new SaveError({ code: 'EUNKNOWN', reason: message, ...(path === undefined ? {} : { path }), cause: err });
}
