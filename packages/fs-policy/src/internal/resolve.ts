/**
 * The descriptor-anchored resolver: every primitive reaches its directory through here.
 *
 * A root (the home, an explicit `root`, or for a target outside both the deepest existing ancestor of the
 * target) is opened once. Every name below it is looked up one component at a time relative to the
 * descriptor of its parent, never by handing the kernel a multi-component path it would follow. Symlinks
 * below the root are resolved here, step by step, and refused when they lead out of it. Whatever a member
 * of the service group swaps between two steps, each step acts on the directory the previous step verified.
 */
import type * as fs from 'node:fs';
import * as path from 'node:path';
import { currentUid, errnoCode, FsPolicyError, type FsStep, toPolicyError } from '../errors.js';
import type { HermesEnvironment } from '../env.js';
import { getLogger } from '../logger.js';
import { anchorMode, atFd, O_PATH, selfFd } from './anchor.js';
import { beneathAvailable } from '../native.js';
import { call, O, type Plan } from './io.js';
import { bestEffort, isInside, op } from './steps.js';
import { materialize, realOf } from './roots.js';

/** A directory held open for the duration of one operation. */
export interface DirRef {
  /** The descriptor, or -1 for a root not opened yet (see {@link materialize}). */
  fd: number;
  /** The logical absolute path, for messages (and for path operations in fallback mode). */
  readonly path: string;
  /** `fstat` of the descriptor, taken when first needed ({@link statOf}). */
  st?: fs.Stats;
  /**
   * Set when this level was reached from the entry below it on a walk's stack in one contained lookup of these
   * names (see {@link walkPlan}): the levels between are not on the stack, and are walked when a link's `..`
   * needs them.
   */
  readonly via?: readonly string[];
}

/** `fstat` of a held directory, taken once (a lazily given root is opened first). */
export function* statOf(dir: DirRef, held: Held): Plan<fs.Stats> {
  const ref = yield* materialize(dir, held);
  ref.st ??= yield* op('resolve', ref.path, 'fstat', ref.fd);
  return ref.st;
}

/** The root of one operation: links below it must stay inside it. */
export interface RootRef extends DirRef {
  /** The root's real path, read from its descriptor the first time an absolute link needs it. */
  real?: string;
}

/** Every descriptor one operation opened; released (closed) once, at the end, whatever happened. */
export class Held {
  private readonly refs: DirRef[] = [];
  private fallbackAdmitted = false;
  /**
   * Records that the operation passed the fallback gate with its full environment (`reachDirPlan`): its roots
   * may then be opened by path in fallback mode. Without it, {@link materialize} and {@link anchorAt} refuse a
   * privileged process in fallback mode (`EUNSAFE_FALLBACK`).
   */
  admitPathFallback(): void {
    this.fallbackAdmitted = true;
  }
  /** Whether {@link Held.admitPathFallback} was called. */
  get pathFallbackAdmitted(): boolean {
    return this.fallbackAdmitted;
  }
  add<T extends DirRef>(ref: T): T {
    this.refs.push(ref);
    return ref;
  }
  /** Closes one descriptor early (a walk done with a subtree). */
  *releaseOne(ref: DirRef): Plan<void> {
    const i = this.refs.indexOf(ref);
    if (i >= 0) this.refs.splice(i, 1);
    if (ref.fd >= 0) yield* bestEffort([], 'release', ref.path, 'close', ref.fd);
  }
  /** Closes every descriptor but `keep` (which the caller goes on holding). */
  *releaseAllBut(keep: DirRef): Plan<void> {
    const others = this.refs.filter((r) => r !== keep && r.fd !== keep.fd);
    this.refs.splice(0, this.refs.length, ...this.refs.filter((r) => r === keep || r.fd === keep.fd));
    for (const ref of others.reverse()) if (ref.fd >= 0) yield* bestEffort([], 'release', ref.path, 'close', ref.fd);
  }
  *release(): Plan<void> {
    const refs = this.refs.splice(0);
    for (const ref of refs.reverse()) if (ref.fd >= 0) yield* bestEffort([], 'release', ref.path, 'close', ref.fd);
  }
}

/** The path through which `name` inside `dir` is reached (descriptor-relative on Linux). */
export function at(dir: DirRef, name: string): string {
  return atFd(dir.fd, dir.path, name);
}

