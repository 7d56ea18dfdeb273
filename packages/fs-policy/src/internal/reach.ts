/**
 * Reaching a directory for a primitive: choose the root, check the path to it when privileged, open it,
 * create what is missing, and walk below it through descriptors.
 */
import type * as fs from 'node:fs';
import * as path from 'node:path';
import { currentUid, errnoCode, FsPolicyError, toPolicyError } from '../errors.js';
import type { HermesEnvironment } from '../env.js';
import { dirModeFor, getKind, type KindRef } from '../registry.js';
import { call, type Plan } from './io.js';
import { anchorMode, selfFd } from './anchor.js';
import { anchorAt, asRoot, raceError, checkRawPath, componentsBelow, type CreateSpec, type DirRef, type Held, lazyRoot, materialize, realOf, type RootRef, statOf, tryOpenBelow, walkPlan } from './resolve.js';
import { isInside } from './steps.js';

export interface Reached {
  /** The root links must stay inside (the home, the explicit root, or the anchor of an outside target). */
  readonly root: RootRef;
  /** True when the target lies inside the home or the explicit root (false: an outside target's anchor). */
  readonly contained: boolean;
  /** Every directory from the root down to the one reached (bottom first). */
  readonly stack: readonly DirRef[];
  /** The directory reached. */
  readonly dir: DirRef;
  /** Levels created by this call, outermost first. */
  readonly created: readonly string[];
  readonly warnings: readonly string[];
}

export interface ReachOptions {
  readonly env: HermesEnvironment;
  /** The containment root for targets inside it (default: the home). */
  readonly root?: string | undefined;
  /** Create missing levels with this kind's directory mode; undefined: everything must exist. */
  readonly createFor?: KindRef | undefined;
}

/**
 * Chains already found safe, by home path and HERMES_UID, with the identity of the directory then opened.
 * Only root and the home's owner can change a directory on a safe chain, so the verdict holds while that
 * identity does; a different directory at the path is checked again.
 */
const verifiedChains = new Map<string, { dev: number; ino: number }>();

function rememberChain(key: string, st: fs.Stats): void {
  if (verifiedChains.size >= 256) verifiedChains.clear();
  verifiedChains.set(key, { dev: st.dev, ino: st.ino });
}

function sameInode(a: { dev: number; ino: number } | undefined, b: fs.Stats): boolean {
  return a?.dev === b.dev && a.ino === b.ino;
}

/** True when this process may act for others (root): the path to the home must then be one others cannot redirect. */
export function isPrivileged(): boolean {
  return currentUid() === 0;
}

/** The boundary links must stay inside for `target`, or undefined when it lies outside the home and the root. */
export function boundaryFor(target: string, env: HermesEnvironment, root: string | undefined): string | undefined {
  return scopeFor(target, env, root).containment;
}

interface Scope {
  /**
   * The directory reached by path — the part above it is the operator's (checked as a chain when privileged):
   * the outermost of the home and the explicit root that contain the target, else the target itself.
   */
  readonly trustTop: string;
  /** Links must stay inside this (the innermost of the two), or undefined for a target outside both. */
  readonly containment: string | undefined;
}

function scopeFor(target: string, env: HermesEnvironment, root: string | undefined): Scope {
  const around = [env.home, ...(root === undefined ? [] : [path.resolve(root)])].filter((r) => isInside(target, r));
  if (around.length === 0) return { trustTop: target, containment: undefined };
  const sorted = [...around].sort((a, b) => a.length - b.length);
  return { trustTop: sorted[0] ?? target, containment: sorted[sorted.length - 1] };
}

/**
 * Reaches the directory `dir` (absolute or relative to the cwd). The home (or the explicit root, or for a
 * target outside both, the target's deepest existing ancestor) is opened by path — and, when privileged, only
 * after the chain check — and everything below it is walked through descriptors. Descriptors go to `held`.
 */
