/**
 * The spool directory a flush job writes into, held once per job. Every payload of the job is written
 * relative to this one descriptor (`held.at(name)`, with the held directory itself as the write's root), and
 * the job's final directory fsync opens that same descriptor (`held.self`), never the logical path: a member
 * of the service group who swaps `pending_messages/` for a link during the flush can neither receive a
 * payload nor make the fsync land on another directory, so the report's `durable` is about the very
 * directory the payloads are in.
 *
 * A descriptor follows its directory wherever it is renamed. Before and after each write, and before the
 * job claims durability, the held directory's current location is read back (`/proc/self/fd/<fd>`): a
 * directory moved out of the home fails the write (the payload just written there is removed again through
 * the descriptor) and the job's `durable`; one moved elsewhere inside the home is reported (its payloads
 * are there, fsynced, but no longer under the spool's name).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  anchorMode,
  atomicWrite,
  atomicWriteSync,
  type AtomicWriteOptions,
  atomicWriteAt,
  atomicWriteAtSync,
  FsPolicyError,
  type FsPolicyErrorInit,
  fsyncHeldDirectory,
  fsyncHeldDirectorySync,
  type FsStep,
  type HeldDirectory,
  holdDirectorySync,
} from '@hermes/fs-policy';
import { SPOOL_KIND, type SpoolLocation } from './spool.js';

/** Where the held directory is now, relative to where the job found it. */
export type Placement =
  /** Still the spool (or its location cannot be read back: fallback mode, identity checked instead). */
  | { readonly where: 'in-place' }
  /** Renamed to another place inside the home: its payloads are there, no longer under the spool's name. */
  | { readonly where: 'moved'; readonly now: string }
  /** Renamed out of the home, or removed: nothing written into it counts. */
  | { readonly where: 'outside'; readonly now: string };

function isInside(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith('/') ? parent : `${parent}/`);
}

/** `text` with the descriptor paths of `held` replaced by the logical ones. */
function logicalText(held: HeldDirectory, text: string): string {
  return text.split(`${held.self}/`).join(`${held.path}/`).split(held.self).join(held.path);
}

export class SpoolTarget {
  /** Payloads of the job that are on disk in this directory (the fsync is owed only when there are some). */
  written = 0;
  /** Set once its move inside the home was reported. */
  reported = false;

  private constructor(
    readonly held: HeldDirectory,
    /** The directory's identity, taken through the descriptor when it was held. */
    readonly dev: number,
    readonly ino: number,
    /** Its real path then (procfd mode), and the home's: what "moved" is measured against. */
    readonly realDir: string | undefined,
    readonly realHome: string | undefined,
  ) {}

  /**
   * Holds the spool of `loc` (it must exist: the caller created it). Throws the typed FsPolicyError of
   * fs-policy's resolver (a link leading out of the home, EACCES, ENOENT, …).
   */
  static open(loc: SpoolLocation): SpoolTarget {
    const held = holdDirectorySync(loc.dir, { env: loc.env });
    try {
      const st = fs.statSync(held.self);
      let realDir: string | undefined;
      let realHome: string | undefined;
      if (anchorMode() === 'procfd') {
        realDir = fs.readlinkSync(held.self);
        try {
          realHome = fs.realpathSync(loc.home);
        } catch {
          realHome = path.dirname(realDir);
        }
      }
      return new SpoolTarget(held, st.dev, st.ino, realDir, realHome);
    } catch (err) {
      held.close();
      throw wrap(err, loc.dir, 'resolve', `cannot hold ${loc.dir}`);
    }
  }

  /** The path an fs call uses for the payload `name` of this directory (resolved through the descriptor). */
  at(name: string): string {
    return this.held.at(name);
  }

  /**
   * True once payloads go by their logical path (see {@link byPathFor}); they are then checked to be in the
   * held directory ({@link landed}) before they count.
   */
  byPath = false;