/**
 * How directories are held: `O_PATH` on Linux (a name, not an open file: only search permission on the way
 * is needed, as for any path lookup), read-only elsewhere.
 */
export function dirFlags(): number {
  return (anchorMode() === 'procfd' && O_PATH !== 0 ? O_PATH : O.RDONLY) | O.DIRECTORY;
}

/** True when held directories are `O_PATH` descriptors (fsync and fchmod then go through a re-open or /proc). */
export function heldAsPath(): boolean {
  return anchorMode() === 'procfd' && O_PATH !== 0;
}

/**
 * fsync of a held directory (re-opened read-only through its descriptor when it is held as `O_PATH`). `step`:
 * `fsync-dir` for a commit's directory fsync, or the step whose new entry it makes durable (`mkdir`, `open`).
 */
export function* fsyncDir(dir: DirRef, step: FsStep = 'fsync-dir'): Plan<void> {
  if (!heldAsPath()) {
    yield* op(step, dir.path, 'fsync', dir.fd);
    return;
  }
  const fd = yield* op(step, dir.path, 'open', selfFd(dir.fd, dir.path), O.RDONLY | O.DIRECTORY, 0);
  try {
    yield* op(step, dir.path, 'fsync', fd);
  } finally {
    yield* bestEffort([], 'release', dir.path, 'close', fd);
  }
}
const MAX_LINK_HOPS = 40;
const MAX_RACE_RETRIES = 16;

/** A name is one component: never empty, `.`, `..`, or containing `/` or NUL. */
function isPlainName(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !name.includes('/') && !name.includes('\0');
}

export function checkName(name: string, display: string): void {
  if (!isPlainName(name)) {
    throw new FsPolicyError({
      code: 'EINVALID_PATH',
      step: 'resolve',
      path: display,
      message: `invalid path component ${JSON.stringify(name)} in ${JSON.stringify(display)}: empty, '.', '..', '/' and NUL are refused`,
    });
  }
}

/** A `..` component: between separators (`/` or `\\`) or the ends of the string. */
const DOTDOT_COMPONENT = /(?:^|[\\/])\.\.(?:[\\/]|$)/u;

/**
 * Checks a caller's path before it is normalised: a NUL byte or a `..` component is refused (a path that
 * climbs is ambiguous once links are involved, and nothing in Hermes needs one).
 */
export function checkRawPath(raw: string): void {
  if (raw.includes('\0')) {
    throw new FsPolicyError({ code: 'EINVALID_PATH', step: 'resolve', path: raw.replace(/\0/g, '\\0'), message: `path contains a NUL byte` });
  }
  if (DOTDOT_COMPONENT.test(raw)) {
    throw new FsPolicyError({ code: 'EINVALID_PATH', step: 'resolve', path: raw, message: `path ${JSON.stringify(raw)} contains a '..' component; pass a normalised path` });
  }
}

/** The components of `target` below `root` (both absolute and normalised; target inside root). */
export function componentsBelow(root: string, target: string): string[] {
  const rel = path.relative(root, target);
  return rel === '' ? [] : rel.split(path.sep);
}

type OpenOutcome = { kind: 'dir'; ref: DirRef } | { kind: 'missing' } | { kind: 'link' } | { kind: 'notdir' };

/** Opens `name` inside `parent` as a directory without following a link there. */
function* openDirAt(parent: DirRef, name: string, display: string, held: Held): Plan<OpenOutcome> {
  let fd: number;
  try {
    fd = yield* call('resolve', display, 'open', at(parent, name), dirFlags() | O.NOFOLLOW, 0);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT') return { kind: 'missing' };
    if (code === 'ENOTDIR' || code === 'ELOOP') {
      const lst = yield* lstatAt(parent, name, display);
      if (lst === undefined) return { kind: 'missing' };
      return lst.isSymbolicLink() ? { kind: 'link' } : lst.isDirectory() ? { kind: 'missing' } : { kind: 'notdir' };
    }
    throw toPolicyError(err, 'resolve', display, `open directory ${display}`);
  }
  const ref = held.add<DirRef>({ fd, path: display });
  if (anchorMode() === 'fallback') {
    yield* statOf(ref, held);
    yield* verifyUnchanged(parent, held);
  }
  return { kind: 'dir', ref };
}