export function* reachDirPlan(dir: string, options: ReachOptions, held: Held): Plan<Reached> {
  checkRawPath(dir);
  const env = options.env;
  const target = path.resolve(dir);
  const { trustTop, containment } = scopeFor(target, env, options.root);
  if (containment !== undefined && trustTop === path.parse(trustTop).root) {
    throw new FsPolicyError({
      code: 'EDANGEROUS_HOME',
      step: 'resolve',
      path: trustTop,
      message: `refusing to use ${trustTop} as ${trustTop === env.home ? 'the Hermes home' : 'a root'}: it is the filesystem root`,
    });
  }
  const warnings: string[] = [];
  const created: string[] = [];
  const walkSpec = createSpecFor(options, env, warnings, created);
  const toContainment = containment === undefined ? [] : componentsBelow(trustTop, containment);
  const below = containment === undefined ? [] : componentsBelow(containment, target);
  const privileged = isPrivileged();

  // Stage 1: the trusted top, opened by path.
  let top: RootRef;
  let stack: DirRef[];
  const firstBelow = [...toContainment, ...below][0];
  if (!privileged && containment !== undefined && firstBelow !== undefined && anchorMode() === 'procfd') {
    // The common case, one open shorter: the first level below the top opened as `<top>/<first>` without
    // following a link there — the same lookup as opening the top and then the level relative to it. Any
    // failure takes the long way below, which reports it properly.
    const first = yield* tryOpenBelow(trustTop, firstBelow, held);
    if (first !== undefined) {
      top = lazyRoot(trustTop);
      stack = [top, first];
      return yield* finish(top, stack, 1);
    }
  }
  const chainKey = `${trustTop}\0${String(env.uid)}`;
  const cached = privileged ? verifiedChains.get(chainKey) : undefined;
  const chain = privileged && cached === undefined ? yield* chainCheckPlan(trustTop, env) : undefined;
  const { anchor, missing } = yield* anchorAt(trustTop, held);
  if (privileged) {
    const opened = yield* statOf(anchor, held);
    let want = chain ?? cached;
    if (chain === undefined && !sameInode(want, opened)) want = yield* chainCheckPlan(trustTop, env); // moved since: check again
    if (!sameInode(want, opened)) {
      throw new FsPolicyError({ code: 'ERACE', step: 'resolve', path: anchor.path, message: `${anchor.path} changed between the ownership check and its use` });
    }
    rememberChain(chainKey, opened);
  }
  top = anchor;
  stack = [anchor];
  if (missing.length > 0) {
    if (walkSpec === undefined) {
      throw new FsPolicyError({ code: 'ENOENT', step: 'resolve', path: trustTop, message: `${trustTop} does not exist` });
    }
    if (trustTop === env.home) refuseToInventHome(env.home, env);
    // Levels that do not exist yet down to the root: created here through descriptors; a link that appears
    // among them must stay inside the existing directory they are created in, and a dangling one is refused.
    stack = yield* walkPlan(anchor, stack, missing, walkSpec, held);
    top = asRoot(stack[stack.length - 1] ?? anchor);
    stack = [top];
  }
  return yield* finish(top, stack, 0);

  /** Stages 2 and 3: down to the containment root (links inside the top), then to the target (links inside it). */
  function* finish(topRef: RootRef, start: DirRef[], done: number): Plan<Reached> {
    const spec = walkSpec ?? {};
    let walked = yield* walkPlan(topRef, start, toContainment.slice(done), spec, held);
    let root = topRef;
    if (toContainment.length > 0) {
      root = asRoot(walked[walked.length - 1] ?? topRef);
      walked = [root];
    }
    walked = yield* walkPlan(root, walked, below.slice(Math.max(0, done - toContainment.length)), spec, held);
    return { root, contained: containment !== undefined, stack: walked, dir: walked[walked.length - 1] ?? root, created, warnings };
  }
}

/**
 * Whether others may rename entries in this home (a managed 2770 home, or a HERMES_HOME_MODE with group/other
 * write): only then can a directory already reached be moved out of it by someone else.
 */
function sharedHome(env: HermesEnvironment): boolean {
  return env.managed.managed || (env.homeMode.mode & 0o022) !== 0;
}