  /** The target a payload write is given: the descriptor path, or the logical one in by-path mode. */
  writePath(name: string): string {
    return this.byPath ? this.held.display(name) : this.held.at(name);
  }

  /**
   * Writes the payload `name` into the held directory itself (fs-policy's `atomicWriteAt`: temp, fsync,
   * rename, all relative to the descriptor; no lookup above it, so no per-payload chain check as root).
   * In by-path mode (see {@link byPathFor}) the logical path is written instead. Returns the final mode.
   */
  writeSync(name: string, data: Uint8Array, env: SpoolLocation['env'], overwrite = true): number {
    if (this.byPath) return atomicWriteSync(this.writePath(name), data, { ...this.writeOptions(env), overwrite }).mode;
    return atomicWriteAtSync(this.held, name, data, { kind: SPOOL_KIND, durable: 'file', env, overwrite }).mode;
  }

  /** Asynchronous form of {@link writeSync}. */
  async write(name: string, data: Uint8Array, env: SpoolLocation['env'], overwrite = true): Promise<number> {
    if (this.byPath) return (await atomicWrite(this.writePath(name), data, { ...this.writeOptions(env), overwrite })).mode;
    return (await atomicWriteAt(this.held, name, data, { kind: SPOOL_KIND, durable: 'file', env, overwrite })).mode;
  }

  /** The write options of a payload: the held directory is the write's root, nothing is created above it. */
  writeOptions(env: SpoolLocation['env']): AtomicWriteOptions {
    const base = { kind: SPOOL_KIND, durable: 'file', createParents: false, env } as const;
    return this.byPath ? { ...base, root: path.dirname(this.held.path) } : { ...base, root: this.held.self };
  }

  /**
   * For writes made by path (the blocking drain's worker, which cannot share the held directory object; the
   * job's own writes go through {@link write}, which needs none of this):
   * as root, fs-policy checks the chain of directories above a write's root, and reads a descriptor path as
   * the text it links to: in a group-shared home the spool's parent is group-writable, so a write rooted at
   * the held descriptor is refused (`EUNSAFE_PATH`). Root then writes each payload by its logical path —
   * through fs-policy's resolver from the chain-checked home, its moved-out guard included — and counts it
   * only when the name is found in the held directory afterwards ({@link landed}); the directory fsync still
   * goes to the held descriptor. True when this switched the target to that mode (retry the write).
   */
  byPathFor(err: unknown): boolean {
    if (this.byPath || (err as { code?: unknown } | null)?.code !== 'EUNSAFE_PATH') return false;
    if (typeof process.geteuid !== 'function' || process.geteuid() !== 0) return false;
    this.byPath = true;
    return true;
  }