/** Fallback mode only: the parent must still be the directory it was when it was opened. */
function* verifyUnchanged(dir: DirRef, held: Held): Plan<void> {
  let st: fs.Stats | undefined;
  try {
    st = yield* call('resolve', dir.path, 'lstat', dir.path);
  } catch {
    st = undefined;
  }
  const known = yield* statOf(dir, held);
  if (st?.dev !== known.dev || st.ino !== known.ino) {
    throw new FsPolicyError({
      code: 'ERACE',
      step: 'resolve',
      path: dir.path,
      message: `${dir.path} was replaced while it was being used`,
    });
  }
}

/** lstat of `name` inside `dir`; undefined when it does not exist. */
export function* lstatAt(dir: DirRef, name: string, display: string): Plan<fs.Stats | undefined> {
  try {
    return yield* call('resolve', display, 'lstat', at(dir, name));
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT') return undefined;
    throw toPolicyError(err, 'resolve', display, `lstat ${display}`);
  }
}

/** What a walk creates, and how. */
export interface CreateSpec {
  /** Exact mode for created levels (unmanaged), or null on a managed install (0770 requested; the setgid parent and umask decide). */
  readonly mode: number | null;
  /** Apply HERMES_UID/HERMES_GID to created levels. */
  readonly ownership: boolean;
  readonly env: HermesEnvironment;
  readonly warnings: string[];
  /** Levels this walk created, outermost first (appended to). */
  readonly created: string[];
}

/** The mode requested from mkdir(2) on a managed install: at most 2770 once the setgid parent adds its bit. */
const MANAGED_MKDIR_MODE = 0o770;

interface Step {
  readonly name: string;
  /** Set when the component came from a link's text: a missing one means the link dangles. */
  readonly link?: { readonly display: string; readonly text: string };
}

/** What a walk may create (nothing when `create` is absent). Links must always resolve inside the root. */
export interface WalkSpec {
  readonly create?: CreateSpec;
}

/**
 * Walks `names` from the directory on top of `stack` (the bottom of the stack is `root`), one component at a
 * time, creating missing levels when `spec.create` says so. Returns the new stack (the last entry is the
 * directory reached). Every descriptor opened is registered in `held`. `fromLink`: the names are a link's text
 * (`''` and `.` are skipped, `..` steps back down the stack and never below the root, a missing level is a
 * dangling link).
 */
export function* walkPlan(
  root: RootRef,
  stack: readonly DirRef[],
  names: readonly string[],
  spec: WalkSpec,
  held: Held,
  fromLink?: { readonly display: string; readonly text: string },
): Plan<DirRef[]> {
  const dirs = [...stack];
  const direct = yield* openBeneathPlan(dirs[dirs.length - 1] ?? root, names, held);
  if (direct !== undefined) {
    dirs.push(direct);
    return dirs;
  }
  return yield* walkEachPlan(root, dirs, names.map((name) => (fromLink === undefined ? { name } : { name, link: fromLink })), spec, held);
}

/**
 * Several levels that exist and hold no link, in one lookup: `openat2` beneath `base` with no symlink followed
 * (native mode, where the kernel has it). What it reaches is what the walk one component at a time would reach
 * (each level opened without following a link), and the kernel keeps the lookup inside `base` whatever is
 * renamed meanwhile. Undefined — walk one component at a time — for fewer than two names, without `openat2`, and
 * on any failure: a missing level (the walk creates it), a link (the walk follows it, inside the root, or refuses
 * it with its own verdict), a file where a directory should be.
 */
function* openBeneathPlan(start: DirRef, names: readonly string[], held: Held): Plan<DirRef | undefined> {
  if (names.length < 2 || !beneathAvailable()) return undefined;
  // Plain names only: a link's text can hold '', '.' and '..', which the walk gives their meaning.
  if (!names.every(isPlainName)) return undefined;
  const base = yield* materialize(start, held);
  const display = path.join(base.path, ...names);
  let fd: number;
  try {
    fd = yield* call('resolve', display, 'openBeneath', base.fd, names.join('/'), dirFlags() | O.NOFOLLOW);
  } catch (err) {
    if (errnoCode(err) !== undefined) return undefined; // the walk below decides, and reports
    throw err;
  }
  return held.add<DirRef>({ fd, path: display, via: [...names] });
}

