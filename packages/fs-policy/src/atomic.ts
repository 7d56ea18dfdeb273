/**
 * Atomic writes: the public API and the plan that reaches, resolves and checks the target. Resolving a linked
 * target is in atomic-target.ts; the write protocol itself (temp, publish, rollback, owner) in atomic-publish.ts.
 */
import * as path from 'node:path';
import { FsPolicyError } from './errors.js';
import { type HermesEnvironment, loadEnvironment } from './env.js';
import { O, type Plan, runAsync, runSync } from './internal/io.js';
import { homeOwnerPlan } from './internal/owners.js';
import { movedOut, movedOutError, type Reached, reachDirPlan } from './internal/reach.js';
import { checkRawPath, Held } from './internal/resolve.js';
import { bestEffort, op } from './internal/steps.js';
import { verifyForReplace } from './internal/verify.js';
import { commitPlan, type Durability } from './atomic-publish.js';
import type { TempKind } from './atomic-tmpfile.js';
import { resolveTargetPlan } from './atomic-target.js';
import { fileModeFor, getKind, type KindRef, selectFileMode } from './registry.js';

export type { Durability } from './atomic-publish.js';

export interface AtomicWriteOptions {
  /** The artifact kind: decides the parent directory's mode and the mode of a new file. */
  kind: KindRef;
  /** The resolved environment; loaded from process.env when omitted. */
  env?: HermesEnvironment;
  /** An explicit final mode; wins over the existing file's mode and the kind's. */
  mode?: number;
  /** `file+dir` (default) also fsyncs the directory so the rename survives a power loss. */
  durable?: Durability;
  /** A symlinked target is followed only while its real path stays inside this root (default: the home). */
  root?: string;
  /** Create missing parent directories with the kind's mode (default true). */
  createParents?: boolean;
  /** false: fail with EEXIST instead of replacing an existing file (atomic no-clobber create). */
  overwrite?: boolean;
}

export interface WriteResult {
  /** The file that now holds the data (the real path when the target was a permitted symlink). */
  readonly path: string;
  /** The path the caller asked for. */
  readonly requestedPath: string;
  readonly bytes: number;
  /** The final permission bits of the file. */
  readonly mode: number;
  /** True when no file existed at the target before. */
  readonly createdFile: boolean;
  /** Directories this call created. */
  readonly createdDirs: readonly string[];
  readonly durable: Durability;
  /**
   * How the new content was staged: `tmpfile` — in a file with no name (`O_TMPFILE`, with the native layer),
   * named only once complete and fsynced; `named` — in a temp file named from its creation on (no native layer,
   * or the unnamed temp could not be made or named here: a filesystem without it, say).
   */
  readonly temp: TempKind;
  readonly warnings: readonly string[];
}

export { TEMP_FILE_PATTERN } from './internal/tempname.js';

/** @internal The plan behind atomicWrite. */
export function* atomicWritePlan(
  target: string,
  data: Uint8Array,
  options: AtomicWriteOptions,
  env: HermesEnvironment,
): Plan<WriteResult> {
  const kind = getKind(options.kind);
  checkRawPath(target);
  const requestedPath = path.resolve(target);
  const durable = options.durable ?? 'file+dir';
  const warnings: string[] = [];
  const held = new Held();
  try {
    const reached = yield* reachDirPlan(
      path.dirname(requestedPath),
      { env, root: options.root, createFor: options.createParents === false ? undefined : kind },
      held,
    );
    warnings.push(...reached.warnings);
    const w = yield* writeEntryPlan(reached, path.basename(requestedPath), data, options, durable, env, held, warnings, true);
    return {
      path: w.real,
      requestedPath,
      bytes: data.length,
      mode: w.finalMode,
      createdFile: w.created,
      createdDirs: reached.created,
      durable,
      temp: w.temp,
      warnings: w.warnings,
    };
  } finally {
    yield* held.release();
  }
}

/**
 * @internal From a reached directory on, for atomicWrite and atomicWriteAt: resolves the entry `name` (links
 * only inside the root), refuses an existing file under `overwrite: false`, checks what it replaces (as root,
 * only a file of root, the home's owner or HERMES_UID, which keeps that owner), chooses the mode and publishes.
 * `watchMoves`: check at the commit points that the directory was not moved out of the root (atomicWriteAt's
 * holder watches its directory itself).
 */
export function* writeEntryPlan(
  reached: Reached,
  entry: string,
  data: Uint8Array,
  options: Pick<AtomicWriteOptions, 'kind' | 'mode' | 'overwrite'>,
  durable: Durability,
  env: HermesEnvironment,
  held: Held,
  warnings: string[],
  watchMoves: boolean,
): Plan<{ real: string; finalMode: number; created: boolean; temp: TempKind; warnings: readonly string[] }> {
  const kind = getKind(options.kind);
  const { dir, name, existing } = yield* resolveTargetPlan(reached, entry, held);
  const real = path.join(dir.path, name);
  if (existing !== undefined && options.overwrite === false) {
    throw new FsPolicyError({ code: 'EEXIST', step: 'resolve', path: real, message: `${real} already exists` });
  }
  const homeOwner = existing === undefined ? undefined : yield* homeOwnerPlan(reached, env, held);
  const inherit = existing === undefined ? false : verifyForReplace(real, existing, kind, env, homeOwner, warnings, reached.uid).inheritMode;
  const finalMode = selectFileMode({
    explicit: options.mode,
    existing: inherit ? existing?.mode : undefined,
    kindMode: fileModeFor(kind, env),
    retighten: kind.file.retighten,
  });
  const result = yield* commitPlan(
    {
      dir,
      name,
      real,
      data,
      finalMode,
      existing,
      ownership: kind.ownership,
      env,
      uid: reached.uid,
      durable,
      overwrite: options.overwrite !== false,
      guard: () => (watchMoves ? movedOut(reached, dir, env, held) : noMove()),
      movedOutError: (now) => movedOutError(dir, now, 'write'),
    },
    warnings,
  );
  return { real, finalMode, created: existing === undefined, temp: result.temp, warnings: result.warnings };
}