/**
 * Where a reached directory is now, when someone moved it out of the root after it was reached (a member of the
 * service group can rename a 2770 directory into a place of their own); undefined while it is still inside.
 * Checked at commit points: a descriptor keeps naming the directory wherever it goes, so the walk alone
 * cannot promise that what is created through it stays in the home.
 */
export function* movedOut(reached: Reached, dir: DirRef, env: HermesEnvironment, held: Held): Plan<string | undefined> {
  const watch = yield* watchedRoot(reached, env, held);
  if (watch === undefined) return undefined;
  const now = yield* call('resolve', dir.path, 'readlink', selfFd(dir.fd, dir.path));
  return isInside(now, watch) ? undefined : now;
}

/** The root's real path when moves out of it must be watched for (see {@link movedOut}), else undefined. */
export function* watchedRoot(reached: Reached, env: HermesEnvironment, held: Held): Plan<string | undefined> {
  if (!reached.contained || anchorMode() !== 'procfd' || !sharedHome(env)) return undefined;
  const root = reached.root;
  root.real ??= yield* realOf(yield* materialize(root, held));
  return root.real;
}

/** The typed error for a directory moved out of the root during an operation. */
export function movedOutError(dir: DirRef, now: string, what: string): FsPolicyError {
  return new FsPolicyError({
    code: 'ERACE',
    step: 'resolve',
    path: dir.path,
    message: `${dir.path} was moved out of the home (to ${now}) by another process during the ${what}; ${what === 'append' ? 'the record may have reached it there' : 'nothing was left there'}`,
  });
}

/** The walk spec for levels below the root (undefined kind: nothing is created). */
function createSpecFor(options: ReachOptions, env: HermesEnvironment, warnings: string[], created: string[]): { create: CreateSpec } | undefined {
  if (options.createFor === undefined) return undefined;
  const kind = getKind(options.createFor);
  return { create: { mode: dirModeFor(kind, env), ownership: kind.ownership, env, warnings, created } };
}

/**
 * The home itself is never invented where its absence means something: a managed home is created by the
 * package manager, and a missing named profile was deleted (or never created) on purpose.
 */
export function refuseToInventHome(home: string, env: HermesEnvironment): void {
  if (env.managed.managed) {
    throw new FsPolicyError({
      code: 'EMANAGED_MISSING',
      step: 'mkdir',
      path: home,
      message: `Required directory does not exist: ${home} (managed install: the package manager creates the home)`,
    });
  }
  if (path.basename(path.dirname(home)) === 'profiles') {
    throw new FsPolicyError({
      code: 'EPROFILE_MISSING',
      step: 'mkdir',
      path: home,
      message: `Named profile home does not exist: ${home}; refusing to recreate it`,
    });
  }
}

interface ChainEntry {
  readonly path: string;
  readonly st: fs.Stats;
  /** The directory the entry sits in (its st), for links. */
  readonly parent: fs.Stats | undefined;
}

/**
 * The path check made before root acts on a home (OpenSSH's StrictModes, systemd's safe transitions): from
 * `/` down to `top`, every directory passed through — links resolved here, one step at a time — must be
 * owned by root or by the home's owner and must not be writable by anyone else (a sticky directory is
 * accepted: others may add entries there but cannot replace ours). A link must sit in such a directory, and
 * in a sticky one it must itself belong to root or the home's owner. With HERMES_UID set, the home must belong
 * to root or to that uid. Returns the `lstat` of the deepest existing directory (compared with what is then
 * opened), or throws EUNSAFE_PATH naming the directory that others could change.
 */