/** The walk of {@link walkPlan}, one component at a time. */
function* walkEachPlan(root: RootRef, dirs: DirRef[], steps: readonly Step[], spec: WalkSpec, held: Held): Plan<DirRef[]> {
  const queue: Step[] = [...steps];
  let hops = 0;
  let races = 0;
  for (;;) {
    const item = queue.shift();
    if (item === undefined) break;
    if (item.link !== undefined && (item.name === '' || item.name === '.')) continue;
    if (item.link !== undefined && item.name === '..') {
      if (dirs.length <= 1) throw escapeError(item.link.display, item.link.text, root);
      const top = dirs[dirs.length - 1];
      if (top?.via !== undefined) dirs.splice(dirs.length - 1, 1, ...(yield* expandPlan(root, dirs, top, held)));
      dirs.pop();
      continue;
    }
    const cur = yield* materialize(dirs[dirs.length - 1] ?? root, held);
    const display = path.join(cur.path, item.name);
    checkName(item.name, display);
    const r = yield* openDirAt(cur, item.name, display, held);
    if (r.kind === 'dir') {
      dirs.push(r.ref);
      continue;
    }
    if (r.kind === 'notdir') {
      throw new FsPolicyError({ code: 'ENOTDIR', step: 'mkdir', path: display, message: `${display} exists and is not a directory` });
    }
    if (r.kind === 'missing') {
      if (item.link !== undefined) throw danglingError(item.link.display, item.link.text);
      if (spec.create === undefined) {
        throw new FsPolicyError({ code: 'ENOENT', step: 'resolve', path: display, message: `${display} does not exist` });
      }
      const made = yield* mkdirAt(cur, item.name, display, spec.create, held);
      if (made === undefined) {
        // Lost a race (another process created, removed or replaced the entry): look again.
        if (++races > MAX_RACE_RETRIES) throw raceError(display);
        queue.unshift(item);
        continue;
      }
      dirs.push(made);
      continue;
    }
    // A symbolic link.
    if (++hops > MAX_LINK_HOPS) {
      throw new FsPolicyError({ code: 'ELOOP', step: 'resolve', path: display, message: `too many levels of symbolic links at ${display}` });
    }
    const text = yield* readlinkAt(cur, item.name, display);
    if (text === undefined) {
      // Replaced or removed between the open that met a link and the readlink: look again.
      if (++races > MAX_RACE_RETRIES) throw raceError(display);
      queue.unshift(item);
      continue;
    }
    root.real ??= yield* realOf(root);
    const steps = yield* linkSteps(root, display, text);
    if (path.isAbsolute(text)) dirs.splice(1);
    queue.unshift(...steps);
  }
  return dirs;
}

/**
 * The levels a contained lookup skipped (`top.via`), walked one component at a time from the entry below `top`
 * on `dirs`: the same directory must be reached again (else ERACE: something was renamed meanwhile), and the
 * stack then holds every level, as a walk one component at a time would have left it.
 */
function* expandPlan(root: RootRef, dirs: readonly DirRef[], top: DirRef, held: Held): Plan<DirRef[]> {
  const below = dirs.slice(0, -1);
  const walked = yield* walkEachPlan(root, [...below], (top.via ?? []).map((name) => ({ name })), {}, held);
  const again = walked[walked.length - 1];
  const want = yield* statOf(top, held);
  const got = again === undefined ? undefined : yield* statOf(again, held);
  if (got?.dev !== want.dev || got.ino !== want.ino) throw raceError(top.path);
  return walked.slice(below.length);
}

/** The components a link's text contributes, checked for containment when absolute. */
function* linkSteps(root: RootRef, display: string, text: string): Plan<Step[]> {
  let rel: string;
  if (path.isAbsolute(text)) {
    const norm = path.normalize(text);
    const base = [root.real ?? root.path, root.path].find((r) => isInside(norm, r));
    if (base === undefined) {
      // Leaves the root. Say whether it dangles (the better diagnostic), never follow it.
      if (yield* danglesOutside(text)) throw danglingError(display, text);
      throw escapeError(display, text, root);
    }
    rel = path.relative(base, norm);
  } else {
    rel = text;
  }
  const link = { display, text };
  return rel.split('/').map((name) => ({ name, link }));
}