// eslint-disable-next-line require-yield
function* noMove(): Plan<string | undefined> {
  return undefined;
}

/**
 * The bytes to write, checked before any I/O: a string (UTF-8) or a Uint8Array (a Buffer). Anything else — an
 * object, a number, an ArrayBuffer, a Uint16Array whose `length` is not its byte count — is refused.
 */
export function bytesOf(data: unknown, target: string): Uint8Array {
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  if (data instanceof Uint8Array) return data;
  const what = data === null ? 'null' : typeof data === 'object' ? (Object.getPrototypeOf(data) as { constructor?: { name?: string } } | null)?.constructor?.name ?? 'object' : typeof data;
  throw new FsPolicyError({
    code: 'EINVALID_DATA',
    step: 'serialize',
    path: target,
    message: `cannot write ${what} to ${target}: pass a string or a Uint8Array (use atomicWriteJson for values)`,
  });
}

/**
 * Replaces `target` with `data` atomically: readers see the old or the new content, never a mix; the file
 * never appears with a wrong mode; on any failure the target is left as it was and no temp file remains.
 * Mode: explicit, else the existing file's (unless the kind re-tightens), else the kind's.
 */
export async function atomicWrite(
  target: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions,
): Promise<WriteResult> {
  const env = options.env ?? loadEnvironment();
  return runAsync(atomicWritePlan(target, bytesOf(data, target), options, env));
}

/** Synchronous form of {@link atomicWrite}, for shutdown paths. */
export function atomicWriteSync(target: string, data: string | Uint8Array, options: AtomicWriteOptions): WriteResult {
  const env = options.env ?? loadEnvironment();
  return runSync(atomicWritePlan(target, bytesOf(data, target), options, env));
}

export interface AtomicJsonOptions extends AtomicWriteOptions {
  /** JSON indentation (default 2; 0 for compact). */
  indent?: number;
  /** A JSON.stringify replacer. */
  replacer?: (this: unknown, key: string, value: unknown) => unknown;
}

/**
 * Serialises `value` to JSON (before any I/O: a value that cannot be serialised fails with ESERIALIZE and
 * touches nothing), then writes it as {@link atomicWrite} does, ending with a newline.
 */
export function serializeJson(value: unknown, target: string, options: Pick<AtomicJsonOptions, 'indent' | 'replacer'> = {}): Buffer {
  return Buffer.from(serializeJsonText(value, target, options), 'utf8');
}

/** {@link serializeJson} as text (with the trailing newline). */
export function serializeJsonText(
  value: unknown,
  target: string,
  options: Pick<AtomicJsonOptions, 'indent' | 'replacer'> = {},
): string {
  let text: unknown;
  try {
    text = JSON.stringify(value, options.replacer, options.indent ?? 2);
  } catch (err) {
    throw new FsPolicyError({
      code: 'ESERIALIZE',
      step: 'serialize',
      path: target,
      message: `cannot serialise value for ${target}: ${err instanceof Error ? err.message : String(err)}`,
      cause: err,
    });
  }
  if (typeof text !== 'string') {
    throw new FsPolicyError({
      code: 'ESERIALIZE',
      step: 'serialize',
      path: target,
      message: `cannot serialise value for ${target}: JSON has no representation for ${typeof value}`,
    });
  }
  return `${text}\n`;
}

/** Atomic JSON write; see {@link atomicWrite} and {@link serializeJson}. */
export async function atomicWriteJson(target: string, value: unknown, options: AtomicJsonOptions): Promise<WriteResult> {
  const data = serializeJson(value, target, options);
  return atomicWrite(target, data, options);
}

/** Synchronous form of {@link atomicWriteJson}. */
export function atomicWriteJsonSync(target: string, value: unknown, options: AtomicJsonOptions): WriteResult {
  const data = serializeJson(value, target, options);
  return atomicWriteSync(target, data, options);
}

/**
 * Makes the entries of `dir` durable (renames, creations, unlinks inside it): one fsync of the directory.
 * Batch writers use `durable: 'file'` per file and call this once at the end.
 */
export async function fsyncDirectory(dir: string): Promise<void> {
  await runAsync(fsyncDirPlan(path.resolve(dir)));
}

/** Synchronous form of {@link fsyncDirectory}. */
export function fsyncDirectorySync(dir: string): void {
  runSync(fsyncDirPlan(path.resolve(dir)));
}

/** fsync of a directory opened read-only (nothing is written through the descriptor). */
function* fsyncDirPlan(dir: string): Plan<void> {
  const dfd = yield* op('fsync-dir', dir, 'open', dir, O.RDONLY | O.DIRECTORY, 0);
  try {
    yield* op('fsync-dir', dir, 'fsync', dfd);
  } finally {
    yield* bestEffort([], 'close', dir, 'close', dfd);
  }
}