  /**
   * In by-path mode: whether the payload `name` just written (`bytes` long) is in the held directory — a
   * regular file there, opened without following a link, of that size. Always true otherwise.
   */
  landed(name: string, bytes: number): boolean {
    if (!this.byPath) return true;
    let fd: number;
    try {
      fd = fs.openSync(this.held.at(name), fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    } catch {
      return false;
    }
    try {
      const st = fs.fstatSync(fd);
      return st.isFile() && st.size === bytes;
    } catch {
      return false;
    } finally {
      fs.closeSync(fd);
    }
  }

  /** Where the held directory is now (see {@link Placement}). */
  placement(): Placement {
    if (this.realDir === undefined || this.realHome === undefined) return { where: 'in-place' };
    let now: string;
    try {
      now = fs.readlinkSync(this.held.self);
    } catch {
      return { where: 'in-place' }; // cannot happen while the descriptor is open; the fsync still checks identity
    }
    if (now === this.realDir) return { where: 'in-place' };
    if (now.endsWith(' (deleted)') || !isInside(now, this.realHome)) return { where: 'outside', now };
    return { where: 'moved', now };
  }

  /**
   * fsync of the held directory, through its descriptor (fs-policy's `fsyncHeldDirectorySync`), checked to be
   * the directory that was held (in fallback mode `self` is a path, so this is where a swap would show).
   * Throws a typed FsPolicyError (`ERACE` for another directory).
   */
  fsyncSync(): void {
    try {
      fsyncHeldDirectorySync(this.held, { dev: this.dev, ino: this.ino });
    } catch (err) {
      throw this.error(err, 'fsync-dir', `fsync of directory ${this.held.path}`);
    }
  }

  /** Asynchronous form of {@link fsyncSync} (the fsync runs in the libuv pool). */
  async fsync(): Promise<void> {
    try {
      await fsyncHeldDirectory(this.held, { dev: this.dev, ino: this.ino });
    } catch (err) {
      throw this.error(err, 'fsync-dir', `fsync of directory ${this.held.path}`);
    }
  }

  /** The typed error of a failure at this directory, its descriptor paths rewritten to logical ones. */
  error(err: unknown, step: FsStep, what: string): FsPolicyError {
    return this.logical(err instanceof FsPolicyError ? err : wrap(err, this.held.path, step, what));
  }

  /** `err` (an FsPolicyError) with every descriptor path in it rewritten to the logical path. */
  logical(err: FsPolicyError): FsPolicyError {
    const fix = (t: string): string => logicalText(this.held, t);
    if (!err.message.includes(this.held.self) && !err.path.includes(this.held.self) && !err.hint.includes(this.held.self)) return err;
    // Files a failed write left behind (named by fs-policy versions that list them) keep being named.
    const leftovers = (err as { leftovers?: readonly string[] }).leftovers;
    const init: FsPolicyErrorInit & { leftovers?: string[] } = {
      code: err.code,
      step: err.step,
      path: fix(err.path),
      message: fix(err.detail),
      hint: fix(err.hint),
      committed: err.committed,
      ...(leftovers === undefined ? {} : { leftovers: leftovers.map(fix) }),
      ...(err.errno === undefined ? {} : { errno: err.errno }),
      cause: err,
    };
    return new FsPolicyError(init);
  }

  /** The logical path of a path this target handed out (`at(name)`). */
  display(p: string): string {
    return logicalText(this.held, p);
  }

  close(): void {
    this.held.close();
  }
}

function wrap(err: unknown, p: string, step: FsStep, what: string): FsPolicyError {
  if (err instanceof FsPolicyError) return err;
  const e = err as { code?: unknown; errno?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : 'EUNEXPECTED';
  const errno = typeof e?.errno === 'number' ? e.errno : undefined;
  const detail = err instanceof Error ? err.message.replace(/, \w+ '\/proc\/self\/fd\/[^']*'$/, '') : String(err);
  return new FsPolicyError({ code, step, path: p, message: `${what} failed: ${detail}`, ...(errno === undefined ? {} : { errno }), cause: err });
}

/** The typed error of a payload written by path that is not in the held spool afterwards. */
export function notLandedError(target: SpoolTarget, name: string): FsPolicyError {
  return new FsPolicyError({
    code: 'ERACE',
    step: 'write',
    path: target.held.display(name),
    message: `${target.held.display(name)} was written by its path, but it is not in the spool directory this flush holds (the path was redirected meanwhile); it is not counted as written`,
    hint: 'a member of the service group replaced the spool directory: find who (audit the group), then run the flush again.',
  });
}

/** The typed error of a payload written into a directory that was moved out of the home meanwhile. */
export function movedOutError(target: SpoolTarget, now: string, name: string): FsPolicyError {
  return new FsPolicyError({
    code: 'ERACE',
    step: 'resolve',
    path: target.held.display(name),
    message: `${target.held.path} was moved out of the home (to ${now}) by another process during the flush; the payload was not left there`,
    hint: 'a member of the service group renamed the spool directory: find who (audit the group), then run the flush again.',
  });
}