/** Whether an absolute link target outside the root is missing (stat only: nothing is opened or created). */
function* danglesOutside(text: string): Plan<boolean> {
  try {
    yield* call('resolve', text, 'stat', text);
    return false;
  } catch (err) {
    return errnoCode(err) === 'ENOENT';
  }
}

/** The text of the link `name`; undefined when it is no longer a link (replaced or removed meanwhile). */
function* readlinkAt(dir: DirRef, name: string, display: string): Plan<string | undefined> {
  try {
    return yield* call('resolve', display, 'readlink', at(dir, name));
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'EINVAL' || code === 'ENOENT') return undefined;
    throw toPolicyError(err, 'resolve', display, `readlink ${display}`);
  }
}

/** Creates `name` inside `parent`; undefined when another process won the race for that name. */
function* mkdirAt(parent: DirRef, name: string, display: string, spec: CreateSpec, held: Held): Plan<DirRef | undefined> {
  try {
    yield* call('mkdir', display, 'mkdir', at(parent, name), spec.mode ?? MANAGED_MKDIR_MODE);
  } catch (err) {
    if (errnoCode(err) === 'EEXIST') return undefined;
    throw toPolicyError(err, 'mkdir', display, `mkdir ${display}`);
  }
  let fd: number;
  try {
    fd = yield* call('mkdir', display, 'open', at(parent, name), O.RDONLY | O.DIRECTORY | O.NOFOLLOW, 0);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return undefined; // replaced right after mkdir
    throw toPolicyError(err, 'mkdir', display, `open ${display}`);
  }
  const st = yield* op('mkdir', display, 'fstat', fd);
  const ref = held.add<DirRef>({ fd, path: display, st });
  if (st.uid !== currentUid()) {
    // Someone replaced the directory we made with their own between mkdir and open: use it as an existing
    // level (inside the root), never chmod or chown it.
    return ref;
  }
  spec.created.push(display);
  // The new entry is durable only once its parent directory is: without this, a power loss after a write
  // that fsynced a file inside the new directory can still lose the directory (and the file with it).
  yield* fsyncDir(parent, 'mkdir');
  if (spec.mode === null) return ref;
  // mkdir(2) masks with the umask and never sets setgid: fchmod makes the mode exact.
  yield* op('fchmod', display, 'fchmod', fd, spec.mode);
  const env = spec.env;
  if (spec.ownership && (env.uid !== undefined || env.gid !== undefined)) {
    const ok = yield* bestEffort(spec.warnings, 'fchown', display, 'fchown', fd, env.uid ?? -1, env.gid ?? -1);
    if (!ok) {
      getLogger().warn('HERMES_UID/HERMES_GID not applied (needs root); directory left owned by the process', {
        path: display,
        uid: currentUid(),
      });
    }
  }
  ref.st = yield* op('mkdir', display, 'fstat', fd);
  return ref;
}

export function danglingError(link: string, target: string): FsPolicyError {
  return new FsPolicyError({
    code: 'EDANGLING_LINK',
    step: 'resolve',
    path: link,
    message: `Directory link is unavailable: ${link} -> ${target} (its target does not exist or is not mounted); nothing was created`,
  });
}

function escapeError(link: string, text: string, root: RootRef): FsPolicyError {
  return new FsPolicyError({
    code: 'ESYMLINK_ESCAPE',
    step: 'resolve',
    path: link,
    message: `${link} -> ${text} leads outside ${root.path}; refusing to create, read or write through it`,
  });
}

export function raceError(p: string): FsPolicyError {
  return new FsPolicyError({
    code: 'ERACE',
    step: 'resolve',
    path: p,
    message: `${p} kept being replaced while it was being resolved; gave up after ${String(MAX_RACE_RETRIES)} tries`,
  });
}

// The roots (opened by path) live in roots.ts; re-exported so that every primitive keeps one import.
export { anchorAt, type AnchorResult, asRoot, lazyRoot, materialize, realOf, tryOpenBelow } from './roots.js';