export function* chainCheckPlan(top: string, env: { readonly uid?: number | undefined }): Plan<fs.Stats> {
  const dirs: ChainEntry[] = [];
  const links: ChainEntry[] = [];
  let cur = path.parse(top).root;
  let curSt = yield* lstatPath(cur, top);
  if (curSt === undefined) throw new FsPolicyError({ code: 'ENOENT', step: 'resolve', path: cur, message: `${cur} does not exist` });
  dirs.push({ path: cur, st: curSt, parent: undefined });
  const queue = top.split('/').filter((c) => c !== '');
  let hops = 0;
  let complete = true;
  while (queue.length > 0) {
    const name = queue.shift() ?? '';
    if (name === '.' || name === '') continue;
    if (name === '..') {
      cur = path.dirname(cur);
      const back = [...dirs].reverse().find((d) => d.path === cur);
      curSt = back?.st ?? curSt;
      continue;
    }
    const p = path.join(cur, name);
    const st = yield* lstatPath(p, top);
    if (st === undefined) {
      complete = false;
      break;
    }
    if (st.isSymbolicLink()) {
      if (++hops > 40) throw new FsPolicyError({ code: 'ELOOP', step: 'resolve', path: p, message: `too many levels of symbolic links at ${p}` });
      links.push({ path: p, st, parent: curSt });
      let text: string;
      try {
        text = yield* call('resolve', p, 'readlink', p);
      } catch (err) {
        const code = errnoCode(err);
        if (code === 'EINVAL' || code === 'ENOENT') throw raceError(p); // replaced between lstat and readlink
        throw toPolicyError(err, 'resolve', p, `readlink ${p}`);
      }
      if (path.isAbsolute(text)) cur = path.parse(text).root;
      queue.unshift(...text.split('/'));
      continue;
    }
    if (!st.isDirectory()) {
      throw new FsPolicyError({ code: 'ENOTDIR', step: 'resolve', path: p, message: `${p} is not a directory` });
    }
    dirs.push({ path: p, st, parent: curSt });
    cur = p;
    curSt = st;
  }
  // The deepest existing directory is what gets opened and walked below through descriptors: it may be
  // group-shared itself (a 2770 home), but its owner must be trusted and every directory above it safe.
  const last = dirs[dirs.length - 1];
  const home = complete ? last : undefined;
  if (home !== undefined && env.uid !== undefined && home.st.uid !== 0 && home.st.uid !== env.uid) {
    throw new FsPolicyError({
      code: 'EFOREIGN_OWNER',
      step: 'resolve',
      path: top,
      message: `${top} is owned by uid ${String(home.st.uid)}, neither root nor HERMES_UID=${String(env.uid)}; refusing to act on it as root`,
    });
  }
  const owners = new Set<number>([0]);
  if (env.uid !== undefined) owners.add(env.uid);
  if (home !== undefined) owners.add(home.st.uid);
  const trusted = (uid: number): boolean => owners.has(uid);
  for (const d of dirs) {
    if (!trusted(d.st.uid)) throw unsafe(d.path, top, `is owned by uid ${String(d.st.uid)}`);
    if (d === last) continue; // what is below it is the resolver's job
    const sticky = (d.st.mode & 0o1000) !== 0;
    if (!sticky && (d.st.mode & 0o022) !== 0) {
      throw unsafe(d.path, top, `is writable by ${(d.st.mode & 0o020) !== 0 ? 'its group' : 'others'} (mode ${(d.st.mode & 0o7777).toString(8).padStart(4, '0')})`);
    }
  }
  for (const l of links) {
    const parentSticky = l.parent !== undefined && (l.parent.mode & 0o1000) !== 0;
    if (parentSticky && !trusted(l.st.uid)) throw unsafe(l.path, top, `is a link owned by uid ${String(l.st.uid)} in a sticky directory`);
  }
  if (last === undefined) throw new FsPolicyError({ code: 'ENOENT', step: 'resolve', path: top, message: `${top} does not exist` });
  return last.st;
}

function unsafe(p: string, top: string, why: string): FsPolicyError {
  return new FsPolicyError({
    code: 'EUNSAFE_PATH',
    step: 'resolve',
    path: p,
    message: `refusing to act on ${top} as root: ${p} ${why}, so another uid could redirect the path`,
  });
}

function* lstatPath(p: string, top: string): Plan<fs.Stats | undefined> {
  try {
    return yield* call('resolve', p, 'lstat', p);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw toPolicyError(err, 'resolve', p, `lstat ${p} (on the way to ${top})`);
  }
}
